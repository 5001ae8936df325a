import XCTest

@testable import ConcordModel

/// The `lww` and `delete-wins` policies, one case at a time (the stories first).
final class MergeRecordTests: XCTestCase {
    func scene(_ data: [String: JSONValue], by member: String, on device: String, at time: String, counter: Int = 0) -> [UInt8] {
        MergeFixture.live(data, by: member, on: device, at: time, counter: counter, kind: "scenes", id: "s1")
    }

    // MARK: Stories

    /// Base label "biscuit"; A renames it "cookie" at 10:00, B "cracker" at 10:01 → "cracker", and the
    /// conflict names B the winner and keeps A's record.
    func testStoryLWWRename() throws {
        let base = MergeFixture.live(["label": "biscuit"], by: "ada", on: "tablet", at: "09:00:00.000")
        let a = MergeFixture.live(["label": "cookie"], by: "ada", on: "tablet", at: "10:00:00.000")
        let b = MergeFixture.live(["label": "cracker"], by: "bob", on: "phone", at: "10:01:00.000")
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.lww, base: base, ours: a, theirs: b)
        XCTAssertEqual(
            text(bytes),
            """
            {
              "data": {
                "label": "cracker"
              },
              "device": "phone",
              "id": "biscuit",
              "kind": "vocabulary",
              "updatedAt": "2026-01-01T10:01:00.000Z-0000",
              "updatedBy": "bob"
            }

            """)
        XCTAssertEqual(conflicts.count, 1)
        let conflict = try XCTUnwrap(conflicts.first)
        XCTAssertEqual(conflict.winner, MergeSide(member: "bob", device: "phone", stamp: MergeFixture.hlc("10:01:00.000"), change: .edit))
        XCTAssertEqual(conflict.loser, MergeSide(member: "ada", device: "tablet", stamp: MergeFixture.hlc("10:00:00.000"), change: .edit))
        XCTAssertEqual(conflict.losingContent, a)
        XCTAssertEqual(
            conflict.trailerValue,
            "vocabulary/biscuit lww winner=bob@phone loser=ada@tablet winner-change=edit loser-change=edit "
                + "winner-at=2026-01-01T10:01:00.000Z-0000 loser-at=2026-01-01T10:00:00.000Z-0000")
    }

    /// Jane edits a scene at 10:02, Bob deletes it at 10:01 → Bob's tombstone; Jane's edit is the loser.
    func testStoryDeleteWinsBeatsLaterEdit() throws {
        let base = scene(["title": "Opening", "body": "INT. HOUSE"], by: "jane", on: "mac", at: "09:00:00.000")
        let jane = scene(["title": "Opening", "body": "EXT. GARDEN"], by: "jane", on: "mac", at: "10:02:00.000")
        let bob = MergeFixture.tombstone(by: "bob", on: "ipad", at: "10:01:00.000", kind: "scenes", id: "s1")
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.deleteWins, base: base, ours: jane, theirs: bob)
        XCTAssertEqual(bytes, bob)
        XCTAssertEqual(
            conflicts,
            [ResolvedConflict(
                kind: "scenes", id: "s1", policy: .deleteWins,
                winner: MergeSide(member: "bob", device: "ipad", stamp: MergeFixture.hlc("10:01:00.000"), change: .delete),
                loser: MergeSide(member: "jane", device: "mac", stamp: MergeFixture.hlc("10:02:00.000"), change: .edit),
                losingContent: jane)])
        XCTAssertTrue(conflicts[0].trailerValue.hasPrefix("scenes/s1 delete-wins winner=bob@ipad loser=jane@mac winner-change=delete"))
    }

    func testConcurrentEditsToDifferentFieldsAreBothKept() throws {
        let base = scene(["title": "Opening", "body": "INT. HOUSE"], by: "jane", on: "mac", at: "09:00:00.000")
        let jane = MergeFixture.live(["title": "Prologue", "body": "INT. HOUSE"], by: "jane", on: "mac", at: "10:02:00.000", over: base)
        let bob = MergeFixture.live(["title": "Opening", "body": "EXT. GARDEN"], by: "bob", on: "ipad", at: "10:01:00.000", over: base)
        for policy in [MergePolicy.deleteWins, .lww] {
            let (bytes, conflicts) = try MergeFixture.mergeBothWays(policy, base: base, ours: jane, theirs: bob)
            let record = try Record.decode(bytes)
            XCTAssertEqual(record.data, ["title": "Prologue", "body": "EXT. GARDEN"])
            XCTAssertEqual(record.member, "jane")
            XCTAssertEqual(record.device, "mac")
            XCTAssertEqual(record.stamp, MergeFixture.hlc("10:02:00.000"))
            XCTAssertEqual(conflicts, [])
            XCTAssertEqual(bytes, record.encoded(), "output is canonical")
        }
    }

    func testSameFieldTakesTheLaterStampAndOneConflictPerRecord() throws {
        let base = scene(["title": "A", "body": "B", "note": "n"], by: "jane", on: "mac", at: "09:00:00.000")
        let jane = scene(["title": "J", "body": "JB", "note": "n"], by: "jane", on: "mac", at: "10:00:00.000")
        let bob = scene(["title": "Bo", "body": "BB", "note": "changed"], by: "bob", on: "ipad", at: "10:00:00.000", counter: 1)
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.deleteWins, base: base, ours: jane, theirs: bob)
        XCTAssertEqual(try Record.decode(bytes).data, ["title": "Bo", "body": "BB", "note": "changed"])
        XCTAssertEqual(conflicts.count, 1, "several colliding fields still make one conflict")
        XCTAssertEqual(conflicts.first?.winner.member, "bob")
        XCTAssertEqual(conflicts.first?.losingContent, jane)
    }

    // MARK: Values

    func testUnicodeValuesAreComparedByBytes() throws {
        let base = MergeFixture.live(["label": "cafe"], by: "ada", on: "tablet", at: "09:00:00.000")
        let composed = MergeFixture.live(["label": "caf\u{E9} \u{1F44B} 日本語"], by: "ada", on: "tablet", at: "10:00:00.000")
        let decomposed = MergeFixture.live(["label": "cafe\u{301} \u{1F44B} 日本語"], by: "bob", on: "phone", at: "10:00:00.000")
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.lww, base: base, ours: composed, theirs: decomposed)
        // Canonically equivalent, but different bytes: a real collision, won by bob (same stamp, "bob" > "ada").
        XCTAssertEqual(Array(try XCTUnwrap(Record.decode(bytes).data?["label"]?.stringValue).utf8), Array("cafe\u{301} \u{1F44B} 日本語".utf8))
        XCTAssertEqual(conflicts.map(\.winner.member), ["bob"])
        XCTAssertTrue(text(bytes).contains("\"label\": \"cafe\u{301} \u{1F44B} 日本語\""), "raw UTF-8, not escaped")
    }

    /// Keys spelled NFC on one side and NFD on the other are one field: the merge writes the same
    /// bytes whichever side is ours, with the spelling whose UTF-8 bytes sort last (docs/merging.md),
    /// whether one side or both changed the field; a nested object is one value, its winner's bytes.
    func testCanonicallyEquivalentKeysMergeToTheSameBytesBothWays() throws {
        let (nfc, nfd) = ("caf\u{E9}", "cafe\u{301}")
        let last = Array(nfc.utf8).lexicographicallyPrecedes(Array(nfd.utf8)) ? nfd : nfc
        let base = MergeFixture.live(["label": "x", nfc: "1"], by: "ada", on: "tablet", at: "09:00:00.000")
        let cases: [(ours: [String: JSONValue], theirs: [String: JSONValue])] = [
            ([nfc: "2", "label": "x"], [nfd: "3", "label": "x"]),            // both changed it
            ([nfc: "1", "label": "y"], [nfd: "1", "label": "x"]),            // one respelled it, the other changed another field
            ([nfc: "1", "label": "x", "n": [nfc: 1]], [nfc: "1", "label": "x", "n": [nfd: 1]]),   // nested, added on both sides
            ([nfc: "1", "label": "x", "n": [nfc: 1]], [nfc: "1", "label": "z", "n": [nfd: 2]]),
        ]
        // And with the other spelling in the base, or no base at all (added on both sides).
        let baseNFD = MergeFixture.live(["label": "x", nfd: "1"], by: "ada", on: "tablet", at: "09:00:00.000")
        let more: [(base: [UInt8]?, ours: [String: JSONValue], theirs: [String: JSONValue])] = [
            (baseNFD, [nfd: "2", "label": "x"], [nfc: "3", "label": "x"]),
            (baseNFD, [nfd: "1", "label": "y"], [nfc: "1", "label": "x"]),
            (nil, [nfd: "2"], [nfc: "3"]),
        ]
        for (index, sides) in (cases.map { (Optional(base), $0.ours, $0.theirs) } + more).enumerated() {
            for policy in [MergePolicy.lww, .deleteWins] {
                let base = sides.0
                let ours = MergeFixture.live(sides.1, by: "ada", on: "tablet", at: "10:00:00.000", over: base)
                let theirs = MergeFixture.live(sides.2, by: "bob", on: "phone", at: "10:00:01.000", over: base)
                let (bytes, _) = try MergeFixture.mergeBothWays(policy, base: base, ours: ours, theirs: theirs)
                // By bytes: Swift's `String.contains` would find either spelling.
                func holds(_ key: String) -> Bool {
                    let needle = Array("\"\(key)\":".utf8)
                    return bytes.indices.contains { bytes[$0...].starts(with: needle) }
                }
                // A nested object is one value: the winner's, as its writer spelled it (the same both ways);
                // a write over a base keeps the base's spelling (cases 4, 5: both sides spell it NFD).
                guard [0, 1, 6].contains(index) else { continue }
                XCTAssertTrue(holds(last), "case \(index): \(text(bytes))")
                do { XCTAssertFalse(holds(last == nfc ? nfd : nfc), "case \(index): one spelling only: \(text(bytes))") }
            }
        }
    }

    func testNestedDataIsOneValue() throws {
        let base = MergeFixture.live(["style": ["color": "red", "size": 1]], by: "ada", on: "tablet", at: "09:00:00.000")
        let ours = MergeFixture.live(["style": ["color": "blue", "size": 1]], by: "ada", on: "tablet", at: "10:00:00.000")
        let theirs = MergeFixture.live(["style": ["color": "red", "size": 2]], by: "bob", on: "phone", at: "10:05:00.000")
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.lww, base: base, ours: ours, theirs: theirs)
        XCTAssertEqual(try Record.decode(bytes).data, ["style": ["color": "red", "size": 2]], "no deep merge: theirs' whole object")
        XCTAssertEqual(conflicts.count, 1)
        // Arrays too.
        let arrayBase = MergeFixture.live(["tags": ["a"]], by: "ada", on: "tablet", at: "09:00:00.000")
        let arrayOurs = MergeFixture.live(["tags": ["a", "b"]], by: "ada", on: "tablet", at: "11:00:00.000")
        let arrayTheirs = MergeFixture.live(["tags": ["c"]], by: "bob", on: "phone", at: "10:00:00.000")
        let (merged, _) = try MergeFixture.mergeBothWays(.lww, base: arrayBase, ours: arrayOurs, theirs: arrayTheirs)
        XCTAssertEqual(try Record.decode(merged).data, ["tags": ["a", "b"]])
    }

    func testFieldRemovalMerges() throws {
        let base = MergeFixture.live(["a": 1, "b": 2, "c": 3], by: "ada", on: "tablet", at: "09:00:00.000")
        let ours = MergeFixture.live(["a": 1, "c": 3], by: "ada", on: "tablet", at: "10:00:00.000", over: base)  // removes b
        let theirs = MergeFixture.live(["a": 1, "b": 2, "c": 4, "d": 5], by: "bob", on: "phone", at: "09:30:00.000", over: base)
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.lww, base: base, ours: ours, theirs: theirs)
        XCTAssertEqual(try Record.decode(bytes).data, ["a": 1, "c": 4, "d": 5])
        XCTAssertEqual(conflicts, [])
        // Removed on one side, changed on the other: a collision; the later side (the removal) wins.
        let changed = MergeFixture.live(["a": 1, "b": 9, "c": 3], by: "bob", on: "phone", at: "09:30:00.000", over: base)
        let (removed, collisions) = try MergeFixture.mergeBothWays(.lww, base: base, ours: ours, theirs: changed)
        XCTAssertEqual(try Record.decode(removed).data, ["a": 1, "c": 3])
        XCTAssertEqual(collisions.map(\.loser.member), ["bob"])
    }

    func testAddAddWithNoBase() throws {
        let ours = MergeFixture.live(["label": "hi", "only-ours": true, "same": "x"], by: "ada", on: "tablet", at: "10:00:00.000")
        let theirs = MergeFixture.live(["label": "hello", "only-theirs": 1, "same": "x"], by: "bob", on: "phone", at: "10:00:00.001")
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.lww, base: nil, ours: ours, theirs: theirs)
        XCTAssertEqual(try Record.decode(bytes).data, ["label": "hello", "only-ours": true, "only-theirs": 1, "same": "x"])
        XCTAssertEqual(conflicts.count, 1)
        XCTAssertEqual(conflicts.first?.losingContent, ours)
        // Same data, different envelopes: nothing collides.
        let again = MergeFixture.live(["label": "hi", "only-ours": true, "same": "x"], by: "bob", on: "phone", at: "10:00:00.001")
        let (quiet, none) = try MergeFixture.mergeBothWays(.deleteWins, base: nil, ours: ours, theirs: again)
        XCTAssertEqual(quiet, again)
        XCTAssertEqual(none, [])
    }

    // MARK: Tombstones

    func testTombstoneVersusTombstone() throws {
        let base = MergeFixture.live(["label": "x"], by: "ada", on: "tablet", at: "09:00:00.000")
        let early = MergeFixture.tombstone(by: "bob", on: "phone", at: "10:00:00.000")
        let late = MergeFixture.tombstone(by: "ada", on: "tablet", at: "10:00:00.000", counter: 3)
        let (lww, lwwConflicts) = try MergeFixture.mergeBothWays(.lww, base: base, ours: early, theirs: late)
        XCTAssertEqual(lww, late)
        XCTAssertEqual(lwwConflicts, [])
        let (deleteWins, dwConflicts) = try MergeFixture.mergeBothWays(.deleteWins, base: base, ours: early, theirs: late)
        XCTAssertEqual(deleteWins, early, "delete-wins keeps the earliest delete")
        XCTAssertEqual(dwConflicts, [])
        let (noBase, _) = try MergeFixture.mergeBothWays(.deleteWins, base: nil, ours: late, theirs: early)
        XCTAssertEqual(noBase, early)
    }

    func testTombstoneVersusEditUnderLWW() throws {
        let base = MergeFixture.live(["label": "x"], by: "ada", on: "tablet", at: "09:00:00.000")
        let delete = MergeFixture.tombstone(by: "bob", on: "phone", at: "10:00:00.000")
        let laterEdit = MergeFixture.live(["label": "y"], by: "ada", on: "tablet", at: "10:30:00.000")
        let (kept, conflicts) = try MergeFixture.mergeBothWays(.lww, base: base, ours: delete, theirs: laterEdit)
        let revived = try Record.decode(kept)
        XCTAssertEqual(revived.data, ["label": "y"], "the later edit resurrects the record")
        XCTAssertEqual(revived.envelope, try Record.decode(laterEdit).envelope)
        XCTAssertEqual(revived.lastDeleted, try Record.decode(delete).envelope, "and remembers the delete it came back from")
        XCTAssertEqual(conflicts.map(\.winner.change), [.edit])
        XCTAssertEqual(conflicts.map(\.loser.change), [.delete])
        XCTAssertEqual(conflicts.first?.losingContent, delete)

        let earlierEdit = MergeFixture.live(["label": "y"], by: "ada", on: "tablet", at: "09:30:00.000")
        let (deleted, lost) = try MergeFixture.mergeBothWays(.lww, base: base, ours: earlierEdit, theirs: delete)
        XCTAssertEqual(deleted, delete)
        XCTAssertEqual(lost.map(\.loser), [MergeSide(member: "ada", device: "tablet", stamp: MergeFixture.hlc("09:30:00.000"), change: .edit)])
        XCTAssertEqual(lost.first?.losingContent, earlierEdit)
    }

    func testUntouchedRecordDeletedIsNoConflict() throws {
        // The base is the same record as ours, only formatted differently, so the bytes differ.
        let live = MergeFixture.live(["label": "x"], by: "ada", on: "tablet", at: "09:00:00.000")
        let compactBase = try Record.decode(live).jsonValue.canonicalLine()
        let delete = MergeFixture.tombstone(by: "bob", on: "phone", at: "10:00:00.000")
        for policy in [MergePolicy.lww, .deleteWins] {
            let (bytes, conflicts) = try MergeFixture.mergeBothWays(policy, base: compactBase, ours: live, theirs: delete)
            XCTAssertEqual(bytes, delete)
            XCTAssertEqual(conflicts, [], "\(policy)")
        }
    }

    func testTombstoneVersusEditUnderDeleteWins() throws {
        let base = MergeFixture.live(["label": "x"], by: "ada", on: "tablet", at: "09:00:00.000")
        let delete = MergeFixture.tombstone(by: "bob", on: "phone", at: "10:00:00.000")
        let edit = MergeFixture.live(["label": "y"], by: "ada", on: "tablet", at: "11:00:00.000")
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.deleteWins, base: base, ours: edit, theirs: delete)
        XCTAssertEqual(bytes, delete)
        XCTAssertEqual(conflicts.map(\.winner.change), [.delete])
        XCTAssertEqual(conflicts.first?.losingContent, edit)
        // Base a tombstone (a concurrent resurrection): still deleted, and the edit is reported.
        let other = MergeFixture.tombstone(by: "cy", on: "pc", at: "10:10:00.000")
        let (again, reported) = try MergeFixture.mergeBothWays(.deleteWins, base: delete, ours: edit, theirs: other)
        XCTAssertEqual(try Record.decode(again).member, "cy")
        XCTAssertEqual(reported.count, 1)
    }

    // MARK: Ordering and envelopes

    func testEqualStampsBreakTiesByMemberThenDeviceThenBytes() throws {
        let base = MergeFixture.live(["label": "x"], by: "ada", on: "tablet", at: "09:00:00.000")
        let ada = MergeFixture.live(["label": "ada"], by: "ada", on: "zz", at: "10:00:00.000")
        let bob = MergeFixture.live(["label": "bob"], by: "bob", on: "aa", at: "10:00:00.000")
        XCTAssertEqual(try Record.decode(try MergeFixture.mergeBothWays(.lww, base: base, ours: ada, theirs: bob).bytes).data?["label"], "bob")
        let phone = MergeFixture.live(["label": "phone"], by: "ada", on: "phone", at: "10:00:00.000")
        let tablet = MergeFixture.live(["label": "tablet"], by: "ada", on: "tablet", at: "10:00:00.000")
        let (byDevice, conflicts) = try MergeFixture.mergeBothWays(.lww, base: base, ours: tablet, theirs: phone)
        XCTAssertEqual(try Record.decode(byDevice).data?["label"], "tablet")
        XCTAssertEqual(conflicts.first?.winner.device, "tablet")
        // Same stamp, member and device: the greater record bytes win ("y" > "b").
        let b = MergeFixture.live(["label": "b"], by: "ada", on: "tablet", at: "10:00:00.000")
        let y = MergeFixture.live(["label": "y"], by: "ada", on: "tablet", at: "10:00:00.000")
        XCTAssertEqual(try MergeFixture.mergeBothWays(.lww, base: base, ours: y, theirs: b).bytes, y)
        // Names order by UTF-8 bytes: "Zed" (0x5A) < "ada" (0x61).
        let zed = MergeFixture.live(["label": "zed"], by: "Zed", on: "tablet", at: "10:00:00.000")
        XCTAssertEqual(try Record.decode(try MergeFixture.mergeBothWays(.lww, base: base, ours: zed, theirs: ada).bytes).data?["label"], "ada")
    }

    func testEnvelopeComesFromTheLaterSideEvenWithoutCollision() throws {
        let base = MergeFixture.live(["a": 1, "b": 1], by: "ada", on: "tablet", at: "09:00:00.000")
        let ours = MergeFixture.live(["a": 2, "b": 1], by: "ada", on: "tablet", at: "10:00:00.000", counter: 7, over: base)
        let theirs = MergeFixture.live(["a": 1, "b": 2], by: "bob", on: "phone", at: "09:59:59.999", over: base)
        let record = try Record.decode(try MergeFixture.mergeBothWays(.lww, base: base, ours: ours, theirs: theirs).bytes)
        XCTAssertEqual(record.data, ["a": 2, "b": 2])
        XCTAssertEqual(record.stamp, MergeFixture.hlc("10:00:00.000", counter: 7))
        XCTAssertEqual(record.member, "ada")
        XCTAssertEqual(record.device, "tablet")
    }

    // MARK: Trivial cases and bad input

    func testTrivialCasesReturnASideUntouched() {
        let base = Array("{\"not\": \"a record\"}".utf8)
        let x = MergeFixture.live(["label": "x"], by: "ada", on: "tablet", at: "10:00:00.000")
        let messy = Array(
            #"{"kind":"vocabulary","id":"biscuit","device":"d","updatedBy":"m","updatedAt":"2026-01-01T10:00:00.001Z-0003","data":{}}"#
                .utf8)
        for policy in MergePolicy.allCases {
            XCTAssertEqual(RecordMerge.merge(policy: policy, base: base, ours: messy, theirs: messy), .merged(bytes: messy, conflicts: []))
            XCTAssertEqual(RecordMerge.merge(policy: policy, base: base, ours: base, theirs: x), .merged(bytes: x, conflicts: []))
            XCTAssertEqual(RecordMerge.merge(policy: policy, base: x, ours: messy, theirs: x), .merged(bytes: messy, conflicts: []))
        }
    }

    func testUnparseableSidesAreUnresolvedAndNamed() {
        let good = MergeFixture.live(["label": "x"], by: "ada", on: "tablet", at: "10:00:00.000")
        let bad = Array("{\"data\": ".utf8)
        let noID = Array(#"{"data":{},"device":"d","kind":"vocabulary","updatedAt":"2026-01-01T10:00:00.001Z-0003","updatedBy":"m"}"#.utf8)
        for policy in [MergePolicy.lww, .deleteWins] {
            guard case .unresolved(let oursReason) = RecordMerge.merge(policy: policy, base: nil, ours: bad, theirs: good),
                case .unresolved(let theirsReason) = RecordMerge.merge(policy: policy, base: nil, ours: good, theirs: noID),
                case .unresolved(let bothReason) = RecordMerge.merge(policy: policy, base: nil, ours: bad, theirs: noID)
            else { return XCTFail("expected unresolved for \(policy)") }
            XCTAssertTrue(oursReason.hasPrefix("ours is not a valid record file: invalid JSON at line 1"), oursReason)
            XCTAssertTrue(theirsReason.hasPrefix(#"theirs is not a valid record file: malformed record: field "id" is missing"#), theirsReason)
            XCTAssertTrue(bothReason.hasPrefix("ours is not") && bothReason.contains("; theirs is not"), bothReason)
        }
    }

    func testUnparseableBaseCountsAsNoBase() throws {
        let ours = MergeFixture.live(["label": "a"], by: "ada", on: "tablet", at: "10:00:00.000")
        let theirs = MergeFixture.live(["label": "b"], by: "bob", on: "phone", at: "10:00:00.000")
        let garbage = Array("not json".utf8)
        let otherRecord = MergeFixture.live(["label": "a"], by: "ada", on: "tablet", at: "09:00:00.000", id: "other")
        let withoutBase = try MergeFixture.mergeBothWays(.lww, base: nil, ours: ours, theirs: theirs)
        XCTAssertEqual(withoutBase.conflicts.count, 1)
        for base in [garbage, otherRecord] {
            let merged = try MergeFixture.mergeBothWays(.lww, base: base, ours: ours, theirs: theirs)
            XCTAssertEqual(merged.bytes, withoutBase.bytes)
            XCTAssertEqual(merged.conflicts, withoutBase.conflicts)
        }
    }

    func testDifferentRecordsAreUnresolved() {
        let ours = MergeFixture.live(["label": "a"], by: "ada", on: "tablet", at: "10:00:00.000")
        let theirs = MergeFixture.live(["label": "b"], by: "bob", on: "phone", at: "10:00:00.000", id: "cookie")
        guard case .unresolved(let reason) = RecordMerge.merge(policy: .lww, base: nil, ours: ours, theirs: theirs) else {
            return XCTFail("expected unresolved")
        }
        XCTAssertEqual(reason, "ours is record vocabulary/biscuit but theirs is vocabulary/cookie; one of them is in the wrong file")
    }

    func testOversizedMergeIsUnresolved() {
        let big = String(repeating: "x", count: maxRecordBytes / 2 + 10)
        let ours = MergeFixture.live(["a": .string(big)], by: "ada", on: "tablet", at: "10:00:00.000")
        let theirs = MergeFixture.live(["b": .string(big)], by: "bob", on: "phone", at: "10:00:00.000")
        guard case .unresolved(let reason) = RecordMerge.merge(policy: .lww, base: nil, ours: ours, theirs: theirs) else {
            return XCTFail("expected unresolved")
        }
        XCTAssertTrue(reason.hasPrefix("merging ours and theirs would make a record of"), reason)
    }

    /// `same` compares canonical bytes; its shortcut for strings and numbers must agree with them
    /// (so "é" precomposed and decomposed, or 1 and 1.0, are different values).
    func testSameAgreesWithCanonicalBytes() {
        let values: [JSONValue?] = [
            nil, .null, .bool(true), .bool(false), .number("1"), .number("1.0"), .number("-0"), .number("0"),
            .string("é"), .string("e\u{301}"), .string(""), .string("a\"b"), .string("1"), .string("tab\t"),
            .array([.string("é")]), .array([.string("e\u{301}")]), .object(["é": .number("1")]), .object(["e\u{301}": .number("1")]),
        ]
        for a in values {
            for b in values {
                let reference = a.map { $0.canonicalLine() } == b.map { $0.canonicalLine() }
                XCTAssertEqual(MergeSupport.same(a, b), reference, "\(String(describing: a)) vs \(String(describing: b))")
            }
        }
    }
}
