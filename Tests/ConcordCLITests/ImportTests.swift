import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `concord import`: one commit for a whole dump, and importing it again changes nothing.
final class ImportTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    private func bigDump() throws -> URL {
        var records = [[String: Any]]()
        for index in 0..<100 {
            records.append(["kind": "vocabulary", "id": String(format: "word-%03d", index), "data": ["n": index, "word": "w\(index)"]])
        }
        var logs = [[String: Any]]()
        for index in 0..<20 {
            logs.append(["kind": "logs", "data": ["event": index]])
        }
        let data = try JSONSerialization.data(withJSONObject: ["records": records, "logs": logs], options: [.sortedKeys])
        let url = sandbox.appendingPathComponent("dump.json")
        try data.write(to: url)
        return url
    }

    private func logLineCount(_ profile: URL) throws -> Int {
        let directory = profile.appendingPathComponent("logs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return try names.filter { $0.hasSuffix(".jsonl") }.reduce(0) { total, name in
            total + RunResult.lines(try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)).count
        }
    }

    /// A bulk import writes its files while its commit is made; when the commit then fails (here
    /// git's lock on the branch is held), the files are taken back: nothing changed.
    func testAFailedBulkImportTakesItsFilesBack() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        try concordOK(["put", "vocabulary/word-007", "--json", #"{"word":"before"}"#], as: alice, in: profile)
        let before = try snapshot(profile)
        let lock = profile.appendingPathComponent(".git/refs/heads/main.lock")
        XCTAssertTrue(FileManager.default.createFile(atPath: lock.path, contents: Data()))
        let result = try concord(["import", "--file", try bigDump().path], as: alice, in: profile)
        XCTAssertEqual(result.status, 1, result.summary)
        XCTAssertEqual(result.stderrLines.count, 1, result.stderr)
        try FileManager.default.removeItem(at: lock)
        XCTAssertEqual(try snapshot(profile), before, "the import's files were left behind")
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: profile.appendingPathComponent(".git/concord/checkout-journal").path))
        XCTAssertTrue(try concordOKResult(["get", "vocabulary/word-007"], as: alice, in: profile).stdout.contains("before"))
    }

    func testImportIsOneCommitAndIdempotent() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        try concordOK(["put", "vocabulary/existing", "--json", #"{"word":"existing"}"#], as: alice, in: profile)
        let before = try gitOK(["rev-parse", "HEAD"], in: profile)
        let dump = try bigDump()

        let first = try concordOKResult(["import", "--file", dump.path, "--json"], as: alice, in: profile)
        let summary = try XCTUnwrap(parseJSON(first.stdout) as? [String: Any])
        XCTAssertEqual(summary["records"] as? Int, 100)
        XCTAssertEqual(summary["logEntries"] as? Int, 20)
        let head = try gitOK(["rev-parse", "HEAD"], in: profile)
        XCTAssertEqual(summary["commit"] as? String, head)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD~1"], in: profile), before, "exactly one new commit")
        XCTAssertEqual(try gitOK(["rev-list", "--count", "\(before)..HEAD"], in: profile), "1")
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Action,valueonly)"], in: profile), "imported")
        XCTAssertEqual(try git(["verify-commit", head], in: profile).status, 0)
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "")
        let fsck = try git(["fsck", "--full"], in: profile)
        XCTAssertEqual(fsck.status, 0, fsck.summary)

        // Everything is there, in the working tree and in git.
        let listed = try concordOKResult(["ls", "vocabulary"], as: alice, in: profile).stdoutLines
        XCTAssertEqual(listed.count, 101)
        XCTAssertEqual(Set(listed), Set((0..<100).map { String(format: "vocabulary/word-%03d", $0) } + ["vocabulary/existing"]))
        XCTAssertEqual(try gitOK(["ls-tree", "-r", "--name-only", "HEAD", "vocabulary/"], in: profile).split(separator: "\n").count, 101)
        XCTAssertEqual(try concordOKResult(["ls", "logs"], as: alice, in: profile).stdoutLines.count, 20)
        XCTAssertEqual(try logLineCount(profile), 20)
        let record = try XCTUnwrap(parseJSON(try concordOKResult(["get", "vocabulary/word-042"], as: alice, in: profile).stdout) as? [String: Any])
        XCTAssertEqual((record["data"] as? [String: Any])?["word"] as? String, "w42")

        // Again: no commit, no duplicate log line.
        let second = try concordOKResult(["import", "--file", dump.path, "--json"], as: alice, in: profile)
        let again = try XCTUnwrap(parseJSON(second.stdout) as? [String: Any])
        XCTAssertTrue(again["commit"] is NSNull, second.stdout)
        XCTAssertEqual(again["records"] as? Int, 0)
        XCTAssertEqual(again["logEntries"] as? Int, 0)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile), head)
        XCTAssertEqual(try logLineCount(profile), 20)
        XCTAssertEqual(try concordOKResult(["ls", "logs"], as: alice, in: profile).stdoutLines.count, 20)
        let text = try concordOKResult(["import", "--file", dump.path], as: alice, in: profile)
        XCTAssertTrue(text.stdout.hasPrefix("nothing to import"), text.stdout)
    }

    /// git holding `index.lock` during an import, and during a one-record write: each waits for
    /// the lock (`CONCORD_GIT_LOCK_TIMEOUT`), then refuses with the one line naming it before
    /// anything moves — no commit, no file, no journal, the index and the lock as they were.
    /// (Before issue 42's index lock, the commit was made and only the index write failed.) Once
    /// the lock is released, the same commands go through.
    func testAWriteWhileGitHoldsTheIndexLockWaitsThenRefusesWithNothingMoved() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        let journal = profile.appendingPathComponent(".git/concord/checkout-journal")
        let commands = [["import", "--file", try bigDump().path], ["put", "vocabulary/late", "--json", #"{"word":"late"}"#]]
        let lock = holdGitIndexLock(in: profile)
        let before = try indexLockScene(profile)
        for arguments in commands {
            let result = try concordWithDeadline(arguments, as: alice, in: profile, environment: Self.gitLockTimeout())
            assertOneLineRefusal(result, status: 1, mentions: ["another git process holds \(lock.path)", "try again"])
            XCTAssertFalse(result.stderr.contains("is made"), result.stderr)
            XCTAssertEqual(try indexLockScene(profile), before, "\(arguments[0]) refused for a held index.lock changed something")
            XCTAssertFalse(FileManager.default.fileExists(atPath: journal.path), "\(arguments[0]) left a journal")
        }
        try FileManager.default.removeItem(at: lock)
        for arguments in commands { try concordOK(arguments, as: alice, in: profile) }
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "")
        XCTAssertEqual(try gitOK(["rev-list", "--count", "HEAD"], in: profile), "3", "each write once, after the lock was released")
        XCTAssertEqual(try concordOKResult(["ls", "vocabulary"], as: alice, in: profile).stdoutLines.count, 101)
        let fsck = try git(["fsck", "--full"], in: profile)
        XCTAssertEqual(fsck.status, 0, fsck.summary)
    }

    /// An import whose index write fails after the branch moved (a disk error; here the test-only
    /// fault `CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE`; before issue 42's index lock, git holding
    /// `index.lock` did it): the commit is made but the index is not updated, so concord says so
    /// and exits 1 (after its file writes are done, and without retrying the write as if the
    /// branch had moved); the next write finishes the job from the journal first. The same for a
    /// one-record write.
    func testAWriteWhoseIndexWriteFailedAfterTheBranchMovedIsFinishedByTheNextWrite() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        let journal = profile.appendingPathComponent(".git/concord/checkout-journal")
        func expectUnfinished(_ arguments: [String]) throws {
            let result = try concordWithDeadline(arguments, as: alice, in: profile, environment: Self.failIndexAfterBranchMove)
            XCTAssertEqual(result.status, 1, result.summary)
            XCTAssertTrue(result.stderr.contains("is made") && result.stderr.contains("the next concord write or sync"), result.stderr)
            XCTAssertTrue(FileManager.default.fileExists(atPath: journal.path))
            XCTAssertFalse(FileManager.default.fileExists(atPath: profile.appendingPathComponent(".git/index.lock").path), "index.lock was left")
        }
        func expectFinished(commits: Int) throws {
            XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "")
            XCTAssertFalse(FileManager.default.fileExists(atPath: journal.path))
            XCTAssertEqual(try gitOK(["rev-list", "--count", "HEAD"], in: profile), "\(commits)", "each write once, none retried")
        }

        try expectUnfinished(["import", "--file", try bigDump().path])
        try concordOK(["put", "vocabulary/next", "--json", #"{"word":"next"}"#], as: alice, in: profile)
        try expectFinished(commits: 3)
        XCTAssertEqual(try concordOKResult(["ls", "vocabulary"], as: alice, in: profile).stdoutLines.count, 101)

        try expectUnfinished(["put", "vocabulary/late", "--json", #"{"word":"late"}"#])
        try concordOK(["put", "vocabulary/after", "--json", #"{"word":"after"}"#], as: alice, in: profile)
        try expectFinished(commits: 5)
        try concordOK(["get", "vocabulary/late"], as: alice, in: profile)
        let fsck = try git(["fsck", "--full"], in: profile)
        XCTAssertEqual(fsck.status, 0, fsck.summary)
    }

    /// `CONCORD_TRACE_PERF=1` prints each step of a bulk import on stderr, and changes nothing else.
    func testTracePerfPrintsTheStepsOfAnImportOnStderr() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        var environment = concordEnvironment(alice)
        environment["CONCORD_TRACE_PERF"] = "1"
        let result = try ProcessRunner.run(try ConcordBinary.required(), ["import", "--file", try bigDump().path, "--json"],
                                           environment: environment, in: profile)
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertEqual((try parseJSON(result.stdout) as? [String: Any])?["records"] as? Int, 100)
        let steps = result.stderrLines.map { line -> String in
            XCTAssertNotNil(line.range(of: #"^concord perf: [0-9]+\.[0-9] ms \(cpu [0-9]+\.[0-9] ms\) "#, options: .regularExpression), line)
            return line.components(separatedBy: ") ").dropFirst().joined(separator: ") ")
        }
        XCTAssertEqual(steps, ["profile opened", "dump read", "dump parsed", "changes staged", "paths journaled, file writes started",
                               "blobs hashed", "blob pack written", "trees built", "tree pack written", "commit signed, branch moved",
                               "files written", "index updated"])
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "")

        // Without the variable (or with it set to 0), stderr stays empty.
        environment["CONCORD_TRACE_PERF"] = "0"
        let quiet = try ProcessRunner.run(try ConcordBinary.required(), ["import", "--file", try bigDump().path], environment: environment, in: profile)
        XCTAssertEqual(quiet.status, 0, quiet.summary)
        XCTAssertEqual(quiet.stderr, "")
    }

    func testReimportAfterEditOnlyTouchesChangedRecords() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        let dump = try bigDump()
        try concordOK(["import", "--file", dump.path], as: alice, in: profile)
        try concordOK(["put", "vocabulary/word-007", "--json", #"{"word":"edited"}"#], as: alice, in: profile)
        let head = try gitOK(["rev-parse", "HEAD"], in: profile)
        let result = try concordOKResult(["import", "--file", dump.path, "--json"], as: alice, in: profile)
        let summary = try XCTUnwrap(parseJSON(result.stdout) as? [String: Any])
        XCTAssertEqual(summary["records"] as? Int, 1, "only the edited record differs from the dump")
        XCTAssertEqual(summary["logEntries"] as? Int, 0)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD~1"], in: profile), head)
        XCTAssertEqual(try gitOK(["diff", "--name-only", "HEAD~1", "HEAD"], in: profile), "\(RecordPaths.file(directory: "vocabulary", id: "word-007"))")
    }

    /// Issue 32, scenario E4: a legacy dump's log entries by three authors, at distinct times from
    /// distinct devices, two with the same data: all imported, each the importer's (who signs it) and
    /// keeping when, by whom and on which device it was first written, as `log`, `export` and `get`
    /// show. Importing it again adds nothing; its export imported into an empty profile by someone
    /// else (through standard input) exports the same bytes.
    func testALegacyDumpKeepsEveryEntryWithItsAuthorTimeAndDevice() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        let dump = try writeFile("legacy.json", LegacyDump.text)
        let first = try concordOKResult(["import", "--file", dump.path], as: alice, in: profile)
        XCTAssertTrue(first.stdout.hasPrefix("imported 4 of 4 items in commit "), first.stdout)
        XCTAssertEqual(try git(["verify-commit", "HEAD"], in: profile).status, 0)
        try concordOK(["verify"], as: alice, in: profile)

        // `log`: the import, and each entry with who first wrote it.
        let log = try concordOKResult(["log", "--limit", "1"], as: alice, in: profile).stdout
        XCTAssertTrue(log.contains("alice@laptop"), log)
        for entry in LegacyDump.entries {
            XCTAssertTrue(log.contains("first written by \(entry.by)@\(entry.device) at \(entry.at)"), log)
        }
        let commits = try XCTUnwrap(parseJSON(try concordOKResult(["log", "--limit", "1", "--json"], as: alice, in: profile).stdout) as? [[String: Any]])
        let changes = try XCTUnwrap(commits.first?["changes"] as? [[String: Any]])
        XCTAssertEqual(Set(changes.compactMap { change -> String? in
            guard let origin = change["origin"] as? [String: String], change["action"] as? String == "imported" else { return nil }
            return "\(origin["at"] ?? "") \(origin["by"] ?? "")@\(origin["device"] ?? "")"
        }), Set(LegacyDump.entries.map { "\($0.at) \($0.by)@\($0.device)" }))

        // `export`: each entry as first written, oldest first.
        let exported = try concordOKResult(["export"], as: alice, in: profile).stdout
        let logs = try XCTUnwrap((parseJSON(exported) as? [String: Any])?["logs"] as? [[String: Any]])
        XCTAssertEqual(logs.map { "\($0["at"] ?? "") \($0["by"] ?? "")@\($0["device"] ?? "")" },
                       LegacyDump.entries.map { "\($0.at) \($0.by)@\($0.device)" })
        // `get`: the entry as stored, the importer's with its origin.
        let id = try XCTUnwrap(logs[2]["id"] as? String)
        let line = try concordOKResult(["get", "logs/\(id)"], as: alice, in: profile).stdout
        XCTAssertTrue(line.contains(#""by":"alice""#) && line.contains(#""origin":{"at":"2025-03-02T16:45:00.000Z-0000","by":"grandma","device":"tablet"}"#), line)

        // Again: nothing.
        let second = try concordOKResult(["import", "--file", dump.path], as: alice, in: profile)
        XCTAssertTrue(second.stdout.hasPrefix("nothing to import: all 4 items are already present"), second.stdout)
        XCTAssertEqual(try logLineCount(profile), 4)

        // Each exported entry also says who imported it (format 7), so the dump never reads as first-hand.
        XCTAssertTrue(logs.allSatisfy { ($0["importedBy"] as? [String: Any])?["by"] as? String == "alice" }, exported)

        // Into an empty profile of someone else's, and out again: the same claims, the new importer named.
        let bob = try makeDevice("bob", device: "desk")
        let other = try makeProfile("other", owner: bob)
        try concordOK(["import", "--file", "-"], as: bob, in: other, input: Data(exported.utf8))
        let again = try concordOKResult(["export"], as: bob, in: other).stdout
        let againLogs = try XCTUnwrap((parseJSON(again) as? [String: Any])?["logs"] as? [[String: Any]])
        XCTAssertTrue(againLogs.allSatisfy { ($0["importedBy"] as? [String: Any])?["by"] as? String == "bob" }, again)
        func claims(_ items: [[String: Any]]) -> [String] {
            items.map { "\($0["id"] ?? "") \($0["at"] ?? "") \($0["by"] ?? "")@\($0["device"] ?? "")" }
        }
        XCTAssertEqual(claims(againLogs), claims(logs), "a round trip keeps each claim as it was, never the importer's")
        fsckAtEnd += [profile, other]
    }
}
