import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Every refusal: the right exit code, one line on stderr naming the culprit, and nothing changed.
final class BadInputTests: AliceProfileTestCase {
    override func setUpWithError() throws {
        try super.setUpWithError()
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"word":"puzzle"}"#], as: alice, in: profile)
        try concordOK(["append", "logs", "--json", #"{"tapped":"puzzle"}"#], as: alice, in: profile)
    }

    func testInvalidJSONInline() throws {
        try assertRefusedWithoutChange(["put", "vocabulary/x", "--json", "{\"a\":\n  tru}"], as: alice, profile: profile,
                                       mentions: ["--json", "line 2, column 3"])
        try assertRefusedWithoutChange(["put", "vocabulary/x", "--json", #"{"a":"#], as: alice, profile: profile,
                                       mentions: ["--json", "line 1, column 6"])
        try assertRefusedWithoutChange(["append", "logs", "--json", "{,}"], as: alice, profile: profile,
                                       mentions: ["--json", "line 1, column 2"])
    }

    func testInvalidJSONInFile() throws {
        let bad = try writeFile("bad.json", "{\n\"word\": 'single'\n}\n")
        try assertRefusedWithoutChange(["put", "vocabulary/x", "--file", bad.path], as: alice, profile: profile,
                                       mentions: [bad.path, "line 2, column 9"])
    }

    func testJSONThatIsNotAnObject() throws {
        for text in ["[1,2]", #""just a string""#, "42", "null"] {
            try assertRefusedWithoutChange(["put", "vocabulary/x", "--json", text], as: alice, profile: profile,
                                           mentions: ["--json", "object"])
        }
        let array = try writeFile("array.json", "[]")
        try assertRefusedWithoutChange(["put", "vocabulary/x", "--file", array.path], as: alice, profile: profile,
                                       mentions: [array.path, "object"])
    }

    func testUnknownKind() throws {
        try assertRefusedWithoutChange(["put", "recipes/soup", "--json", "{}"], as: alice, profile: profile,
                                       mentions: [#"unknown kind "recipes""#, "vocabulary"])
        try assertRefusedWithoutChange(["get", "recipes/soup"], as: alice, profile: profile, mentions: [#""recipes""#])
        try assertRefusedWithoutChange(["ls", "recipes"], as: alice, profile: profile, mentions: [#""recipes""#])
        try assertRefusedWithoutChange(["append", "recipes", "--json", "{}"], as: alice, profile: profile, mentions: [#""recipes""#])
    }

    func testBadRecordIDs() throws {
        let long = String(repeating: "a", count: 129)
        for id in ["a b", "..", ".", long, "a/b", "é"] {
            try assertRefusedWithoutChange(["put", "vocabulary/\(id)", "--json", "{}"], as: alice, profile: profile,
                                           mentions: ["\"\(id)\""])
        }
        // 128 characters is still fine.
        try concordOK(["put", "vocabulary/\(String(repeating: "b", count: 128))", "--json", "{}"], as: alice, in: profile)
        try assertRefusedWithoutChange(["put", "puzzle", "--json", "{}"], as: alice, profile: profile,
                                       mentions: [#""puzzle""#, "<kind>/<id>"])
    }

    func testOversizedRecord() throws {
        let big = try writeFile("big.json", #"{"blob":""# + String(repeating: "x", count: 1 << 20) + #""}"#)
        try assertRefusedWithoutChange(["put", "vocabulary/big", "--file", big.path], as: alice, profile: profile,
                                       mentions: ["vocabulary/big", "1 MiB"])
        try assertRefusedWithoutChange(["append", "logs", "--file", big.path], as: alice, profile: profile,
                                       mentions: ["logs/", "1 MiB"])
    }

    func testNotAProfileDirectory() throws {
        let empty = try makeDirectory("empty")
        for arguments in [["put", "vocabulary/x", "--json", "{}"], ["get", "vocabulary/x"], ["ls"], ["log"], ["export"]] {
            try assertRefusedWithoutChange(arguments + ["-C", empty.path], as: alice, profile: profile,
                                           mentions: [empty.path, "not a Concord profile"])
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: empty.path), [], "nothing written into it")
    }

    func testNoIdentityYet() throws {
        let nobody = TestDevice(member: "nobody", device: "none", home: try makeDirectory("empty-home"))
        try assertRefusedWithoutChange(["put", "vocabulary/x", "--json", "{}"], as: nobody, profile: profile,
                                       mentions: ["no identity", nobody.home.path, "identity new"])
        let target = sandbox.appendingPathComponent("never")
        let result = try concord(["init", target.path, "--name", "Never"], as: nobody)
        assertRefusal(result, mentions: ["no identity", nobody.home.path])
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "init without identity must not create anything")
    }

    func testHandEditedRecordFile() throws {
        try concordOK(["put", "vocabulary/apple", "--json", #"{"word":"apple"}"#], as: alice, in: profile)
        try FileManager.default.createDirectory(at: profile.appendingPathComponent("vocabulary/\(RecordPaths.bucket("puzzle"))"),
                                                withIntermediateDirectories: true)
        try Data(#"{"data": {"word": "puzzle"}, "id": "#.utf8).write(to: profile.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "puzzle"))"))

        try assertRefusedWithoutChange(["get", "vocabulary/puzzle"], as: alice, profile: profile,
                                       mentions: ["\(RecordPaths.file(directory: "vocabulary", id: "puzzle"))"])
        let apple = try concordOKResult(["get", "vocabulary/apple"], as: alice, in: profile)
        XCTAssertTrue(apple.stdout.contains(#""word": "apple""#))

        let before = try snapshot(profile)
        let ls = try concord(["ls"], as: alice, in: profile)
        XCTAssertEqual(ls.status, 0, ls.summary)
        XCTAssertTrue(ls.stdoutLines.contains("vocabulary/apple"), ls.stdout)
        XCTAssertFalse(ls.stdoutLines.contains("vocabulary/puzzle"), ls.stdout)
        XCTAssertEqual(ls.stderrLines.count, 1, ls.stderr)
        XCTAssertTrue(ls.stderr.hasPrefix("concord: warning: "), ls.stderr)
        XCTAssertTrue(ls.stderr.contains("\(RecordPaths.file(directory: "vocabulary", id: "puzzle"))"), ls.stderr)
        XCTAssertEqual(try snapshot(profile), before)
    }

    /// A crash of the machine can leave `.git/index` truncated (git, and concord, swap it in
    /// without an fsync). It is derived data: the next write sets it aside and rebuilds it from
    /// the new commit, and the write succeeds with `git status` clean.
    func testATruncatedIndexIsRebuiltByTheNextWrite() throws {
        let index = profile.appendingPathComponent(".git/index")
        try Data().write(to: index)
        try concordOK(["put", "vocabulary/apple", "--json", #"{"word":"apple"}"#], as: alice, in: profile)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile), "")
        XCTAssertTrue(FileManager.default.fileExists(atPath: profile.appendingPathComponent(".git/index.damaged").path))
        let listed = try concordOKResult(["ls", "vocabulary"], as: alice, in: profile)
        XCTAssertEqual(listed.stdoutLines, ["vocabulary/apple", "vocabulary/puzzle"])
    }

    /// The same after a crash of concord itself (its pid left in the lock file): the recovery that
    /// compares the index with the branch must not trip over the damaged index.
    func testATruncatedIndexLeftByACrashedWriterIsRebuilt() throws {
        try Data("pid 999999\n".utf8).write(to: profile.appendingPathComponent(".git/concord/lock"))
        try Data("DIRC".utf8).write(to: profile.appendingPathComponent(".git/index"))
        try concordOK(["put", "vocabulary/apple", "--json", #"{"word":"apple"}"#], as: alice, in: profile)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile), "")
        XCTAssertEqual(try concordOKResult(["ls", "vocabulary"], as: alice, in: profile).stdoutLines, ["vocabulary/apple", "vocabulary/puzzle"])
    }

    /// A journal of a killed bulk write that cannot be replayed yet (a git process holds
    /// `index.lock`): the command waits for the lock (`CONCORD_GIT_LOCK_TIMEOUT`), then fails with
    /// the one line naming it, having changed nothing (the journal, the file it names, HEAD, the
    /// index and the lock stay), and the profile stays marked for repair, so the next command
    /// once the lock is gone replays the journal and runs the crash repair. (Before issue 42's
    /// index lock the replay failed only at its index write; now it refuses before it starts.)
    func testAJournalThatCannotBeReplayedYetIsReplayedByTheNextCommand() throws {
        let stray = RecordPaths.file(directory: "vocabulary", id: "stray")
        try FileManager.default.createDirectory(at: profile.appendingPathComponent(stray).deletingLastPathComponent(),
                                                withIntermediateDirectories: true)
        try Data(#"{"half": "written"}"#.utf8).write(to: profile.appendingPathComponent(stray))
        let journal = profile.appendingPathComponent(".git/concord/checkout-journal")
        try Data((stray + "\u{0}").utf8).write(to: journal)
        let indexLock = holdGitIndexLock(in: profile)
        let before = try indexLockScene(profile)
        let put = ["put", "vocabulary/apple", "--json", #"{"word":"apple"}"#]

        let blocked = try concordWithDeadline(put, as: alice, in: profile, environment: Self.gitLockTimeout())
        assertOneLineRefusal(blocked, status: 1, mentions: ["another git process holds \(indexLock.path)", "remove the file if no git is running"])
        XCTAssertEqual(try indexLockScene(profile), before, "a command refused for a held index.lock changed something")
        XCTAssertEqual(try Data(contentsOf: journal), Data((stray + "\u{0}").utf8), "the journal was changed")
        let marker = try String(contentsOf: profile.appendingPathComponent(".git/concord/lock"), encoding: .utf8)
        XCTAssertTrue(marker.hasPrefix("unfinished "), "the profile must stay marked for repair: \(marker)")

        // While the lock is held, a git command may still hold it: the next command leaves it
        // alone (it failed cleanly; it was not killed holding locks of its own) and fails again.
        let again = try concordWithDeadline(put, as: alice, in: profile, environment: Self.gitLockTimeout())
        assertOneLineRefusal(again, status: 1, mentions: ["another git process holds \(indexLock.path)"])
        XCTAssertEqual(try indexLockScene(profile), before, "a fresh index.lock was removed, or something changed")

        // Untouched for over a minute is no sign the holder is gone (a `git commit` whose editor is
        // open holds it for minutes): the next command still leaves it and fails with the same line.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-120)], ofItemAtPath: indexLock.path)
        let old = try concordWithDeadline(put, as: alice, in: profile, environment: Self.gitLockTimeout())
        assertOneLineRefusal(old, status: 1, mentions: ["another git process holds \(indexLock.path)", "remove the file if no git is running"])
        XCTAssertEqual(try indexLockScene(profile), before, "an index.lock was removed for its age, or something changed")

        // The user removes it, as the line says: the next command replays the journal.
        try FileManager.default.removeItem(at: indexLock)
        try concordOK(put, as: alice, in: profile)
        XCTAssertFalse(FileManager.default.fileExists(atPath: profile.appendingPathComponent(stray).path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: journal.path))
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "")
    }

    func testHandEditedLogFileWarnsInLs() throws {
        let day = profile.appendingPathComponent("logs/2026-01-01.jsonl")
        try Data("not json\n".utf8).write(to: day)
        let ls = try concord(["ls"], as: alice, in: profile)
        XCTAssertEqual(ls.status, 0, ls.summary)
        XCTAssertEqual(ls.stdoutLines, ["vocabulary/puzzle"])
        XCTAssertEqual(ls.stderrLines.count, 1, ls.stderr)
        XCTAssertTrue(ls.stderr.contains("logs/2026-01-01.jsonl"), ls.stderr)
    }

    func testNewerFormatVersionIsRefusedByEveryCommand() throws {
        let path = profile.appendingPathComponent(".concord/profile.json")
        let text = try String(contentsOf: path, encoding: .utf8)
        XCTAssertTrue(text.contains(#""formatVersion": \#(concordFormatVersion)"#), text)
        try Data(text.replacingOccurrences(of: #""formatVersion": \#(concordFormatVersion)"#, with: #""formatVersion": 99"#).utf8).write(to: path)
        let dump = try writeFile("dump.json", #"{"records":[{"kind":"vocabulary","id":"d","data":{}}]}"#)
        let commands: [[String]] = [
            ["put", "vocabulary/x", "--json", "{}"], ["get", "vocabulary/puzzle"], ["rm", "vocabulary/puzzle"],
            ["append", "logs", "--json", "{}"], ["ls"], ["import", "--file", dump.path], ["export"], ["log"],
        ]
        for arguments in commands {
            try assertRefusedWithoutChange(arguments, as: alice, profile: profile, mentions: ["99", "upgrade"])
        }
        try assertRefusedWithoutChange(["init", profile.path, "--name", "Again"], as: alice, profile: profile,
                                       mentions: [profile.path])
    }

    func testOlderFormatVersionIsRefusedWithHowToCarryTheDataOver() throws {
        let path = profile.appendingPathComponent(".concord/profile.json")
        let text = try String(contentsOf: path, encoding: .utf8)
        // Format 2 (no per-field stamps) and the pre-release format 1 alike.
        for old in ["2", "1"] {
            try Data(text.replacingOccurrences(of: #""formatVersion": \#(concordFormatVersion)"#, with: "\"formatVersion\": \(old)").utf8).write(to: path)
            for arguments in [["put", "vocabulary/x", "--json", "{}"], ["ls"], ["export"], ["log"]] {
                try assertRefusedWithoutChange(arguments, as: alice, profile: profile, mentions: ["format \(old)", "concord export", "import"])
            }
        }
        // Format 3 is format 4 without open invitations, format 4 is format 5 without key proofs, format
        // 5 is format 6 without log entry origins, and format 6 is format 7 whose history is not held to the stamp rule: read as they are.
        for old in ["3", "4", "5", "6"] {
            try Data(text.replacingOccurrences(of: #""formatVersion": \#(concordFormatVersion)"#, with: "\"formatVersion\": \(old)").utf8).write(to: path)
            XCTAssertEqual(try concord(["ls"], as: alice, in: profile).status, 0)
        }
    }

    func testDataOptionsUsage() throws {
        let file = try writeFile("data.json", "{}")
        for arguments in [["put", "vocabulary/x", "--json", "{}", "--file", file.path], ["put", "vocabulary/x"],
                          ["append", "logs"], ["append", "logs", "--json", "{}", "--file", file.path]] {
            let before = try snapshot(profile)
            let result = try concord(arguments, as: alice, in: profile)
            XCTAssertEqual(result.status, 2, "usage error: \(result.summary)")
            let first = result.stderrLines.first ?? ""
            XCTAssertTrue(first.contains("--json") && first.contains("--file"), "first stderr line names both options: \(result.stderr)")
            XCTAssertEqual(result.stdout, "")
            XCTAssertEqual(try snapshot(profile), before)
        }
    }

    func testImportWithUnknownKindImportsNothing() throws {
        let dump = try writeFile("dump.json", """
            {"records":[{"kind":"vocabulary","id":"fine","data":{"w":1}},{"kind":"recipes","id":"soup","data":{}}],
             "logs":[{"kind":"logs","data":{"e":1}}]}
            """)
        try assertRefusedWithoutChange(["import", "--file", dump.path], as: alice, profile: profile, mentions: [#""recipes""#])
        let logDump = try writeFile("dump2.json", #"{"logs":[{"kind":"logs","data":{"e":1}},{"kind":"chat","data":{}}]}"#)
        try assertRefusedWithoutChange(["import", "--file", logDump.path], as: alice, profile: profile, mentions: [#""chat""#])
        let misplaced = try writeFile("dump3.json", #"{"records":[{"kind":"logs","id":"x","data":{}}]}"#)
        try assertRefusedWithoutChange(["import", "--file", misplaced.path], as: alice, profile: profile, mentions: [#""logs""#])
        let badID = try writeFile("dump4.json", #"{"records":[{"kind":"vocabulary","id":"ok","data":{}},{"kind":"vocabulary","id":"a b","data":{}}]}"#)
        try assertRefusedWithoutChange(["import", "--file", badID.path], as: alice, profile: profile, mentions: [#""a b""#])
        let extra = try writeFile("dump5.json", #"{"records":[],"extra":[]}"#)
        try assertRefusedWithoutChange(["import", "--file", extra.path], as: alice, profile: profile, mentions: [extra.path, #""extra""#])
        let broken = try writeFile("dump6.json", #"{"records":["#)
        try assertRefusedWithoutChange(["import", "--file", broken.path], as: alice, profile: profile, mentions: [broken.path, "line 1"])
    }

    func testMissingFile() throws {
        let missing = sandbox.appendingPathComponent("no-such-file.json").path
        try assertRefusedWithoutChange(["put", "vocabulary/x", "--file", missing], as: alice, profile: profile, mentions: [missing])
        try assertRefusedWithoutChange(["import", "--file", missing], as: alice, profile: profile, mentions: [missing])
    }

    func testLogKindsAndRecordKindsKeepTheirCommands() throws {
        let entry = try XCTUnwrap(try concordOKResult(["ls", "logs"], as: alice, in: profile).stdoutLines.first)
        try assertRefusedWithoutChange(["rm", entry], as: alice, profile: profile, mentions: [#""logs""#, "append-only"])
        try assertRefusedWithoutChange(["put", "logs/x", "--json", "{}"], as: alice, profile: profile, mentions: [#""logs""#, "append"])
        try assertRefusedWithoutChange(["append", "vocabulary", "--json", "{}"], as: alice, profile: profile,
                                       mentions: [#""vocabulary""#, "not a log kind"])
        try assertRefusedWithoutChange(["rm", "vocabulary/missing"], as: alice, profile: profile, mentions: ["vocabulary/missing"])
    }

    func testInitIntoExistingProfileAndIdentityTwice() throws {
        try assertRefusedWithoutChange(["init", profile.path, "--name", "Again", "--template", "recipes"], as: alice,
                                       profile: profile, mentions: [profile.path])
        let keyBefore = try Data(contentsOf: alice.home.appendingPathComponent("id_ed25519"))
        let again = try concord(["identity", "new", "--name", "alice2", "--device", "phone"], as: alice)
        assertRefusal(again, mentions: [alice.home.path])
        XCTAssertEqual(try Data(contentsOf: alice.home.appendingPathComponent("id_ed25519")), keyBefore, "the key must not be replaced")
        let show = try concordOKResult(["identity", "show", "--json"], as: alice)
        XCTAssertEqual((parseJSON(show.stdout) as? [String: Any])?["member"] as? String, "alice")
    }

    func testUnknownTemplateAndBadNames() throws {
        let target = sandbox.appendingPathComponent("t")
        let template = try concord(["init", target.path, "--name", "T", "--template", "chess"], as: alice)
        XCTAssertEqual(template.status, 2, template.summary)
        XCTAssertTrue(template.stderr.contains("chess"), template.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path))
        let badName = TestDevice(member: "x", device: "y", home: sandbox.appendingPathComponent("home-bad"))
        assertRefusal(try concord(["identity", "new", "--name", "a b", "--device", "phone"], as: badName), mentions: [#"a b"#])
        XCTAssertFalse(FileManager.default.fileExists(atPath: badName.home.appendingPathComponent("identity.json").path))
    }
}
