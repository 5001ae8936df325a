import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// History, listings with warnings, and the hybrid logical clock across writes.
final class HistoryAndClockTests: KitTestCase {
    func testHistoryNewestFirstWithRecordFilter() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "a", data: ["v": 1]) }
        try profile.records.write(as: alice) { try $0.put("vocabulary", "b", data: ["v": 1]) }
        try profile.records.write(as: alice) { try $0.put("vocabulary", "a", data: ["v": 2]) }
        let entryID = try profile.records.write(as: alice) { try $0.append("logs", data: ["tap": 1]) }.value
        try profile.records.write(as: alice) { try $0.delete("vocabulary", "a") }

        let all = try profile.history.entries()
        XCTAssertEqual(all.map(\.action), ["deleted", "appended", "updated", "added", "added", "created"])
        XCTAssertEqual(all.map(\.changeAction), [.deleted, .appended, .updated, .added, .added, .created])
        XCTAssertEqual(all.map(\.commit), lines(try gitOK(["rev-list", "HEAD"], in: profile.root)))
        XCTAssertEqual(Set(all.map(\.signature)), [.good])
        XCTAssertEqual(Set(all.map(\.member)), ["alice"])
        XCTAssertEqual(Set(all.map(\.device)), ["laptop"])
        XCTAssertEqual(all.first?.records, ["vocabulary/a"])
        XCTAssertEqual(all.last?.parents, [])
        XCTAssertEqual(all.first?.parents, [all[1].commit])

        let onlyA = try profile.history.entries(record: "vocabulary/a")
        XCTAssertEqual(onlyA.map(\.action), ["deleted", "updated", "added"])
        XCTAssertEqual(onlyA.map(\.commit), lines(try gitOK(["log", "--format=%H", "--", "\(RecordPaths.file(directory: "vocabulary", id: "a"))"], in: profile.root)))
        XCTAssertEqual(try profile.history.entries(record: "logs/\(entryID)").map(\.action), ["appended"])
        XCTAssertEqual(try profile.history.entries(limit: 2).count, 2)
        XCTAssertTrue(try profile.history.entries(record: "vocabulary/never").isEmpty)
    }

    /// A merge that resolved a conflict shows what it changed on its first parent's side (issue 32:
    /// it showed `changes: []`).
    func testAMergeShowsWhatItChangedOnItsFirstParentsSide() throws {
        let alice = try makeIdentity()
        let clock = ManualClock("2026-01-01T10:00:00.000Z")
        let a = try makeProfile("a", identity: alice, clock: clock)
        try a.records.write(as: alice) { try $0.put("vocabulary", "x", data: ["label": "base", "note": "base"]) }
        let directory = sandbox.appendingPathComponent("b")
        try gitOK(["clone", "-q", a.root.path, directory.path], in: sandbox)
        let b = try Profile.open(at: directory, environment: makeEnvironment(alice, clock: clock))
        clock.advance(by: 1000)
        try a.records.write(as: alice) { try $0.put("vocabulary", "x", data: ["label": "from a", "note": "base"]) }
        clock.advance(by: 1000)
        try b.records.write(as: alice) { try $0.put("vocabulary", "x", data: ["label": "from b", "note": "b"]) }
        try gitOK(["fetch", "-q", b.root.path, "+main:refs/peers/b"], in: a.root)
        try a.sync.merge(revision: "refs/peers/b", as: alice)
        let merge = try XCTUnwrap(try a.history.entries(limit: 1).first)
        XCTAssertEqual(merge.parents.count, 2)
        XCTAssertEqual(merge.changes.map(\.record), ["vocabulary/x"])
        XCTAssertEqual(Set(merge.changes.first?.fields.map(\.field) ?? []), ["label", "note"])
        XCTAssertEqual(merge.changes.first?.fields.first { $0.field == "label" }?.new, "from b")
    }

    func testHistoryFindsALogEntryWrittenByABigImport() throws {
        // Above 50 records a commit lists a count instead of each record; the filter must still find it.
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        var records = [String]()
        for index in 0..<60 { records.append(#"{"kind":"vocabulary","id":"r\#(index)","data":{}}"#) }
        let text = #"{"records":[\#(records.joined(separator: ","))],"logs":[{"kind":"logs","id":"entry-1","data":{"e":1}}]}"#
        let result = try profile.records.importDump(try Dump.parse(Array(text.utf8), source: "dump"), as: alice)
        let importCommit = try XCTUnwrap(result.commit)
        XCTAssertEqual(try profile.history.entries(record: "vocabulary/r5").map(\.commit), [importCommit])
        XCTAssertEqual(try profile.history.entries(record: "logs/entry-1").map(\.commit), [importCommit],
                       "the import commit added logs/entry-1")
    }

    func testHistoryReportsATamperedCommitAsBad() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "a", data: ["v": 1]) }
        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        let raw = try git(["cat-file", "commit", head], in: profile.root).stdout
        let tamperedText = raw.replacingOccurrences(of: "Concord-Action: added", with: "Concord-Action: adder")
        XCTAssertNotEqual(tamperedText, raw)
        let file = sandbox.appendingPathComponent("commit.txt")
        try Data(tamperedText.utf8).write(to: file)
        let tampered = try gitOK(["hash-object", "-t", "commit", "-w", file.path], in: profile.root)
        try gitOK(["update-ref", "refs/heads/main", tampered, head], in: profile.root)
        let history = try profile.history.entries()
        XCTAssertEqual(history.first?.commit, tampered)
        XCTAssertEqual(history.first?.signature, .bad)
        XCTAssertEqual(history.last?.signature, .good)
    }

    func testListWarnsAboutUnreadableFilesAndGoesOn() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        try profile.records.write(as: alice) { tx in
            try tx.put("vocabulary", "good", data: ["v": 1])
            try tx.put("vocabulary", "bad", data: ["v": 1])
            try tx.put("vocabulary", "renamed", data: ["v": 1])
            try tx.append("logs", data: ["tap": 1])
        }
        try Data("{ nope".utf8).write(to: profile.root.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "bad"))"))
        // A valid record whose id does not match its file name is not trusted either.
        try FileManager.default.moveItem(at: profile.root.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "renamed"))"),
                                         to: profile.root.appendingPathComponent("vocabulary/\(RecordPaths.bucket("renamed"))/other.json"))
        try Data("garbage\n".utf8).write(to: profile.root.appendingPathComponent("logs/2020-01-01.jsonl"))

        let listing = try profile.records.list()
        XCTAssertEqual(listing.items.map(\.reference).filter { $0.hasPrefix("vocabulary/") }, ["vocabulary/good"])
        XCTAssertEqual(listing.items.filter { $0.kind == "logs" }.count, 1)
        XCTAssertEqual(listing.warnings.count, 3, "\(listing.warnings)")
        for path in ["\(RecordPaths.file(directory: "vocabulary", id: "bad"))", "vocabulary/\(RecordPaths.bucket("renamed"))/other.json", "logs/2020-01-01.jsonl"] {
            XCTAssertTrue(listing.warnings.contains { $0.contains(path) }, "no warning names \(path): \(listing.warnings)")
        }
        guard case .corruptRecord(let path, _)? = concordError({ try profile.records.get("vocabulary", "bad") }) else {
            return XCTFail("expected corruptRecord")
        }
        XCTAssertEqual(path, "\(RecordPaths.file(directory: "vocabulary", id: "bad"))")
        XCTAssertThrowsError(try profile.records.logEntries("logs"), "strict log reading refuses the broken day file")
    }

    /// The clock file names, on a second line, the commit the clock last looked at. A file of one
    /// line (an earlier version's) keeps working: its stamp is read, and the next write takes in the
    /// stamps of HEAD's newest commits; so does a file naming a commit this repository lacks, or
    /// one HEAD does not descend from (history rewritten).
    func testAClockFileOfOneLineOrNamingAnotherHistoryStillOrdersWrites() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice, clock: ManualClock("2026-01-01T10:00:00.000Z"))
        let clockFile = profile.root.appendingPathComponent(".git/concord/clock")
        try Data("2026-01-01T11:00:00.000Z-0000\n".utf8).write(to: clockFile)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "a", data: ["v": 1]) }
        XCTAssertEqual(try profile.records.get("vocabulary", "a").stamp.description, "2026-01-01T11:00:00.000Z-0001")
        XCTAssertEqual(lines(try String(contentsOf: clockFile, encoding: .utf8)),
                       ["2026-01-01T11:00:00.000Z-0001", try gitOK(["rev-parse", "HEAD"], in: profile.root)])

        let elsewhere = try gitOK(["-c", "user.name=x", "-c", "user.email=x@example.com", "commit-tree", "HEAD^{tree}", "-m", "elsewhere"],
                                  in: profile.root)
        for (id, seen) in [("b", elsewhere), ("c", String(repeating: "1", count: 40))] {
            try Data("2026-01-01T09:00:00.000Z-0000\n\(seen)\n".utf8).write(to: clockFile)
            try profile.records.write(as: alice) { try $0.put("vocabulary", id, data: ["v": 1]) }
            let stamp = try profile.records.get("vocabulary", id).stamp
            XCTAssertGreaterThan(stamp.description, "2026-01-01T11:00:00.000Z-0001", "written after a clock naming \(seen)")
        }
    }

    func testClockStaysMonotonicWhenTheWallClockGoesBackwards() throws {
        let alice = try makeIdentity()
        let clock = ManualClock("2026-01-01T10:00:00.500Z")
        let profile = try makeProfile(identity: alice, clock: clock)
        var stamps = [HLC]()
        for index in 0..<12 {
            clock.advance(by: -37)   // every write sees an earlier wall time than the one before
            try profile.records.write(as: alice) { try $0.put("vocabulary", "r\(index)", data: ["i": JSONValue(index)]) }
            stamps.append(try profile.records.get("vocabulary", "r\(index)").stamp)
            XCTAssertEqual(profile.clock.last(), stamps.last)
        }
        for (earlier, later) in zip(stamps, stamps.dropFirst()) {
            XCTAssertLessThan(earlier, later)
            XCTAssertLessThan(earlier.description, later.description, "string order must follow HLC order")
        }
        XCTAssertEqual(stamps.first?.wallMillis, HLClock.parseInstant("2026-01-01T10:00:00.500Z"))

        // Reopened with a clock a year behind, a log entry still lands after everything before.
        let behind = ManualClock("2025-01-01T00:00:00Z")
        let reopened = try Profile.open(at: profile.root, environment: makeEnvironment(alice, clock: behind))
        try reopened.records.write(as: alice) { try $0.append("logs", data: ["late": true]) }
        let entry = try XCTUnwrap(reopened.records.logEntries("logs").last)
        XCTAssertGreaterThan(entry.at, try XCTUnwrap(stamps.last))
        XCTAssertTrue(FileManager.default.fileExists(atPath: profile.root.appendingPathComponent("logs/2026-01-01.jsonl").path))

        // And when the wall clock jumps ahead, stamps follow it with a fresh counter.
        clock.set(HLClock.parseInstant("2026-02-01T00:00:00Z")!)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "ahead", data: [:]) }
        XCTAssertEqual(try profile.records.get("vocabulary", "ahead").stamp.description, "2026-02-01T00:00:00.000Z-0000")
    }

    func testUpdateStampIsAfterTheRecordsOwnStamp() throws {
        // A record stamped in the future (e.g. written by a device with a fast clock) is still
        // overwritten with a later stamp.
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let future = #"""
            {
              "data": {},
              "device": "fast",
              "id": "f",
              "kind": "vocabulary",
              "updatedAt": "2030-01-01T00:00:00.000Z-0005",
              "updatedBy": "alice"
            }

            """#
        try FileManager.default.createDirectory(at: profile.root.appendingPathComponent("vocabulary/\(RecordPaths.bucket("f"))"),
                                                withIntermediateDirectories: true)
        try Data(future.utf8).write(to: profile.root.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "f"))"))
        try gitOK(["add", "\(RecordPaths.file(directory: "vocabulary", id: "f"))"], in: profile.root)
        try gitOK(["-c", "user.name=x", "-c", "user.email=x@y", "commit", "-q", "-m", "future"], in: profile.root)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "f", data: ["v": 1]) }
        XCTAssertEqual(try profile.records.get("vocabulary", "f").stamp.description, "2030-01-01T00:00:00.000Z-0006")
    }
}
