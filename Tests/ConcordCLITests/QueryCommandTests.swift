import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `concord query`: conditions, order, pages, counts and JSON from the record index, clear
/// refusals; and `concord ls` listing from the index as it listed from the files.
final class QueryCommandTests: AliceProfileTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        let records = (0..<8).map { index in
            #"{"kind":"vocabulary","id":"w\#(index)","data":{"page":\#(index % 3),"position":\#(10 - index),"label":"word\#(index)"}}"#
        }
        let dump = try writeFile("dump.json", #"{"records":["# + records.joined(separator: ",") + "]}")
        try concordOK(["import", "--file", dump.path], as: alice, in: profile)
        try concordOK(["put", "vocabulary/text", "--json", #"{"page":"1","label":"page as text"}"#], as: alice, in: profile)
    }

    func testConditionsOrderAndPages() throws {
        XCTAssertEqual(try concordOKResult(["query", "vocabulary", "--where", "page=1", "--order-by", "position"], as: alice, in: profile).stdoutLines,
                       [#"vocabulary/w7 {"label":"word7","page":1,"position":3}"#,
                        #"vocabulary/w4 {"label":"word4","page":1,"position":6}"#,
                        #"vocabulary/w1 {"label":"word1","page":1,"position":9}"#])
        let ids = { (arguments: [String]) throws -> [String] in
            try self.concordOKResult(["query", "vocabulary"] + arguments, as: self.alice, in: self.profile).stdoutLines.map {
                String($0.split(separator: " ")[0].dropFirst("vocabulary/".count))
            }
        }
        XCTAssertEqual(try ids(["--where", #"page="1""#]), ["text"], "a quoted value is a string")
        XCTAssertEqual(try ids(["--where", "page>=1", "--where", "position<6", "--order-by", "page", "--desc"]), ["w5", "w7"])
        XCTAssertEqual(try ids(["--where", "label^=word", "--order-by", "position", "--limit", "3", "--offset", "2"]), ["w5", "w4", "w3"])
        XCTAssertEqual(try ids(["--where", "page!=0", "--order-by", "label", "--limit", "2"]), ["w1", "w2"])
        XCTAssertEqual(try ids(["--where", "label=page as text"]), ["text"], "an unquoted value that is not JSON is a string")
        XCTAssertEqual(try concordOK(["query", "vocabulary", "--where", "page<2", "--count"], as: alice, in: profile), "6")
        XCTAssertEqual(try JSONValue.parse(try concordOK(["query", "vocabulary", "--count", "--json"], as: alice, in: profile)),
                       .object(["count": .number("9")]))
    }

    func testJSONOutputIsTheRecordFiles() throws {
        let output = try concordOK(["query", "vocabulary", "--where", "label=word2", "--json"], as: alice, in: profile)
        let record = try concordOK(["get", "vocabulary/w2"], as: alice, in: profile)
        guard case .array(let items) = try JSONValue.parse(output), items.count == 1 else { return XCTFail(output) }
        XCTAssertEqual(items[0], try JSONValue.parse(record))
    }

    func testTheIndexFollowsWritesAndPlainGitCommits() throws {
        XCTAssertEqual(try concordOK(["query", "vocabulary", "--count"], as: alice, in: profile), "9")
        try concordOK(["rm", "vocabulary/w0"], as: alice, in: profile)
        XCTAssertEqual(try concordOK(["query", "vocabulary", "--count"], as: alice, in: profile), "8")
        // The branch moved back by git: the next query follows it.
        try gitOK(["reset", "-q", "--hard", "HEAD~1"], in: profile)
        XCTAssertEqual(try concordOK(["query", "vocabulary", "--count"], as: alice, in: profile), "9")
    }

    func testRefusals() throws {
        try assertRefusedWithoutChange(["query", "recipes"], as: alice, profile: profile, mentions: [#"unknown kind "recipes""#])
        try assertRefusedWithoutChange(["query", "logs"], as: alice, profile: profile, mentions: ["logs", "log kind"])
        // Usage mistakes: exit 2, the mistake and the usage.
        for (arguments, expected) in [(["--where", "page"], "--where page: write FIELD=VALUE"), (["--where", "=3"], "--where =3: write"),
                                      (["--limit=-1"], "--limit must be 0 or more")] {
            let result = try concord(["query", "vocabulary"] + arguments, as: alice, in: profile)
            XCTAssertEqual(result.status, 2, result.summary)
            XCTAssertTrue(result.stderr.contains(expected), result.summary)
            XCTAssertEqual(result.stdout, "")
        }
        let help = try concordOKResult(["query", "--help"], as: nil)
        XCTAssertTrue(help.stdout.contains("USAGE: concord query"), help.stdout)
        XCTAssertTrue(help.stdout.contains("--order-by"), help.stdout)
    }

    /// `ls` reads the index, and a file changed by hand (added, or edited) is still read from the
    /// working tree: the same lines and warnings as a listing of the files.
    func testLsListsFromTheIndexAsFromTheFiles() throws {
        try concordOK(["append", "logs", "--json", #"{"tapped":"w1"}"#], as: alice, in: profile)
        try concordOK(["rm", "vocabulary/w3"], as: alice, in: profile)
        let listed = try concordOKResult(["ls"], as: alice, in: profile).stdoutLines
        let (items, _) = try filesListing()
        XCTAssertEqual(listed, items)
        XCTAssertEqual(listed.filter { $0.hasPrefix("vocabulary/") },
                       ["vocabulary/text"] + [0, 1, 2, 4, 5, 6, 7].map { "vocabulary/w\($0)" })
        // Hand edits: a new file, a corrupt one, a deleted one.
        let bucket = profile.appendingPathComponent("vocabulary/\(RecordPaths.bucket("hand"))")
        try FileManager.default.createDirectory(at: bucket, withIntermediateDirectories: true)
        let w5 = try Data(contentsOf: profile.appendingPathComponent(RecordPaths.file(directory: "vocabulary", id: "w5")))
        try Data(String(decoding: w5, as: UTF8.self).replacingOccurrences(of: "\"w5\"", with: "\"hand\"").utf8)
            .write(to: profile.appendingPathComponent(RecordPaths.file(directory: "vocabulary", id: "hand")))
        try Data("{".utf8).write(to: profile.appendingPathComponent(RecordPaths.file(directory: "vocabulary", id: "w6")))
        try FileManager.default.removeItem(at: profile.appendingPathComponent(RecordPaths.file(directory: "vocabulary", id: "w7")))
        let ls = try concord(["ls", "vocabulary"], as: alice, in: profile)
        let (expected, warnings) = try filesListing(kind: "vocabulary")
        XCTAssertEqual(ls.status, 0, ls.summary)
        XCTAssertEqual(ls.stdoutLines, expected)
        XCTAssertTrue(ls.stdoutLines.contains("vocabulary/hand") && !ls.stdoutLines.contains("vocabulary/w6")
                      && !ls.stdoutLines.contains("vocabulary/w7"), ls.stdout)
        XCTAssertEqual(ls.stderrLines, warnings.map { "concord: warning: \($0)" })
        XCTAssertEqual(warnings.count, 1)
    }

    /// The listing of the files, as `ls` made it before the index (`Records.list`).
    private func filesListing(kind: String? = nil) throws -> (items: [String], warnings: [String]) {
        let listing = try Profile.open(at: profile, environment: ConcordEnvironment(home: alice.home, wallClock: { 0 })).records.list(kind: kind)
        return (listing.items.map(\.reference), listing.warnings)
    }
}
