import XCTest

@testable import ConcordModel

final class LogEntryTests: XCTestCase {
    func entry(_ id: String, _ ms: Int64, _ counter: Int = 0, data: [String: JSONValue] = ["word": "hi"]) throws -> LogEntry {
        LogEntry(id: try RecordID(id), at: HLC(wallMillis: ms, counter: counter), by: "ada", device: "tablet", data: data)
    }

    func testLineEncoding() throws {
        let e = try entry("e1", 1_767_261_600_001)
        XCTAssertEqual(
            text(e.encodedLine()),
            #"{"at":"2026-01-01T10:00:00.001Z-0000","by":"ada","data":{"word":"hi"},"device":"tablet","id":"e1"}"#)
        XCTAssertEqual(try LogEntry.decode(line: e.encodedLine()), e)
    }

    func testOrdering() throws {
        let a = try entry("b", 10), b = try entry("a", 10, 1), c = try entry("a", 11), d = try entry("c", 10)
        XCTAssertEqual([c, d, b, a].sorted(), [a, d, b, c])
    }

    func testEncodeSortsAndDeduplicates() throws {
        let first = try entry("x", 5)
        let later = try entry("x", 9, data: ["word": "other"])
        let y = try entry("y", 1)
        let file = LogEntry.encodeLogFile([later, first, y, first])
        XCTAssertEqual(try LogEntry.parseLogFile(file), [y, first])
        XCTAssertEqual(file.last, 0x0A)
        // Order of input does not matter, even for conflicting same-id entries with the same stamp.
        let twin = try entry("x", 5, data: ["word": "twin"])
        XCTAssertEqual(LogEntry.encodeLogFile([first, twin, y]), LogEntry.encodeLogFile([y, twin, first]))
        XCTAssertEqual(LogEntry.encodeLogFile([]), [])
    }

    func testParseSkipsBlankLines() throws {
        let a = try entry("a", 1), b = try entry("b", 2)
        let bytes = Array("\n".utf8) + a.encodedLine() + Array("\r\n  \n\n".utf8) + b.encodedLine()
        XCTAssertEqual(try LogEntry.parseLogFile(bytes), [a, b])
    }

    func testParseErrorsNameTheLine() throws {
        let a = try entry("a", 1)
        let bytes = a.encodedLine() + [0x0A, 0x0A] + Array(#"{"at":1,"by":"a","data":{},"device":"d","id":"x"}"#.utf8) + [0x0A]
        XCTAssertEqual(
            modelError { () throws(ModelError) in try LogEntry.parseLogFile(bytes) },
            .malformedRecord(what: #"log line 3: field "at""#, why: "must be a string"))
        let broken = a.encodedLine() + Array("\n{\"at\"".utf8)
        guard case .malformedRecord(let what, let why) = modelError({ () throws(ModelError) in try LogEntry.parseLogFile(broken) })
        else { return XCTFail("expected malformedRecord") }
        XCTAssertEqual(what, "log line 2")
        XCTAssertTrue(why.hasPrefix("is not valid JSON (column 6:"), why)
        let extra = Array(#"{"at":"2026-01-01T10:00:00.001Z-0000","by":"a","data":{},"device":"d","id":"x","kind":"k"}"#.utf8)
        guard case .malformedRecord(let what2, _) = modelError({ () throws(ModelError) in try LogEntry.parseLogFile(extra) })
        else { return XCTFail("expected malformedRecord") }
        XCTAssertEqual(what2, #"log line 1: field "kind""#)
    }

    /// An imported entry (format 6): the importer's, with who first wrote it as `origin`. Its identity
    /// includes the origin, so one importer's entries of one id from two origins are two entries, and
    /// nobody else's entry is touched; `origin` is a write stamp, exactly `{"at","by","device"}`.
    func testAnImportedEntryCarriesItsOrigin() throws {
        let origin = WriteStamp(at: HLC(wallMillis: 1_740_819_600_000), member: "therapist", device: "ipad")
        var imported = try entry("e1", 1_767_261_600_001)
        imported.origin = origin
        XCTAssertEqual(
            text(imported.encodedLine()),
            #"{"at":"2026-01-01T10:00:00.001Z-0000","by":"ada","data":{"word":"hi"},"device":"tablet","id":"e1","#
                + #""origin":{"at":"2025-03-01T09:00:00.000Z-0000","by":"therapist","device":"ipad"}}"#)
        XCTAssertEqual(try LogEntry.decode(line: imported.encodedLine()), imported)
        XCTAssertEqual(imported.written, origin)
        XCTAssertEqual(try entry("e1", 5).written, WriteStamp(at: HLC(wallMillis: 5), member: "ada", device: "tablet"))

        var other = imported
        other.origin = WriteStamp(at: origin.at, member: "parent", device: "phone")
        let native = try entry("e1", 1_767_261_600_001)
        XCTAssertEqual(Set([imported, other, native].map(\.identity)).count, 3)
        XCTAssertEqual(try LogEntry.parseLogFile(LogEntry.encodeLogFile([other, imported, native, imported])).count, 3)

        let extra = Array((#"{"at":"2026-01-01T10:00:00.001Z-0000","by":"a","data":{},"device":"d","id":"x","#
            + #""origin":{"at":"2025-03-01T09:00:00.000Z-0000","by":"b","device":"c","via":"x"}}"#).utf8)
        guard case .malformedRecord(let what, _) = modelError({ () throws(ModelError) in try LogEntry.parseLogFile(extra) })
        else { return XCTFail("expected malformedRecord") }
        XCTAssertTrue(what.contains("origin"), what)
        let day = ProfilePathRules.File.logDay(try RecordKind(name: "logs", policy: .append, writers: .user), day: "2026-01-01")
        XCTAssertNil(ProfilePathRules.contentProblem(of: day, bytes: LogEntry.encodeLogFile([imported, other])))
        XCTAssertEqual(ProfilePathRules.contentProblem(of: day, bytes: LogEntry.encodeLogFile([imported]), logOrigins: false),
                       "log entry e1 by ada has an origin, which needs data format 6 (this profile's is older)")
    }

    func testDayFileName() {
        XCTAssertEqual(LogEntry.dayFileName(for: HLC(wallMillis: 1_767_261_600_001)), "2026-01-01.jsonl")
        XCTAssertEqual(LogEntry.dayFileName(for: HLC(parsing: "2024-02-29T23:59:59.999Z-0003")!), "2024-02-29.jsonl")
        XCTAssertEqual(LogEntry.dayFileName(for: HLC(parsing: "2024-03-01T00:00:00.000Z-0000")!), "2024-03-01.jsonl")
    }

    func testManyEntriesRoundTrip() throws {
        var rng = SplitMix64(seed: 99)
        var entries: [LogEntry] = []
        for i in 0..<2000 {
            entries.append(try entry("e\(i)", Int64.random(in: 0..<1_000_000, using: &rng), data: ["i": JSONValue(i)]))
        }
        let file = LogEntry.encodeLogFile(entries.shuffled(using: &rng))
        XCTAssertEqual(try LogEntry.parseLogFile(file), entries.sorted())
    }
}
