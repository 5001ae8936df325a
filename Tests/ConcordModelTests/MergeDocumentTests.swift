import XCTest

@testable import ConcordModel

/// Envelope-less documents (members, profile, kinds) and the `Concord-Resolved` trailer.
final class MergeDocumentTests: XCTestCase {
    func json(_ value: JSONValue) -> [UInt8] { value.canonicalBytes() }

    func merged(
        _ merge: ([UInt8]?, [UInt8], [UInt8]) -> FileMergeOutcome, base: [UInt8]?, ours: [UInt8], theirs: [UInt8],
        file: StaticString = #filePath, line: UInt = #line
    ) -> [UInt8]? {
        let forward = merge(base, ours, theirs)
        XCTAssertEqual(forward, merge(base, theirs, ours), "not symmetric", file: file, line: line)
        guard case .merged(let bytes, let conflicts) = forward else {
            XCTFail("expected a merge, got \(forward)", file: file, line: line)
            return nil
        }
        XCTAssertEqual(conflicts, [], file: file, line: line)
        return bytes
    }

    // MARK: Documents

    func testDocumentMergesFieldsAndBreaksTiesByGreaterBytes() throws {
        let base = json(["name": "ada", "role": "user", "status": "active", "keys": [["device": "tablet"]]])
        let ours = json(["name": "ada", "role": "editor", "status": "active", "keys": [["device": "tablet"]]])
        let theirs = json(["name": "ada", "role": "admin", "status": "revoked", "keys": [["device": "phone"]]])
        let bytes = try XCTUnwrap(merged(RecordMerge.mergeDocument, base: base, ours: ours, theirs: theirs))
        // role collided: "editor" > "admin" by bytes; status and keys changed on one side only.
        XCTAssertEqual(bytes, json(["name": "ada", "role": "editor", "status": "revoked", "keys": [["device": "phone"]]]))
    }

