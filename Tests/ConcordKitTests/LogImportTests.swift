import Foundation
import XCTest

import ConcordGitFormats
@testable import ConcordEngine
@testable import ConcordKit

/// Issue 32, scenario E4: an import loses nothing. A dump's log entries keep when, by whom and on
/// which device they were first written (`LogEntry.origin`), while each is the importer's, signed by
/// them (docs/security.md, rule 6); equal data at two times is two entries; an export imported into
/// an empty profile exports the same bytes.
final class LogImportTests: KitTestCase {
    private func legacyDump() throws -> Dump {
        try Dump.parse(Array(LegacyDump.text.utf8), source: "legacy.json")
    }

    private func head(_ profile: Profile) throws -> ObjectID {
        try XCTUnwrap(try profile.repository.resolveReference("HEAD"))
    }

    func testALegacyDumpKeepsEachEntrysAuthorTimeAndDevice() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let dump = try legacyDump()
        XCTAssertEqual(Set(dump.logs.map(\.id)).count, 4, "equal data at two times gets two derived ids")

        let result = try profile.records.importDump(dump, as: alice)
        XCTAssertEqual(result.value, DumpImport(records: 0, logEntries: 4, formatUpgradedTo: nil))
        let entries = try profile.records.logEntries("logs")
        XCTAssertEqual(entries.count, 4)
        for entry in entries {
            XCTAssertEqual(entry.by, "alice", "an entry is its signer's")
            XCTAssertEqual(entry.device, "laptop")
            XCTAssertNotNil(entry.origin)
        }
        let expected = LegacyDump.entries.map { "\($0.at) \($0.by)@\($0.device) \($0.data)" }
        let written = entries.map { "\($0.written) \(String(decoding: JSONValue.object($0.data).canonicalLine(), as: UTF8.self))" }
        XCTAssertEqual(written.sorted(), expected.sorted())

        // The export gives each entry as first written, oldest first.
        let exported = try profile.records.exportDump()
        XCTAssertEqual(exported.logs.map { "\($0.at ?? "") \($0.by ?? "")@\($0.device ?? "")" },
                       LegacyDump.entries.map { "\($0.at) \($0.by)@\($0.device)" })
        XCTAssertEqual(exported.logs.map(\.id), dump.logs.map(\.id))

        // On disk: the importer's entry with its origin; every device accepts the history.
        let day = try String(contentsOf: profile.root.appendingPathComponent("logs/2026-01-01.jsonl"), encoding: .utf8)
        XCTAssertTrue(day.contains(#""origin":{"at":"2025-03-02T16:45:00.000Z-0000","by":"grandma","device":"tablet"}"#), day)
        XCTAssertEqual(try IncomingCheck(repository: profile.repository, profileID: profile.info.id, caches: EngineCaches()).verify(tip: try head(profile), known: []),
                       Int(try gitOK(["rev-list", "--count", "HEAD"], in: profile.root)))
        XCTAssertEqual(try git(["fsck", "--full"], in: profile.root).status, 0)

        // Again: nothing, and the profile's own export adds nothing either.
        XCTAssertNil(try profile.records.importDump(dump, as: alice).commit)
        XCTAssertNil(try profile.records.importDump(try Dump.parse(exported.canonicalBytes(), source: "export"), as: alice).commit)
        XCTAssertEqual(try profile.records.logEntries("logs").count, 4)
    }

    /// Format 7: an export writes who imported each imported entry (`importedBy`) beside the dump's
    /// claim (`at`, `by`, `device`), and a round trip through another member's import keeps the claim
    /// as the origin only: the entries are the new importer's, the export names them as its importer.
    func testARoundTripKeepsTheClaimAsAnOriginAndNamesTheImporter() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        try profile.records.importDump(try legacyDump(), as: alice)
        let exported = try profile.records.exportDump()
        XCTAssertTrue(exported.logs.allSatisfy { $0.importedBy?.member == "alice" && $0.by != "alice" }, "\(exported.logs)")
        let text = String(decoding: exported.canonicalBytes(), as: UTF8.self)
        XCTAssertTrue(text.contains(#""importedBy": {"#), text)

        let bob = try makeIdentity("bob", device: "phone")
        let fresh = try makeProfile("fresh", identity: bob)
        try fresh.records.importDump(try Dump.parse(exported.canonicalBytes(), source: "export"), as: bob)
        for entry in try fresh.records.logEntries("logs") {
            XCTAssertEqual(entry.by, "bob", "an entry is its signer's")
            XCTAssertNotEqual(entry.origin?.member, "alice", "the claim stays the dump's author, never the importer in between")
        }
        let again = try fresh.records.exportDump()
        XCTAssertEqual(again.logs.map(\.written), exported.logs.map(\.written), "the claims travel unchanged")
        XCTAssertTrue(again.logs.allSatisfy { $0.importedBy?.member == "bob" }, "\(again.logs)")
    }

    /// An entry is matched by its id and who first wrote it when: another member importing the same
    /// dump adds nothing. Two members who imported it on their own devices each hold it as theirs
    /// once their logs merge; the export gives it once.
    func testAnEntryIsImportedOnceWhoeverImportsItAndExportedOnce() throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "desk")
        let profile = try makeProfile(identity: alice)
        try profile.members.add("bob", role: .user, device: bob.device, key: bob.key.publicKey, as: alice)
        try profile.records.importDump(try legacyDump(), as: alice)
        XCTAssertNil(try profile.records.importDump(try legacyDump(), as: bob).commit)
        XCTAssertEqual(try profile.records.logEntries("logs").count, 4)

        let mine = try profile.records.logEntries("logs")
        let theirs = mine.map { LogEntry(id: $0.id, at: $0.at, by: "bob", device: "desk", data: $0.data, origin: $0.origin) }
        XCTAssertEqual(Set((mine + theirs).map(\.identity)).count, 8, "each member's entry is their own")
        XCTAssertEqual(Dump.LogItem.exported(mine + theirs, kind: "logs"), Dump.LogItem.exported(mine, kind: "logs"))
    }

