import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Dumps: parsing, importing (once), exporting.
final class DumpTests: KitTestCase {
    private func sampleDump(records: Int = 100, logs: Int = 20) throws -> Dump {
        var items = [String]()
        for index in 0..<records {
            items.append(#"{"kind":"vocabulary","id":"r\#(index)","data":{"n":\#(index)}}"#)
        }
        var entries = [String]()
        for index in 0..<logs {
            entries.append(#"{"kind":"logs","data":{"event":\#(index)}}"#)
        }
        let text = #"{"records":[\#(items.joined(separator: ","))],"logs":[\#(entries.joined(separator: ","))]}"#
        return try Dump.parse(Array(text.utf8), source: "sample.json")
    }

    func testParseGivesDerivedLogIDsThatDependOnlyOnKindAndData() throws {
        let a = try Dump.parse(Array(#"{"logs":[{"kind":"logs","data":{"a":1,"b":2}}]}"#.utf8), source: "a")
        let b = try Dump.parse(Array(#"{"logs":[{"data":{"b":2,"a":1},"kind":"logs"}]}"#.utf8), source: "b")
        let c = try Dump.parse(Array(#"{"logs":[{"kind":"logs","data":{"a":1,"b":3}}]}"#.utf8), source: "c")
        XCTAssertEqual(a.logs.first?.id, b.logs.first?.id, "key order must not matter")
        XCTAssertNotEqual(a.logs.first?.id, c.logs.first?.id)
        XCTAssertTrue(RecordID.isValid(a.logs.first?.id ?? ""))
        let given = try Dump.parse(Array(#"{"logs":[{"kind":"logs","id":"e1","data":{}}]}"#.utf8), source: "d")
        XCTAssertEqual(given.logs.first?.id, "e1")
    }

    func testParseErrorsNameTheSourceAndPlace() {
        func message(_ text: String) -> String {
            do {
                _ = try Dump.parse(Array(text.utf8), source: "dump.json")
                XCTFail("expected \(text) to be refused")
                return ""
            } catch {
                return (error as? LocalizedError)?.errorDescription ?? "\(error)"
            }
        }
        XCTAssertTrue(message(#"{"records":[1]}"#).contains("records[0]"))
        XCTAssertTrue(message(#"{"records":{}}"#).contains(#""records""#))
        XCTAssertTrue(message(#"{"records":[{"kind":"vocabulary","data":{}}]}"#).contains(#""id""#))
        XCTAssertTrue(message(#"{"logs":[{"kind":"logs","data":[]}]}"#).contains("logs[0]"))
        XCTAssertTrue(message(#"{"other":[]}"#).contains(#""other""#))
        XCTAssertTrue(message("[]").contains("dump.json"))
        XCTAssertTrue(message("{").contains("dump.json"))
        for text in [#"{"records":[1]}"#, "{"] { XCTAssertTrue(message(text).contains("dump.json")) }

        // A dump is read front to back, but a syntax error anywhere (a file cut short) is what is
        // reported, not a wrong entry met before it.
        let cutShort = #"{"records":[{"kind":5,"id":"a","data":{}},{"kind":"vocabulary","id":"b","data":{"#
        XCTAssertTrue(message(cutShort).contains("invalid JSON") && message(cutShort).contains("line 1"), message(cutShort))
        XCTAssertTrue(message(#"{"records":[{"kind":5,"id":"a","data":{}}]}"#).contains(#"records[0] needs a string "kind""#))
        XCTAssertTrue(message("[1] x").contains("unexpected character 'x'"), message("[1] x"))
        XCTAssertTrue(message(#"{"extra":1,"records":["#).contains("invalid JSON"), message(#"{"extra":1,"records":["#))
    }

    /// A large `records` array is read in two halves on two threads; what it reads, and the errors
    /// it reports (with the entry's place), are those of reading it in order.
    func testALargeDumpReadInHalvesGivesTheSameRecordsAndErrors() throws {
        let items = (0..<4_000).map { #"{"kind":"vocabulary","id":"r\#($0)","data":{"label":"word \#($0)","n":\#($0)}}"# }
        let text = #"{"records":["# + items.joined(separator: ",") + "]}"
        XCTAssertGreaterThan(text.utf8.count, 256 << 10, "large enough to be read in halves")
        let dump = try Dump.parse(Array(text.utf8), source: "big.json")
        XCTAssertEqual(dump.records.map(\.id), (0..<4_000).map { "r\($0)" })
        XCTAssertEqual(dump.records[2_500].data, ["label": "word 2500", "n": 2500])
        XCTAssertEqual(dump.records[2_500].canonicalData, Record.canonicalData(["label": "word 2500", "n": 2500]))

        var broken = items
        broken[2_000] = #"{"kind":"vocabulary","data":{}}"#
        XCTAssertThrowsError(try Dump.parse(Array((#"{"records":["# + broken.joined(separator: ",") + "]}").utf8), source: "big.json")) { error in
            let text = (error as? LocalizedError)?.errorDescription ?? ""
            XCTAssertTrue(text.contains(#"records[2000] needs a string "id""#), text)
        }
    }

    func testImportIsOneCommitAndIdempotent() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let dump = try sampleDump()
        let before = try gitOK(["rev-parse", "HEAD"], in: profile.root)

        let first = try profile.records.importDump(dump, as: alice)
        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        XCTAssertEqual(first.commit, head)
        XCTAssertEqual(first.changes.count, 120)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD~1"], in: profile.root), before)
        XCTAssertEqual(try profile.records.list(kind: "vocabulary").items.count, 100)
        XCTAssertEqual(try profile.records.logEntries("logs").count, 20)
        XCTAssertEqual(try git(["fsck", "--full"], in: profile.root).status, 0)
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile.root), "")

        let second = try profile.records.importDump(dump, as: alice)
        XCTAssertNil(second.commit)
        XCTAssertEqual(second.changes, [])
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head)
        XCTAssertEqual(try profile.records.logEntries("logs").count, 20)
    }

    func testImportChecksEverythingBeforeWriting() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        let bad = try Dump.parse(Array(#"{"records":[{"kind":"vocabulary","id":"ok","data":{}},{"kind":"nope","id":"x","data":{}}]}"#.utf8),
                                 source: "bad.json")
        guard case .unknownKind(let kind, _)? = concordError({ try profile.records.importDump(bad, as: alice) }) else {
            return XCTFail("expected unknownKind")
        }
        XCTAssertEqual(kind, "nope")
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head)
        XCTAssertEqual(try profile.records.list().items, [])
    }

    func testExportImportRoundTrip() throws {
        let alice = try makeIdentity()
        let source = try makeProfile("source", identity: alice)
        try source.records.write(as: alice) { tx in
            try tx.put("vocabulary", "a", data: ["word": "a", "nested": ["x": [1, 2]]])
            try tx.put("vocabulary", "b", data: ["word": "b"])
            try tx.put("settings", "voice", data: ["rate": .number("0.90")])
            try tx.append("logs", data: ["tap": "a"])
        }
        try source.records.write(as: alice) { try $0.delete("vocabulary", "b") }
        let exported = try source.records.exportDump()
        XCTAssertEqual(exported.records.map { "\($0.kind)/\($0.id)" }.sorted(), ["settings/voice", "vocabulary/a"])
        XCTAssertEqual(exported.logs.count, 1)
        XCTAssertEqual(exported.logs.first?.by, "alice")

        // Through bytes, into a fresh profile, and out again.
        let reparsed = try Dump.parse(exported.canonicalBytes(), source: "export")
        let target = try makeProfile("target", identity: alice)
        try target.records.importDump(reparsed, as: alice)
        let again = try target.records.exportDump()
        XCTAssertEqual(again.records, exported.records)
        XCTAssertEqual(again.logs.map(\.id), exported.logs.map(\.id))
        XCTAssertEqual(again.logs.map(\.data), exported.logs.map(\.data))
        XCTAssertNil(try source.records.importDump(reparsed, as: alice).commit, "a profile's own export adds nothing")
    }
}