    func testMemberKeysMergeAsASetByDevice() throws {
        let desk: JSONValue = ["device": "desk", "publicKey": "ssh-ed25519 D"]
        let phone: JSONValue = ["device": "phone", "publicKey": "ssh-ed25519 P"]
        let tablet: JSONValue = ["device": "tablet", "publicKey": "ssh-ed25519 T"]
        let base = json(["name": "bob", "role": "user", "keys": [desk]])
        let ours = json(["name": "bob", "role": "user", "keys": [desk, phone]])
        let theirs = json(["name": "bob", "role": "editor", "keys": [desk, tablet]])
        XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: base, ours: ours, theirs: theirs),
                       json(["name": "bob", "role": "editor", "keys": [desk, phone, tablet]]))
        // A key removed on one side while another is added on the other.
        XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: ours, ours: json(["name": "bob", "role": "user", "keys": [phone]]),
                              theirs: json(["name": "bob", "role": "user", "keys": [desk, phone, tablet]])),
                       json(["name": "bob", "role": "user", "keys": [phone, tablet]]))
        // The same device given different keys on both sides: one, by greater bytes.
        let phone2: JSONValue = ["device": "phone", "publicKey": "ssh-ed25519 Q"]
        XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: base, ours: ours, theirs: json(["name": "bob", "role": "user", "keys": [desk, phone2]])),
                       json(["name": "bob", "role": "user", "keys": [desk, phone2]]))
    }

    /// A revocation beats any concurrent change to that member: a role change, a key added, even
    /// the member re-activated on the other side.
    func testMemberRevocationBeatsConcurrentChanges() throws {
        let desk: JSONValue = ["device": "desk", "publicKey": "ssh-ed25519 D"]
        let phone: JSONValue = ["device": "phone", "publicKey": "ssh-ed25519 P"]
        let base = json(["name": "bob", "role": "editor", "status": "active", "keys": [desk]])
        let revoked = json(["name": "bob", "role": "editor", "status": "revoked", "keys": [desk], "revokedBy": "alice"])
        for other in [json(["name": "bob", "role": "admin", "status": "active", "keys": [desk]]),
                      json(["name": "bob", "role": "editor", "status": "active", "keys": [desk, phone]]),
                      json(["name": "bob", "role": "admin", "status": "invited", "keys": [phone]])] {
            XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: base, ours: revoked, theirs: other), revoked)
        }
        // Both sides revoked: an ordinary document merge of the two.
        let revokedByCarol = json(["name": "bob", "role": "editor", "status": "revoked", "keys": [desk], "revokedBy": "carol"])
        XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: base, ours: revoked, theirs: revokedByCarol), revokedByCarol)
    }

    /// An admission is one claimant's. A link accepted on two forks with different device keys: the
    /// member stays invited (the base), not active with both keys. A name taken on two forks by two
    /// people joining by open invitation: held by neither (revoked, no keys). The same key accepted
    /// on both sides is one acceptance, merged as usual.
    func testAContestedAdmissionAdmitsNobody() throws {
        let invitee: JSONValue = ["device": "phone", "publicKey": "ssh-ed25519 I"]
        let thief: JSONValue = ["device": "laptop", "publicKey": "ssh-ed25519 T"]
        let invited = json(["name": "bob", "role": "user", "status": "invited", "keys": [], "invitationKey": "ssh-ed25519 O"])
        let accepted = json(["name": "bob", "role": "user", "status": "active", "keys": [invitee], "acceptance": "A"])
        let stolen = json(["name": "bob", "role": "user", "status": "active", "keys": [thief], "acceptance": "B"])
        XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: invited, ours: accepted, theirs: stolen), invited)
        XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: invited, ours: accepted, theirs: accepted), accepted)

        let joined = json(["name": "eve", "role": "user", "status": "active", "keys": [invitee], "invitation": "open1"])
        let alsoJoined = json(["name": "eve", "role": "user", "status": "active", "keys": [thief], "invitation": "open1"])
        let bytes = try XCTUnwrap(merged(RecordMerge.mergeMemberFile, base: nil, ours: joined, theirs: alsoJoined))
        let member = try XCTUnwrap(try? JSONValue.parse(bytes))
        XCTAssertEqual(member["status"], "revoked")
        XCTAssertEqual(member["keys"], .array([]))
        // An active member's concurrent key changes still merge as a set.
        let desk: JSONValue = ["device": "desk", "publicKey": "ssh-ed25519 D"]
        let active = json(["name": "bob", "role": "user", "status": "active", "keys": [desk]])
        XCTAssertEqual(merged(RecordMerge.mergeMemberFile, base: active, ours: json(["name": "bob", "role": "user", "status": "active", "keys": [desk, invitee]]),
                              theirs: json(["name": "bob", "role": "user", "status": "active", "keys": [desk, thief]])),
                       json(["name": "bob", "role": "user", "status": "active", "keys": [desk, thief, invitee]]))   // by device: desk, laptop, phone
    }

    func testDocumentRemovalLosesToAChange() throws {
        let base = json(["a": 1, "b": 1])
        let removed = json(["a": 1])
        let changed = json(["a": 1, "b": 2])
        XCTAssertEqual(merged(RecordMerge.mergeDocument, base: base, ours: removed, theirs: changed), changed)
        // Removed on one side, untouched on the other: removed.
        let added = json(["a": 1, "b": 1, "c": 3])
        XCTAssertEqual(merged(RecordMerge.mergeDocument, base: base, ours: removed, theirs: added), json(["a": 1, "c": 3]))
    }

    func testDocumentAddAddAndBadInput() throws {
        let ours = json(["id": "p1", "name": "Home"])
        let theirs = Array(#"{"name":"Family","id":"p1","createdAt":"2026-01-01T10:00:00Z"}"#.utf8)
        for base in [nil, Array("[1]".utf8), Array("garbage".utf8)] {
            XCTAssertEqual(
                merged(RecordMerge.mergeDocument, base: base, ours: ours, theirs: theirs),
                json(["id": "p1", "name": "Home", "createdAt": "2026-01-01T10:00:00Z"]))
        }
        guard case .unresolved(let reason) = RecordMerge.mergeDocument(base: nil, ours: Array("[]".utf8), theirs: theirs) else {
            return XCTFail("expected unresolved")
        }
        XCTAssertTrue(reason.hasPrefix("ours is not a JSON object document: the document is not a JSON object"), reason)
    }

    // MARK: Kinds

    func kinds(_ specs: [(String, String?, MergePolicy, Role)]) throws -> [UInt8] {
        try KindsTable(specs.map { try RecordKind(name: $0.0, directory: $0.1, policy: $0.2, writers: $0.3) }).canonicalBytes()
    }

    func testKindsMergeByName() throws {
        let base = try kinds([("logs", nil, .append, .user), ("notes", nil, .lww, .editor), ("old", nil, .lww, .editor)])
        let ours = try kinds([("logs", nil, .append, .user), ("notes", nil, .lww, .admin), ("a-new", nil, .lww, .viewer)])
        let theirs = try kinds([
            ("logs", nil, .append, .viewer), ("notes", nil, .deleteWins, .editor), ("old", nil, .lww, .editor),
            ("z-new", nil, .append, .user),
        ])
        let bytes = try XCTUnwrap(merged(RecordMerge.mergeKindsFile, base: base, ours: ours, theirs: theirs))
        // notes changed on both, field by field: ours locked writers down to admin, theirs changed the
        // policy; both changes stay. old: removed by ours, untouched by theirs.
        XCTAssertEqual(
            bytes,
            try kinds([
                ("a-new", nil, .lww, .viewer), ("logs", nil, .append, .viewer), ("notes", nil, .deleteWins, .admin),
                ("z-new", nil, .append, .user),
            ]))
    }

    /// Two Admins change one kind at once: writers changed on both sides take the higher role, in
    /// either order (a kind locked down is never opened up by the other side's change), and a
    /// field changed on one side keeps its change.
    func testAKindChangedOnBothSidesMergesFieldByFieldAndKeepsTheStricterWriters() throws {
        let base = try kinds([("notes", nil, .deleteWins, .user)])
        for (ours, theirs, expected) in [
            (("notes", nil, MergePolicy.deleteWins, Role.admin), ("notes", nil, MergePolicy.lww, Role.user), ("notes", nil, MergePolicy.lww, Role.admin)),
            (("notes", nil, .deleteWins, .editor), ("notes", nil, .deleteWins, .admin), ("notes", nil, .deleteWins, .admin)),
            (("notes", nil, .lww, .viewer), ("notes", nil, .deleteWins, .editor), ("notes", nil, .lww, .editor)),
        ] as [((String, String?, MergePolicy, Role), (String, String?, MergePolicy, Role), (String, String?, MergePolicy, Role))] {
            let (o, t) = (try kinds([ours]), try kinds([theirs]))
            XCTAssertEqual(try XCTUnwrap(merged(RecordMerge.mergeKindsFile, base: base, ours: o, theirs: t)), try kinds([expected]), "\(ours) + \(theirs)")
            XCTAssertEqual(try XCTUnwrap(merged(RecordMerge.mergeKindsFile, base: base, ours: t, theirs: o)), try kinds([expected]), "\(theirs) + \(ours)")
        }
        // Added on both sides with other writers: the higher role.
        let added = try XCTUnwrap(merged(RecordMerge.mergeKindsFile, base: try kinds([]), ours: try kinds([("x", nil, .lww, .viewer)]),
                                         theirs: try kinds([("x", nil, .lww, .editor)])))
        XCTAssertEqual(added, try kinds([("x", nil, .lww, .editor)]))
    }

    func testKindsWithADuplicateDirectoryOrNewerFormatAreUnresolved() throws {
        let ours = try kinds([("a", "shared", .lww, .user)])
        let theirs = try kinds([("b", "shared", .lww, .user)])
        guard case .unresolved(let reason) = RecordMerge.mergeKindsFile(base: nil, ours: ours, theirs: theirs) else {
            return XCTFail("expected unresolved")
        }
        XCTAssertEqual(
            reason,
            #"the merged kinds would be invalid (malformed .concord/kinds.json: directory "shared" is used by two kinds; "#
                + "fix the file or restore it from history); merge .concord/kinds.json by hand")
        let newer = Array(#"{"formatVersion": 2, "kinds": []}"#.utf8)
        guard case .unresolved(let newerReason) = RecordMerge.mergeKindsFile(base: nil, ours: ours, theirs: newer) else {
            return XCTFail("expected unresolved")
        }
        XCTAssertTrue(newerReason.hasPrefix("theirs is not a valid kinds file:") && newerReason.contains("upgrade concord"), newerReason)
    }

    func testKindsOutputIsCanonicalEvenWhenInputOmitsDirectories() throws {
        let ours = Array(#"{"kinds":[{"name":"b","policy":"lww","writers":"Admin"}],"formatVersion":1}"#.utf8)
        let theirs = try kinds([("a", nil, .append, .user), ("b", nil, .lww, .admin)])
        XCTAssertEqual(merged(RecordMerge.mergeKindsFile, base: nil, ours: ours, theirs: theirs), theirs)
    }

    // MARK: Trailer

    func testTrailerRoundTrip() throws {
        let conflict = ResolvedConflict(
            kind: "scenes", id: "s-1.a", policy: .deleteWins,
            winner: MergeSide(member: "bob", device: "ipad", stamp: MergeFixture.hlc("10:01:00.000"), change: .delete),
            loser: MergeSide(member: "jane", device: "mac-mini", stamp: MergeFixture.hlc("10:02:00.000", counter: 12), change: .edit),
            losingContent: Array("{}".utf8))
        XCTAssertEqual(
            conflict.trailerValue,
            "scenes/s-1.a delete-wins winner=bob@ipad loser=jane@mac-mini winner-change=delete loser-change=edit "
                + "winner-at=2026-01-01T10:01:00.000Z-0000 loser-at=2026-01-01T10:02:00.000Z-0012")
        let parsed = try XCTUnwrap(ResolvedConflict(trailerValue: conflict.trailerValue))
        XCTAssertEqual(parsed.kind, "scenes")
        XCTAssertEqual(parsed.id, "s-1.a")
        XCTAssertEqual(parsed.policy, .deleteWins)
        XCTAssertEqual(parsed.winner, conflict.winner)
        XCTAssertEqual(parsed.loser, conflict.loser)
        XCTAssertEqual(parsed.losingContent, [])
        XCTAssertEqual(parsed.trailerValue, conflict.trailerValue)
        for policy in MergePolicy.allCases {
            let value = conflict.trailerValue.replacingOccurrences(of: " delete-wins ", with: " \(policy.rawValue) ")
            XCTAssertEqual(ResolvedConflict(trailerValue: value)?.policy, policy)
        }
    }

    func testTrailerRejectsOtherShapesAndSanitizesNames() {
        let good = "k/i lww winner=a@b loser=c@d winner-change=edit loser-change=delete "
            + "winner-at=2026-01-01T10:01:00.000Z-0000 loser-at=2026-01-01T10:02:00.000Z-0000"
        XCTAssertNotNil(ResolvedConflict(trailerValue: good))
        for bad in [
            "", good + " extra", good.replacingOccurrences(of: "k/i", with: "ki"),
            good.replacingOccurrences(of: "lww", with: "LWW"), good.replacingOccurrences(of: "a@b", with: "ab"),
            good.replacingOccurrences(of: "=edit", with: "=change"), good.replacingOccurrences(of: "10:01:00.000Z", with: "10:01:00Z"),
            good.replacingOccurrences(of: "winner=", with: "loser="), good.replacingOccurrences(of: " loser=", with: "  loser="),
        ] {
            XCTAssertNil(ResolvedConflict(trailerValue: bad), bad)
        }
        let odd = ResolvedConflict(
            kind: "k", id: "i", policy: .lww,
            winner: MergeSide(member: "a b", device: "x\nConcord-Actor: y", stamp: HLC(wallMillis: 0), change: .edit),
            loser: MergeSide(member: "c", device: "d", stamp: HLC(wallMillis: 0), change: .edit), losingContent: [])
        XCTAssertEqual(odd.trailerValue.split(separator: " ").count, 8)
        XCTAssertFalse(odd.trailerValue.contains("\n"))
        XCTAssertEqual(ResolvedConflict(trailerValue: odd.trailerValue)?.winner.device, "x?Concord-Actor:?y")
        // kind/id splits at the first "/".
        XCTAssertEqual(ResolvedConflict(trailerValue: good.replacingOccurrences(of: "k/i", with: "k/i/j"))?.id, "i/j")
    }
}
