import XCTest

@testable import ConcordModel

/// The `append` policy on JSON Lines logs.
final class MergeLogTests: XCTestCase {
    func entry(_ id: String, _ time: String, counter: Int = 0, by member: String = "ada", on device: String = "tablet",
               data: [String: JSONValue] = ["word": "hi"]) throws -> LogEntry {
        LogEntry(id: try RecordID(id), at: MergeFixture.hlc(time, counter: counter), by: member, device: device, data: data)
    }

    /// Device A taps at 10:00:00.000, device B at 10:00:00.001: both entries, in that order, either way.
    func testStoryBothTapsAreKeptInOrder() throws {
        let earlier = try entry("e0", "09:00:00.000")
        let a = try entry("tap-a", "10:00:00.000", on: "A", data: ["word": "more"])
        let b = try entry("tap-b", "10:00:00.001", by: "bob", on: "B", data: ["word": "stop"])
        let base = LogEntry.encodeLogFile([earlier])
        let ours = LogEntry.encodeLogFile([earlier, a])
        let theirs = LogEntry.encodeLogFile([earlier, b])
        let (bytes, conflicts) = try MergeFixture.mergeBothWays(.append, base: base, ours: ours, theirs: theirs)
        XCTAssertEqual(
            text(bytes),
            #"""
            {"at":"2026-01-01T09:00:00.000Z-0000","by":"ada","data":{"word":"hi"},"device":"tablet","id":"e0"}
            {"at":"2026-01-01T10:00:00.000Z-0000","by":"ada","data":{"word":"more"},"device":"A","id":"tap-a"}
            {"at":"2026-01-01T10:00:00.001Z-0000","by":"bob","data":{"word":"stop"},"device":"B","id":"tap-b"}

            """#)
        XCTAssertEqual(conflicts, [])
    }

    func testBaseIsIgnoredAndNothingIsRemoved() throws {
        let x = try entry("x", "10:00:00.000"), y = try entry("y", "10:00:00.000"), z = try entry("z", "09:00:00.000")
        // Theirs lacks x (as if removed since base): append never removes, so x stays.
        let base = LogEntry.encodeLogFile([x])
        let ours = LogEntry.encodeLogFile([x, y])
        let theirs = LogEntry.encodeLogFile([z])
        let (bytes, _) = try MergeFixture.mergeBothWays(.append, base: base, ours: ours, theirs: theirs)
        XCTAssertEqual(try LogEntry.parseLogFile(bytes), [z, x, y], "sorted by (at, id)")
        XCTAssertEqual(try MergeFixture.mergeBothWays(.append, base: nil, ours: ours, theirs: theirs).bytes, bytes)
    }

    /// The sides hold different entries with one identity (a hand-made line: Concord never writes
    /// one): ours, the main line's, is kept whatever its stamp, so a side stamped earlier rewrites no
    /// published entry (the seventh red-team pass, F1).
    func testSameIDDifferentContentKeepsOurs() throws {
        let first = try entry("dup", "10:00:00.000", data: ["word": "one"])
        let twin = try entry("dup", "10:00:00.000", data: ["word": "two"])
        let later = try entry("dup", "10:00:05.000", data: ["word": "three"])
        let other = try entry("o", "08:00:00.000")
        func merged(ours: [LogEntry], theirs: [LogEntry]) throws -> [LogEntry] {
            guard case .merged(let bytes, let conflicts) = RecordMerge.merge(policy: .append, base: nil, ours: LogEntry.encodeLogFile(ours),
                                                                             theirs: LogEntry.encodeLogFile(theirs)) else {
                throw MergeFixture.Unexpected.unresolved
            }
            XCTAssertEqual(conflicts, [])
            return try LogEntry.parseLogFile(bytes)
        }
        XCTAssertEqual(try merged(ours: [first, other], theirs: [twin]), [other, first])
        XCTAssertEqual(try merged(ours: [twin], theirs: [first, other]), [other, twin])
        XCTAssertEqual(try merged(ours: [later], theirs: [twin, other]), [other, later], "an earlier stamp on the side wins nothing")
        XCTAssertEqual(try merged(ours: [twin, other], theirs: [later]), [other, twin])
    }

    /// An entry is its author's id: a member who reuses another's entry id (stamped earlier, so it
    /// would win a one-per-id choice) adds an entry of their own and shadows nothing; both stay,
    /// whichever side is ours. A log file holding one author's id twice is refused.
    func testEntriesOfTwoAuthorsWithOneIDBothStay() throws {
        let alices = try entry("q1", "10:00:00.000", by: "alice", data: ["word": "question"])
        let shadow = try entry("q1", "09:00:00.000", by: "mallory", data: ["word": "forged"])
        let (bytes, _) = try MergeFixture.mergeBothWays(
            .append, base: nil, ours: LogEntry.encodeLogFile([alices]), theirs: LogEntry.encodeLogFile([shadow]))
        XCTAssertEqual(try LogEntry.parseLogFile(bytes), [shadow, alices])
        let day = ProfilePathRules.File.logDay(try RecordKind(name: "logs", policy: .append, writers: .user), day: "2026-01-01")
        XCTAssertNil(ProfilePathRules.contentProblem(of: day, bytes: bytes))
        let twice = shadow.encodedLine() + [0x0A] + (try entry("q1", "09:30:00.000", by: "mallory")).encodedLine() + [0x0A]
        let problem = ProfilePathRules.contentProblem(of: day, bytes: twice)
        XCTAssertEqual(problem, "log entry q1 by mallory appears twice (an entry is its author's id, once)")
    }

    /// One member importing entries of one id from two origins on two devices: both stay after the
    /// merge, whichever side is ours (an imported entry's identity includes its origin).
    func testImportedEntriesOfOneIDFromTwoOriginsBothStay() throws {
        var therapists = try entry("d-1", "10:00:00.000", by: "alice", data: ["tapped": "more"])
        therapists.origin = WriteStamp(at: HLC(wallMillis: 1_740_819_600_000), member: "therapist", device: "ipad")
        var parents = try entry("d-1", "10:00:00.000", by: "alice", data: ["tapped": "more"])
        parents.origin = WriteStamp(at: HLC(wallMillis: 1_740_819_600_000), member: "parent", device: "phone")
        let (bytes, _) = try MergeFixture.mergeBothWays(
            .append, base: nil, ours: LogEntry.encodeLogFile([therapists]), theirs: LogEntry.encodeLogFile([parents]))
        XCTAssertEqual(Set(try LogEntry.parseLogFile(bytes).compactMap(\.origin?.member)), ["therapist", "parent"])
    }

    func testUnsortedAndBlankLinesComeOutCanonical() throws {
        let a = try entry("a", "10:00:00.000"), b = try entry("b", "11:00:00.000"), c = try entry("c", "12:00:00.000")
        let messy = b.encodedLine() + Array("\n\n".utf8) + a.encodedLine()  // unsorted, blank line, no final newline
        let (bytes, _) = try MergeFixture.mergeBothWays(.append, base: nil, ours: messy, theirs: LogEntry.encodeLogFile([c]))
        XCTAssertEqual(bytes, LogEntry.encodeLogFile([a, b, c]))
        // An empty side contributes nothing.
        XCTAssertEqual(try MergeFixture.mergeBothWays(.append, base: nil, ours: [], theirs: messy).bytes, LogEntry.encodeLogFile([a, b]))
    }

    func testUnparseableLogIsUnresolved() throws {
        let good = LogEntry.encodeLogFile([try entry("a", "10:00:00.000")])
        let bad = good + Array(#"{"at":"yesterday","by":"a","data":{},"device":"d","id":"x"}"#.utf8) + [0x0A]
        guard case .unresolved(let reason) = RecordMerge.merge(policy: .append, base: nil, ours: good, theirs: bad) else {
            return XCTFail("expected unresolved")
        }
        XCTAssertTrue(reason.hasPrefix(#"theirs is not a valid log file: malformed record: log line 2: field "at""#), reason)
        guard case .unresolved(let oursReason) = RecordMerge.merge(policy: .append, base: good, ours: Array("{".utf8), theirs: []) else {
            return XCTFail("expected unresolved")
        }
        XCTAssertTrue(oursReason.hasPrefix("ours is not a valid log file: malformed record: log line 1"), oursReason)
    }
}
