import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// The everyday session: identity, init, put/get/ls/rm, append, export/import, log.
final class HappyPathTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    func testIdentityNewAndShow() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let show = try concordOKResult(["identity", "show", "--json"], as: alice)
        let object = try XCTUnwrap(parseJSON(show.stdout) as? [String: Any])
        XCTAssertEqual(object["member"] as? String, "alice")
        XCTAssertEqual(object["device"] as? String, "laptop")
        XCTAssertEqual(object["home"] as? String, alice.home.path)
        let publicKey = try XCTUnwrap(object["publicKey"] as? String)
        XCTAssertTrue(publicKey.hasPrefix("ssh-ed25519 AAAA"), publicKey)

        // --public-key prints the key line only, and ssh-keygen agrees on its fingerprint.
        let line = try concordOKResult(["identity", "show", "--public-key"], as: alice)
        XCTAssertEqual(line.stdout, publicKey + "\n")
        let keyFile = try writeFile("alice.pub", line.stdout)
        let fingerprint = try ProcessRunner.run("/usr/bin/ssh-keygen", ["-l", "-f", keyFile.path], environment: isolatedEnvironment(home: sandbox))
        XCTAssertEqual(fingerprint.status, 0, fingerprint.summary)
        XCTAssertTrue(fingerprint.stdout.contains(try XCTUnwrap(object["fingerprint"] as? String)), fingerprint.stdout)
    }

    func testDefaultHomeIsDotConcordUnderHOME() throws {
        // Without CONCORD_HOME the identity lives in ~/.concord, and ~ is $HOME (the sandbox here).
        let expected = sandbox.appendingPathComponent(".concord")
        let person = TestDevice(member: "alice", device: "laptop", home: expected)
        try concordOK(["identity", "new", "--name", "alice", "--device", "laptop"], as: person)
        let show = try concord(["identity", "show", "--json"], as: nil)   // read-only: safe even if HOME is ignored
        XCTAssertEqual(show.status, 0, "with HOME=\(sandbox.path), ~/.concord must be \(expected.path): \(show.summary)")
        if show.status == 0 {
            XCTAssertEqual((parseJSON(show.stdout) as? [String: Any])?["home"] as? String, expected.path)
        }
    }

    func testInitJSONListsTheTemplateKinds() throws {
        let alice = try makeDevice("alice")
        let directory = sandbox.appendingPathComponent("board")
        let result = try concordOKResult(["init", directory.path, "--name", "Sam's board", "--template", "aac", "--json"], as: alice)
        let object = try XCTUnwrap(parseJSON(result.stdout) as? [String: Any])
        XCTAssertEqual(object["name"] as? String, "Sam's board")
        XCTAssertEqual(object["path"] as? String, directory.path)
        XCTAssertEqual(object["kinds"] as? [String], ["logs", "settings", "vocabulary"])
        XCTAssertNotNil(object["id"] as? String)
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.appendingPathComponent(".concord/profile.json").path))
        XCTAssertEqual(try commits(directory).count, 1, "init makes exactly one commit")
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: directory), "")
    }

    func testPutGetPrintsCanonicalRecordBytes() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let profile = try makeProfile(owner: alice)
        // Keys out of order, a number lexeme to keep, an escape, a non-ASCII letter, nesting.
        let input = #"{"word":"puzzle","n":1.50,"z":{"b":[1,2],"a":{}},"quote":"say \"hi\"\tnow","accent":"é","list":[]}"#
        let put = try concordOKResult(["put", "vocabulary/puzzle", "--json", input], as: alice, in: profile)
        XCTAssertTrue(put.stdout.hasPrefix("vocabulary/puzzle: added\n"), put.stdout)

        let get = try concordOKResult(["get", "vocabulary/puzzle"], as: alice, in: profile)
        let stamp = try XCTUnwrap(get.stdout.range(of: #""updatedAt": "[^"]*""#, options: .regularExpression)
            .map { String(get.stdout[$0].dropFirst(14).dropLast()) })
        XCTAssertTrue(stamp.hasPrefix(fixedClock + "-"), stamp)
        XCTAssertEqual(stamp.count, fixedClock.count + 5, "HLC form is <instant>-cccc: \(stamp)")
        let expected = """
            {
              "data": {
                "accent": "é",
                "list": [],
                "n": 1.50,
                "quote": "say \\"hi\\"\\tnow",
                "word": "puzzle",
                "z": {
                  "a": {},
                  "b": [
                    1,
                    2
                  ]
                }
              },
              "device": "laptop",
              "id": "puzzle",
              "kind": "vocabulary",
              "updatedAt": "\(stamp)",
              "updatedBy": "alice"
            }

            """
        XCTAssertEqual(get.stdout, expected)
        // The file in the working tree holds exactly those bytes, and git has the same blob.
        let onDisk = try Data(contentsOf: profile.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "puzzle"))"))
        XCTAssertEqual(onDisk, get.stdoutData)
        XCTAssertEqual(try gitOK(["show", "HEAD:\(RecordPaths.file(directory: "vocabulary", id: "puzzle"))"], in: profile) + "\n", get.stdout)

        // Putting the same data again changes nothing.
        let head = try gitOK(["rev-parse", "HEAD"], in: profile)
        let again = try concordOKResult(["put", "vocabulary/puzzle", "--json", input], as: alice, in: profile)
        XCTAssertEqual(again.stdout, "vocabulary/puzzle: unchanged\n")
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile), head)
    }

    func testSessionLsRmAppendLogAndJSON() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let profile = try makeProfile(owner: alice)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"word":"puzzle"}"#], as: alice, in: profile)
        let dataFile = try writeFile("apple.json", #"{"word":"apple"}"#)
        try concordOK(["put", "vocabulary/apple", "--file", dataFile.path], as: alice, in: profile)
        try concordOK(["put", "vocabulary/apple", "--json", #"{"word":"apple","color":"red"}"#], as: alice, in: profile)

        XCTAssertEqual(try concordOKResult(["ls"], as: alice, in: profile).stdoutLines, ["vocabulary/apple", "vocabulary/puzzle"])
        let lsJSON = try concordOKResult(["ls", "vocabulary", "--json"], as: alice, in: profile)
        let listed = try XCTUnwrap(parseJSON(lsJSON.stdout) as? [[String: String]])
        XCTAssertEqual(listed, [["kind": "vocabulary", "id": "apple"], ["kind": "vocabulary", "id": "puzzle"]])

        // rm leaves a tombstone: get says "no record", ls no longer lists it.
        let rm = try concordOKResult(["rm", "vocabulary/puzzle"], as: alice, in: profile)
        XCTAssertTrue(rm.stdout.hasPrefix("vocabulary/puzzle: deleted\n"), rm.stdout)
        assertRefusal(try concord(["get", "vocabulary/puzzle"], as: alice, in: profile), mentions: ["no record", "vocabulary/puzzle"])
        XCTAssertEqual(try concordOKResult(["ls", "vocabulary"], as: alice, in: profile).stdoutLines, ["vocabulary/apple"])
        let tombstone = try XCTUnwrap(parseJSON(try String(contentsOf: profile.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "puzzle"))"),
                                                             encoding: .utf8)) as? [String: Any])
        XCTAssertEqual(tombstone["deleted"] as? Bool, true)
        XCTAssertEqual(tombstone["deletedBy"] as? String, "alice")
        XCTAssertNil(tombstone["data"])

        // append prints the new entry's id; ls logs shows it; the day file holds one line for it.
        let append = try concordOKResult(["append", "logs", "--json", #"{"tapped":"apple"}"#], as: alice, in: profile)
        let entryID = append.stdout.trimmingCharacters(in: .newlines)
        XCTAssertEqual(append.stdoutLines.count, 1)
        XCTAssertFalse(entryID.isEmpty)
        XCTAssertEqual(try concordOKResult(["ls", "logs"], as: alice, in: profile).stdoutLines, ["logs/\(entryID)"])
        let day = try String(contentsOf: profile.appendingPathComponent("logs/2026-01-01.jsonl"), encoding: .utf8)
        XCTAssertEqual(RunResult.lines(day).count, 1)
        XCTAssertTrue(day.hasSuffix("}\n"))
        let entry = try XCTUnwrap(parseJSON(RunResult.lines(day)[0]) as? [String: Any])
        XCTAssertEqual(entry["id"] as? String, entryID)
        XCTAssertEqual(entry["by"] as? String, "alice")
        XCTAssertEqual(entry["device"] as? String, "laptop")
        XCTAssertEqual((entry["data"] as? [String: String]), ["tapped": "apple"])

        // log: newest first, one line per commit, with its action and a good signature.
        let log = try concordOKResult(["log"], as: alice, in: profile)
        XCTAssertEqual(log.stdoutLines.count, 6, log.stdout)
        let actions = ["appended", "deleted", "updated", "added", "added", "created"]
        let described = ["  appended logs/", "  deleted vocabulary/", "  edited vocabulary/apple (", "  added vocabulary/", "  added vocabulary/", "  profile "]
        for (line, words) in zip(log.stdoutLines, described) {
            XCTAssertTrue(line.contains(words), "\(line) should show \(words)")
            XCTAssertTrue(line.hasSuffix("[signature: good]"), line)
            XCTAssertTrue(line.contains("alice@laptop"), line)
        }
        let logJSON = try XCTUnwrap(parseJSON(try concordOKResult(["log", "--json"], as: alice, in: profile).stdout) as? [[String: Any]])
        XCTAssertEqual(logJSON.compactMap { $0["action"] as? String }, actions)
        XCTAssertEqual(logJSON.compactMap { $0["commit"] as? String }, try commits(profile), "log --json lists exactly git's commits")
        XCTAssertEqual(Set(logJSON.compactMap { $0["signature"] as? String }), ["good"])
        XCTAssertEqual(logJSON.first?["records"] as? [String], ["logs/\(entryID)"])

        // --limit, --record: the filter agrees with git's own path-limited log.
        XCTAssertEqual(try concordOKResult(["log", "--limit", "2"], as: alice, in: profile).stdoutLines.count, 2)
        let filtered = try XCTUnwrap(parseJSON(try concordOKResult(["log", "--record", "vocabulary/apple", "--json"], as: alice,
                                                               in: profile).stdout) as? [[String: Any]])
        let gitFiltered = try gitOK(["log", "--format=%H", "--", "\(RecordPaths.file(directory: "vocabulary", id: "apple"))"], in: profile)
        XCTAssertEqual(filtered.compactMap { $0["commit"] as? String }, gitFiltered.split(separator: "\n").map(String.init))
        XCTAssertEqual(filtered.compactMap { $0["action"] as? String }, ["updated", "added"])
        let logFiltered = try XCTUnwrap(parseJSON(try concordOKResult(["log", "--record", "logs/\(entryID)", "--json"], as: alice,
                                                                  in: profile).stdout) as? [[String: Any]])
        XCTAssertEqual(logFiltered.compactMap { $0["action"] as? String }, ["appended"])
    }

    func testExportImportRoundTrip() throws {
        let alice = try makeDevice("alice")
        let source = try makeProfile("source", owner: alice)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"word":"puzzle","n":2}"#], as: alice, in: source)
        try concordOK(["put", "settings/voice", "--json", #"{"rate":1.25}"#], as: alice, in: source)
        try concordOK(["put", "vocabulary/gone", "--json", #"{"word":"gone"}"#], as: alice, in: source)
        try concordOK(["rm", "vocabulary/gone"], as: alice, in: source)
        try concordOK(["append", "logs", "--json", #"{"tapped":"puzzle"}"#], as: alice, in: source)
        try concordOK(["append", "logs", "--json", #"{"tapped":"voice"}"#], as: alice, in: source)

        let export = try concordOKResult(["export"], as: alice, in: source)
        let dump = try XCTUnwrap(parseJSON(export.stdout) as? [String: Any])
        let records = try XCTUnwrap(dump["records"] as? [[String: Any]])
        XCTAssertEqual(records.compactMap { $0["id"] as? String }.sorted(), ["puzzle", "voice"], "tombstones are not exported")
        XCTAssertEqual(try XCTUnwrap(dump["logs"] as? [[String: Any]]).count, 2)

        // Into a new profile: everything arrives in one commit, and exporting it gives the same data.
        let target = try makeProfile("target", owner: alice)
        let dumpFile = try writeFile("dump.json", export.stdout)
        let imported = try concordOKResult(["import", "--file", dumpFile.path, "--json"], as: alice, in: target)
        let summary = try XCTUnwrap(parseJSON(imported.stdout) as? [String: Any])
        XCTAssertEqual(summary["records"] as? Int, 2)
        XCTAssertEqual(summary["logEntries"] as? Int, 2)
        XCTAssertEqual(summary["commit"] as? String, try gitOK(["rev-parse", "HEAD"], in: target))
        XCTAssertEqual(try commits(target).count, 2)
        let reexport = try concordOKResult(["export"], as: alice, in: target)
        XCTAssertEqual(try stripLogMetadata(reexport.stdout), try stripLogMetadata(export.stdout))
        XCTAssertEqual(try concordOKResult(["get", "settings/voice"], as: alice, in: target).stdout.contains(#""rate": 1.25"#), true)

        // Importing a profile's own export changes nothing.
        let head = try gitOK(["rev-parse", "HEAD"], in: source)
        let again = try concordOKResult(["import", "--file", dumpFile.path], as: alice, in: source)
        XCTAssertTrue(again.stdout.hasPrefix("nothing to import"), again.stdout)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: source), head)
    }

    /// A dump as comparable values: records as is, log entries by (kind, id, data) only.
    private func stripLogMetadata(_ text: String) throws -> NSDictionary {
        let dump = try XCTUnwrap(parseJSON(text) as? [String: Any])
        let logs = (dump["logs"] as? [[String: Any]] ?? []).map { entry in
            entry.filter { ["kind", "id", "data"].contains($0.key) }
        }
        return ["records": dump["records"] ?? [], "logs": logs] as NSDictionary
    }
}