    /// Bob imports an item carrying the id and origin of one of Alice's imported entries with other
    /// data (red-team finding F): it is kept as Bob's own entry beside hers, never standing for hers;
    /// and an export of both, imported into an empty profile, keeps both (one key per id, origin and
    /// data: the forged item neither replaces nor hides the real one).
    func testAnItemForgedWithAnotherEntrysIdAndOriginNeitherReplacesNorHidesIt() throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "desk")
        let profile = try makeProfile(identity: alice)
        try profile.members.add("bob", role: .user, device: bob.device, key: bob.key.publicKey, as: alice)
        try profile.records.importDump(try legacyDump(), as: alice)
        let real = try XCTUnwrap(try profile.records.logEntries("logs").first { $0.origin?.member == "therapist" })
        let origin = try XCTUnwrap(real.origin)
        let forged = #"{"logs":[{"kind":"logs","id":"\#(real.id)","at":"\#(origin.at)","by":"\#(origin.member)","device":"\#(origin.device)","#
            + #""data":{"tapped":"forged"}}],"records":[]}"#
        XCTAssertNotNil(try profile.records.importDump(try Dump.parse(Array(forged.utf8), source: "forged.json"), as: bob).commit)
        let both = try profile.records.logEntries("logs").filter { $0.id == real.id }
        XCTAssertEqual(Set(both.map(\.by)), ["alice", "bob"], "the forged item is Bob's entry, beside Alice's")

        let exported = try profile.records.exportDump()
        let fresh = try makeProfile("fresh", identity: alice)
        try fresh.records.importDump(try Dump.parse(exported.canonicalBytes(), source: "export"), as: alice)
        // One of the two keeps the id, the other an id derived from its data and origin: both stay.
        let kept = try fresh.records.logEntries("logs").filter { $0.origin == origin }.map { $0.data["tapped"]?.stringValue ?? "?" }
        XCTAssertEqual(Set(kept), ["more", "forged"], "neither replaces the other")
        XCTAssertNil(try fresh.records.importDump(try Dump.parse(exported.canonicalBytes(), source: "export"), as: alice).commit,
                     "importing the export again adds nothing")
    }

    /// What a concord before this one made of the legacy dump: the entries as the importer's, no
    /// origin, ids hashing the data alone, the two equal ones merged ("imported 3 of 4 items").
    /// Importing the dump again brings back only the entry that was lost.
    func testImportingALegacyDumpAgainAfterAnOlderImportAddsOnlyWhatItLost() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let dump = try legacyDump()
        try profile.records.write(as: alice, action: .imported) { transaction in
            let logs = try profile.kind(named: "logs")
            var seen = Set<String>()
            for item in dump.logs where seen.insert(Dump.derivedID(kind: "logs", data: item.data)).inserted {
                try transaction.append(logs, entries: [(try RecordID(Dump.derivedID(kind: "logs", data: item.data)), item.data, nil)])
            }
        }
        XCTAssertEqual(try profile.records.logEntries("logs").count, 3)
        XCTAssertEqual(try profile.records.importDump(dump, as: alice).value.logEntries, 1)
        let entries = try profile.records.logEntries("logs")
        XCTAssertEqual(entries.count, 4)
        XCTAssertEqual(entries.compactMap(\.origin).map(\.description), ["2025-03-03T08:00:00.000Z-0000 therapist@ipad"])
        XCTAssertNil(try profile.records.importDump(dump, as: alice).commit)
    }

    func testADumpEntryGivesAtByAndDeviceTogetherWithAnHLC() {
        func message(_ entry: String) -> String {
            do {
                _ = try Dump.parse(Array(#"{"logs":[\#(entry)]}"#.utf8), source: "dump.json")
                XCTFail("expected \(entry) to be refused")
                return ""
            } catch {
                return (error as? LocalizedError)?.errorDescription ?? "\(error)"
            }
        }
        let partial = message(#"{"kind":"logs","data":{},"at":"2025-03-01T09:00:00.000Z-0000","by":"ann"}"#)
        XCTAssertTrue(partial.contains(#"logs[0] needs strings "at", "by" and "device" together"#), partial)
        let notHLC = message(#"{"kind":"logs","data":{},"at":"yesterday","by":"ann","device":"phone"}"#)
        XCTAssertTrue(notHLC.contains("logs[0]") && notHLC.contains("2026-01-01T10:00:00.001Z-0000"), notHLC)
    }

    /// A format 5 profile (as an older concord left it): a User's import of entries that keep their
    /// origin is refused with what to do; one of a dump that does not say who wrote its entries is
    /// imported as before; an Admin's moves the profile to format 6 in the import's own commit, and
    /// every device accepts that. A commit that puts an origin into a format 5 profile is refused.
    func testAFormat5ProfileMovesTo6WithAnAdminsImportOnly() throws {
        let alice = try makeIdentity(), uma = try makeIdentity("uma", device: "phone")
        let clock = ManualClock("2026-01-01T10:00:00.001Z")
        let created = try makeProfile(identity: alice, clock: clock)
        try created.members.add("uma", role: .user, device: uma.device, key: uma.key.publicKey, as: alice)
        try created.records.write(as: alice) { transaction in
            let old = ProfileInfo(id: created.info.id, name: created.info.name, formatVersion: 5, createdAt: created.info.createdAt)
            transaction.stage(ProfilePaths.profile, old.json.canonicalBytes(), RecordChange(kind: "profile", id: "profile", action: .updated))
        }
        let profile = try Profile.open(at: created.root, environment: makeEnvironment(alice, clock: clock))
        XCTAssertEqual(profile.info.formatVersion, 5)
        let base = try head(profile)

        guard case .notAllowed(let member, _, let action, .admin, _, _)? = concordError({ try profile.records.importDump(try legacyDump(), as: uma) })
        else { return XCTFail("expected notAllowed") }
        XCTAssertEqual(member, "uma")
        XCTAssertTrue(action.contains("data format 6") && action.contains("upgrade of its data format"), action)
        XCTAssertEqual(try head(profile), base, "nothing written")

        let plain = try Dump.parse(Array(#"{"logs":[{"kind":"logs","data":{"x":1}}]}"#.utf8), source: "plain.json")
        XCTAssertEqual(try profile.records.importDump(plain, as: uma).value, DumpImport(records: 0, logEntries: 1, formatUpgradedTo: nil))

        let result = try profile.records.importDump(try legacyDump(), as: alice)
        XCTAssertEqual(result.value, DumpImport(records: 0, logEntries: 4, formatUpgradedTo: 6))
        XCTAssertEqual(Set(try gitOK(["diff", "--name-only", "HEAD~1", "HEAD"], in: profile.root).split(separator: "\n")),
                       [".concord/profile.json", "logs/2026-01-01.jsonl"])
        XCTAssertEqual(try Profile.open(at: profile.root, environment: makeEnvironment(alice, clock: clock)).info.formatVersion, 6)
        XCTAssertEqual(try IncomingCheck(repository: profile.repository, profileID: profile.info.id, caches: EngineCaches()).verify(tip: try head(profile), known: [base]), 2)

        // An origin written into the format 5 profile without moving it (by hand, or by a concord that skips the step).
        try gitOK(["reset", "--hard", "--quiet", base.hex], in: profile.root)
        let forged = try profile.records.write(as: alice) { transaction in
            try transaction.append(try profile.kind(named: "logs"), entries: [
                (try RecordID("e1"), ["x": 1], WriteStamp(at: try XCTUnwrap(HLC(parsing: "2025-01-01T00:00:00.000Z-0000")), member: "ann", device: "pc")),
            ])
        }
        let tip = try XCTUnwrap(ObjectID(hex: try XCTUnwrap(forged.commit)))
        guard case .invalidCommit(_, let path, let reason)? = concordError({
            try IncomingCheck(repository: profile.repository, profileID: profile.info.id, caches: EngineCaches()).verify(tip: tip, known: [base])
        }) else { return XCTFail("expected invalidCommit") }
        XCTAssertEqual(path, "logs/2026-01-01.jsonl")
        XCTAssertTrue(reason.contains("origin") && reason.contains("data format 6"), reason)
    }
}
