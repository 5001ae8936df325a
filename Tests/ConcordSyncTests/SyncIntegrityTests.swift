import ConcordTestSupport
import Foundation
import XCTest

/// Integrity without an attacker: a sync stopped half-way is finished by the next command, an
/// uncommitted edit is never overwritten, a server's refusal is not an outage.
final class SyncIntegrityTests: ConcordTestCase {
    /// git holds `index.lock` while a sync brings a change in. Before issue 42's index lock, the
    /// sync moved the branch and then failed to write the index; now it waits for the lock
    /// (`CONCORD_GIT_LOCK_TIMEOUT`), then refuses with the one line naming it, before anything
    /// moves: HEAD, the branch, the index, the working tree and the lock file stay as they were.
    /// Writes refused meanwhile leave the lock too (a git command still running holds it). Once
    /// it is released, the same sync goes through.
    func testASyncWhileGitHoldsTheIndexLockWaitsThenRefusesWithNothingMoved() throws {
        let scene = try twoDevicesAfterTheLaptopSentACat()
        let (tablet, tabletProfile) = (scene.other, scene.otherProfile)

        let lock = holdGitIndexLock(in: tabletProfile)
        let before = try indexLockScene(tabletProfile)
        let started = Date()
        let failed = try concordWithDeadline(["sync"], as: tablet, in: tabletProfile, environment: Self.gitLockTimeout())
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.5, "the sync did not wait for the lock")
        assertOneLineRefusal(failed, status: 1, mentions: ["another git process holds \(lock.path)", "try again"])
        XCTAssertFalse(failed.stderr.contains("the branch moved to"), failed.stderr)
        XCTAssertEqual(try indexLockScene(tabletProfile), before, "a sync refused for a held index.lock changed something")
        for attempt in 1...3 {
            let put = try concordWithDeadline(["put", "vocabulary/dog\(attempt)", "--json", #"{"label":"dog"}"#], as: tablet, in: tabletProfile,
                                              environment: Self.gitLockTimeout())
            assertOneLineRefusal(put, status: 1, mentions: ["another git process holds \(lock.path)"])
            XCTAssertEqual(try indexLockScene(tabletProfile), before, "attempt \(attempt) changed something")
        }
        try FileManager.default.removeItem(at: lock)

        try concordOK(["sync"], as: tablet, in: tabletProfile)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: tabletProfile), "", "index and working tree match HEAD")
        XCTAssertTrue(try concordOK(["get", "vocabulary/cat"], as: tablet, in: tabletProfile).contains("cat"))
        try assertFsck(tabletProfile)
    }

    /// A sync whose index write fails after the branch moved (a disk error; here the test-only
    /// fault `CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE`; before issue 42's index lock, git holding
    /// `index.lock` did it) fails saying so, and the next sync brings the working tree and index
    /// in line, so a plain `git commit -a` cannot revert the received records.
    func testASyncThatCouldNotWriteTheIndexIsFinishedByTheNextOne() throws {
        let scene = try twoDevicesAfterTheLaptopSentACat()
        let (tablet, tabletProfile) = (scene.other, scene.otherProfile)

        let head = try revParse("HEAD", in: tabletProfile)
        let failed = try concordWithDeadline(["sync"], as: tablet, in: tabletProfile, environment: Self.failIndexAfterBranchMove)
        assertOneLineRefusal(failed, status: 1, mentions: ["the branch moved to", "could not be updated", "the next concord write or sync"])
        XCTAssertNotEqual(try revParse("HEAD", in: tabletProfile), head, "the branch moved")
        XCTAssertNotEqual(try gitOK(["status", "--porcelain"], in: tabletProfile), "", "the index was left behind the branch")

        try concordOK(["sync"], as: tablet, in: tabletProfile)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: tabletProfile), "", "index and working tree match HEAD")
        XCTAssertEqual(try gitOK(["diff", "HEAD", "--stat"], in: tabletProfile), "")
        XCTAssertTrue(try concordOK(["get", "vocabulary/cat"], as: tablet, in: tabletProfile).contains("cat"))
        try assertFsck(tabletProfile)
    }

    /// A hand edit to a record file that no commit holds is never overwritten by an incoming
    /// change: the sync refuses, naming the file, and changes nothing.
    func testAnUncommittedEditIsNeverOverwritten() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor", records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        let (alice, bob, aliceProfile, bobProfile) = (scene.owner, scene.other, scene.ownerProfile, scene.otherProfile)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"from alice"}"#], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)

        let file = try XCTUnwrap(FileManager.default.enumerator(atPath: bobProfile.appendingPathComponent("vocabulary").path)?
            .compactMap { $0 as? String }.first { $0.hasSuffix("puzzle.json") })
        let url = bobProfile.appendingPathComponent("vocabulary/" + file)
        let edited = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\"puzzle\"\n  }", with: "\"hand edit\"\n  }")
        try Data(edited.utf8).write(to: url)
        let head = try revParse("HEAD", in: bobProfile)
        let result = try concord(["sync"], as: bob, in: bobProfile)
        assertOneLineRefusal(result, mentions: ["uncommitted", "vocabulary/" + file])
        XCTAssertEqual(try String(contentsOf: url, encoding: .utf8), edited, "the hand edit is kept")
        XCTAssertEqual(try revParse("HEAD", in: bobProfile), head, "HEAD did not move")

        // Discarding the edit as the message says lets the sync through.
        try gitOK(["checkout", "--", "vocabulary/" + file], in: bobProfile)
        try concordOK(["sync"], as: bob, in: bobProfile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: bob, in: bobProfile).contains("from alice"))
    }

    /// A sync whose index write failed after the branch moved (the test-only fault
    /// `CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE`, standing in for a disk error; before issue 42's
    /// index lock, git holding `index.lock` did it) leaves a file it wrote; the user then edits that file
    /// by hand. The next command, which would finish the update, refuses to overwrite the edit
    /// (naming the file, changing nothing); once the edit is discarded as it says, it finishes.
    func testFinishingAnInterruptedSyncNeverOverwritesAHandEditMadeSince() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor", records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        let (alice, bob, aliceProfile, bobProfile) = (scene.owner, scene.other, scene.ownerProfile, scene.otherProfile)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"from alice"}"#], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)

        XCTAssertEqual(try concordWithDeadline(["sync"], as: bob, in: bobProfile, environment: Self.failIndexAfterBranchMove).status, 1)
        let relative = try recordFile("puzzle", in: bobProfile)
        let url = bobProfile.appendingPathComponent(relative)
        XCTAssertTrue(try String(contentsOf: url, encoding: .utf8).contains("from alice"), "the sync wrote the file before the index")
        let handEdit = try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "from alice", with: "hand edit")
        try Data(handEdit.utf8).write(to: url)
        let head = try revParse("HEAD", in: bobProfile)

        for arguments in [["sync"], ["put", "vocabulary/dog", "--json", #"{"label":"dog"}"#]] {
            let refused = try concord(arguments, as: bob, in: bobProfile)
            assertOneLineRefusal(refused, status: 1, mentions: ["uncommitted edits to \(relative)", "interrupted update", "move them out of the profile"])
            XCTAssertEqual(try String(contentsOf: url, encoding: .utf8), handEdit, "\(arguments[0]) overwrote the hand edit")
            XCTAssertEqual(try revParse("HEAD", in: bobProfile), head)
        }
        try gitOK(["checkout", "--", relative], in: bobProfile)
        try concordOK(["sync"], as: bob, in: bobProfile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: bob, in: bobProfile).contains("from alice"))
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: bobProfile), "")
        try assertFsck(bobProfile)
    }

    /// A sync killed while it creates a file leaves the file holding only the first bytes of the
    /// record (none, when killed right after creating it). Those bytes are the update's, not a
    /// hand edit: the next command finishes the update without asking, while a file holding
    /// anything else is still refused. (Before, such a file stopped every later command: found by
    /// KillTests in CI.) Finished from the journal here, and by the crash repair below.
    func testAFileLeftHalfWrittenByAKilledSyncIsFinishedFromTheJournal() throws {
        try assertHalfWrittenFilesAreFinished(journalLost: false)
    }

    /// As above when the journal is gone too (a merge's is not fsynced, so a machine crash can
    /// lose it): the crash repair, comparing the index with the branch, tells the same apart.
    func testAFileLeftHalfWrittenIsFinishedByTheCrashRepair() throws {
        try assertHalfWrittenFilesAreFinished(journalLost: true)
    }

    private func assertHalfWrittenFilesAreFinished(journalLost: Bool) throws {
        let scene = try makeTwoDevices()
        let (alice, tablet, aliceProfile, tabletProfile) = (scene.owner, scene.other, scene.ownerProfile, scene.otherProfile)
        for word in ["cat", "dog", "owl"] {
            try concordOK(["put", "vocabulary/\(word)", "--json", #"{"label":"a word long enough to be cut in half"}"#], as: alice, in: aliceProfile)
        }
        try concordOK(["sync"], as: alice, in: aliceProfile)

        // The sync writes the three new files, then cannot write the index (the test-only fault;
        // before issue 42's index lock, git holding `index.lock`): the update is unfinished.
        XCTAssertEqual(try concordWithDeadline(["sync"], as: tablet, in: tabletProfile, environment: Self.failIndexAfterBranchMove).status, 1)
        var files = [String: URL]()
        for word in ["cat", "dog", "owl"] { files[word] = tabletProfile.appendingPathComponent(try recordFile(word, in: tabletProfile)) }
        let full = try Data(contentsOf: try XCTUnwrap(files["cat"]))
        try full.prefix(full.count / 2).write(to: try XCTUnwrap(files["cat"]))     // killed mid-write
        try Data().write(to: try XCTUnwrap(files["dog"]))                          // killed just after creating it
        let owlEdit = full.prefix(full.count / 2) + Data("\u{7} typed by hand".utf8)
        try owlEdit.write(to: try XCTUnwrap(files["owl"]))                         // not the update's bytes
        if journalLost {
            try FileManager.default.removeItem(at: tabletProfile.appendingPathComponent(".git/concord/checkout-journal"))
            try Data("pid 999999\n".utf8).write(to: tabletProfile.appendingPathComponent(".git/concord/lock"))
        }
        let head = try revParse("HEAD", in: tabletProfile)

        let refused = try concord(["sync"], as: tablet, in: tabletProfile)
        assertOneLineRefusal(refused, status: 1, mentions: ["uncommitted edits to \(try recordFile("owl", in: tabletProfile))", "interrupted update"])
        XCTAssertFalse(refused.stderr.contains("cat.json") || refused.stderr.contains("dog.json"), refused.stderr)
        XCTAssertEqual(try Data(contentsOf: try XCTUnwrap(files["owl"])), owlEdit, "the hand edit is kept")
        XCTAssertEqual(try revParse("HEAD", in: tabletProfile), head)

        try FileManager.default.removeItem(at: try XCTUnwrap(files["owl"]))
        try concordOK(["sync"], as: tablet, in: tabletProfile)
        for word in ["cat", "dog", "owl"] {
            XCTAssertEqual(try Data(contentsOf: try XCTUnwrap(files[word])).count, full.count, "\(word) was not finished")
            XCTAssertTrue(try concordOK(["get", "vocabulary/\(word)"], as: tablet, in: tabletProfile).contains("cut in half"))
        }
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: tabletProfile), "")
        try assertFsck(tabletProfile)
    }

    /// Something the user put where an incoming record goes — a directory, not a file — is theirs
    /// too: the sync refuses before anything moves, instead of failing half-way with HEAD moved.
    func testADirectoryWhereAnIncomingRecordGoesIsRefusedBeforeAnythingMoves() throws {
        let scene = try twoDevicesAfterTheLaptopSentACat()
        let (tablet, aliceProfile, tabletProfile) = (scene.other, scene.ownerProfile, scene.otherProfile)
        let relative = try recordFile("cat", in: aliceProfile)
        let directory = tabletProfile.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("keep me\n".utf8).write(to: directory.appendingPathComponent("keep.txt"))
        let head = try revParse("HEAD", in: tabletProfile)

        let refused = try concord(["sync"], as: tablet, in: tabletProfile)
        assertOneLineRefusal(refused, status: 1, mentions: ["uncommitted edits to \(relative)"])
        XCTAssertEqual(try revParse("HEAD", in: tabletProfile), head, "HEAD did not move")
        XCTAssertEqual(try String(contentsOf: directory.appendingPathComponent("keep.txt"), encoding: .utf8), "keep me\n")

        try FileManager.default.removeItem(at: directory)
        try concordOK(["sync"], as: tablet, in: tabletProfile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/cat"], as: tablet, in: tabletProfile).contains("cat"))
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: tabletProfile), "")
        try assertFsck(tabletProfile)
    }

    /// `sync --json` prints a JSON error object whatever failed — also for errors that are not
    /// the library's own (here, a device with no identity), with the exit code the command gives.
    func testSyncJSONPrintsAnErrorObjectForEveryFailure() throws {
        let scene = try makeTwoDevices()
        let empty = sandbox.appendingPathComponent("no-identity-home")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let result = try concordWithDeadline(["sync", "--json"], as: scene.other, in: scene.otherProfile,
                                             environment: ["CONCORD_HOME": empty.path])
        XCTAssertEqual(result.status, 1, result.stderr)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], result.stdout)
        XCTAssertEqual(object["exitCode"] as? Int, 1)
        XCTAssertTrue((object["error"] as? String)?.contains("identity") == true, result.stdout)
    }

    /// A clone stopped before it finishes leaves nothing in the way of the next: SIGTERM (or
    /// Ctrl-C) removes what it wrote; a clone killed outright leaves `.git` with its pid in
    /// `.git/concord/cloning`, and the next clone into the directory, finding that process gone,
    /// removes it and clones (before, it refused: "already holds a git repository or profile").
    func testAClonePastItsProcessLeavesNothingInTheWayOfTheNext() throws {
        let scene = try makeTwoDevices(records: (0..<300).map { ("vocabulary/w\($0)", #"{"label":"word"}"#) })
        let carol = try makeDevice("carol", device: "phone")
        for attempt in 0..<3 {
            let target = sandbox.appendingPathComponent("carol-\(attempt)")
            let clone = try ChildProcess(path: try ConcordBinary.required(), arguments: ["clone", scene.remote.url, target.path],
                                         environment: concordEnvironment(carol), output: sandbox.appendingPathComponent("clone-\(attempt).out"))
            addTeardownBlock { clone.signal(SIGKILL); clone.wait() }
            usleep(useconds_t(attempt * 40_000))
            clone.signal(SIGTERM)
            clone.wait()
            // Interrupted (nothing left) or done first (a whole profile): never half a clone in the way.
            if FileManager.default.fileExists(atPath: target.path) {
                XCTAssertTrue(try concordOK(["ls"], as: carol, in: target).contains("vocabulary/w1"), "attempt \(attempt): a partial clone was left")
            }
        }
        // Killed outright after it made the repository: its mark names a process that is gone.
        let target = sandbox.appendingPathComponent("carol-killed")
        try FileManager.default.createDirectory(at: target.appendingPathComponent(".git/concord"), withIntermediateDirectories: true)
        let gone = try ChildProcess(path: "/bin/true", arguments: [], environment: [:], output: sandbox.appendingPathComponent("true.out"))
        gone.wait()
        try Data("pid \(gone.pid)\n".utf8).write(to: target.appendingPathComponent(".git/concord/cloning"))
        try concordOK(["clone", scene.remote.url, target.path], as: carol)
        XCTAssertTrue(try concordOK(["ls"], as: carol, in: target).contains("vocabulary/w299"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent(".git/concord/cloning").path))
        try assertFsck(target)
        // A directory holding a repository no clone left is still refused.
        let other = sandbox.appendingPathComponent("someone-else")
        try gitOK(["init", "-q", other.path], in: sandbox)
        let refused = try concord(["clone", scene.remote.url, other.path], as: carol)
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: other.appendingPathComponent(".git").path))
    }

    /// The path of record `id`'s file in `profile` (relative), found on disk.
    private func recordFile(_ id: String, in profile: URL) throws -> String {
        let file = try XCTUnwrap(FileManager.default.enumerator(atPath: profile.appendingPathComponent("vocabulary").path)?
            .compactMap { $0 as? String }.first { $0.hasSuffix("/\(id).json") })
        return "vocabulary/" + file
    }

    /// A server that turns the device away before git starts (gitolite's "W … DENIED", here a
    /// forced command that says so and exits) is a refusal — exit 4, its message on one line — not
    /// "offline"; `sync --json` also prints a JSON error object.
    func testAServerRefusalIsReportedAsARefusalNotOffline() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "tablet")
        let remote = try makeRemote(.ssh)
        let aliceProfile = try publishProfile(owner: alice, remote: remote, directory: "alice", members: [(bob, "editor")])
        _ = aliceProfile
        let server = try XCTUnwrap(remote.server)
        // Bob reaches the repository by path, and the ssh server refuses his key for everything.
        let bobProfile = sandbox.appendingPathComponent("bob")
        try concordOK(["clone", remote.bare.path, bobProfile.path], as: bob)
        fsckAtEnd.append(bobProfile)
        try server.authorize(publicKeyLine: "command=\"echo 'FATAL: W any profile bob DENIED by fallthru' >&2; exit 1\",restrict "
                             + bob.publicKeyLine)
        let knownHosts = bob.home.appendingPathComponent("known_hosts")
        try Data((server.knownHostsLine + "\n").utf8).write(to: knownHosts)
        try concordOK(["remote", "add", "server", remote.url], as: bob, in: bobProfile)
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: bob, in: bobProfile)

        let result = try concord(["sync", "--remote", "server"], as: bob, in: bobProfile)
        assertOneLineRefusal(result, status: 4, mentions: ["refused", "DENIED"])
        XCTAssertFalse(result.stderr.contains("offline"), result.stderr)
        let json = try concord(["sync", "--remote", "server", "--json"], as: bob, in: bobProfile)
        XCTAssertEqual(json.status, 4)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        XCTAssertTrue((object["error"] as? String)?.contains("DENIED") == true, json.stdout)
        XCTAssertEqual(object["exitCode"] as? Int, 4)

        // watch reports the refusal once and backs off instead of retrying every interval.
        let output = sandbox.appendingPathComponent("watch.out")
        let watcher = try ChildProcess(path: try ConcordBinary.required(), arguments: ["watch", "-C", bobProfile.path, "--remote", "server",
                                                                             "--interval", "0.1", "--json"],
                                       environment: concordEnvironment(bob), output: output)
        addTeardownBlock { watcher.signal(SIGKILL); watcher.wait() }
        Thread.sleep(forTimeInterval: 4)
        watcher.signal(SIGTERM)
        watcher.wait()
        let lines = (try String(contentsOf: output, encoding: .utf8)).split(separator: "\n")
        let errors = lines.filter { $0.contains("\"event\":\"error\"") }
        XCTAssertEqual(errors.count, 1, "one error event for a refusal that does not change:\n\(lines.joined(separator: "\n"))")
        XCTAssertTrue(errors.first?.contains("DENIED") == true)
        XCTAssertEqual(watcher.exitStatus(), 0)
    }

    /// A server that accepts the connection and then says nothing (a hung sshd, a black hole)
    /// does not hold the profile lock forever: after CONCORD_NETWORK_TIMEOUT seconds without a
    /// byte the sync gives up as offline, exit 3, and the next command can take the lock.
    func testASilentServerIsGivenUpOnAfterTheNetworkTimeout() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        XCTAssertTrue(bound)
        XCTAssertEqual(listen(listener, 4), 0)   // the kernel completes connections; nobody ever answers
        let port = UInt16(bigEndian: address.sin_port)

        let alice = try makeDevice("alice", device: "laptop")
        let profile = sandbox.appendingPathComponent("alice")
        try concordOK(["init", profile.path, "--name", "Silent", "--template", "aac"], as: alice)
        try concordOK(["remote", "add", "origin", "ssh://alice@127.0.0.1:\(port)/srv/profile.git"], as: alice, in: profile)
        let started = Date()
        let result = try concordWithDeadline(["sync"], as: alice, in: profile, seconds: 60, environment: ["CONCORD_NETWORK_TIMEOUT": "2"])
        let seconds = Date().timeIntervalSince(started)
        XCTAssertFalse(result.timedOut, "sync hung on a silent server")
        assertOneLineRefusal(result, status: 3, prefix: "concord: offline: ",
                             mentions: ["no answer from the server for 2 s"])
        XCTAssertLessThan(seconds, 30, "gave up after \(seconds) s")
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: alice, in: profile)

        // Reading the remote's refs alone (watch's poll, `remote trust`) uses its own ssh
        // connection (`SSHRefAdvertisement`): the same bound holds.
        let trust = try concordWithDeadline(["remote", "trust", "origin"], as: alice, in: profile, seconds: 60,
                                            environment: ["CONCORD_NETWORK_TIMEOUT": "2"])
        XCTAssertFalse(trust.timedOut, "remote trust hung on a silent server")
        assertOneLineRefusal(trust, status: 3, prefix: "concord: offline: ",
                             mentions: ["no answer from the server for 2 s"])
    }

    /// Alice's laptop and tablet (`makeTwoDevices`) once the laptop put vocabulary/cat and synced;
    /// the tablet has not synced since.
    private func twoDevicesAfterTheLaptopSentACat() throws -> TwoDevices {
        let scene = try makeTwoDevices()
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        return scene
    }
}
