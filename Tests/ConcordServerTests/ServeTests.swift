import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `concord serve` behind a real OpenSSH sshd (issue 14): sshd asks `concord-lookup` for
/// each key, runs `concord serve --key …` as the forced command, and every push passes the
/// repository's pre-receive hook (the validity rule on every pushed commit).
final class ServeTests: ConcordServeTestCase {
    func testMembersCloneAndSyncThroughConcordServeAndPlainGitWorksToo() throws {
        let bob = try makeDevice("bob", device: "phone")
        let (alice, host, aliceProfile) = try publishKidWithPuzzle(member: bob, role: "editor")
        XCTAssertTrue(FileManager.default.fileExists(atPath: host.repository("kid").appendingPathComponent("hooks/pre-receive").path),
                      "the admin's first push created the repository with its hooks")

        let (cloned, bobProfile) = try cloneThroughServer("kid", as: bob, host: host)
        XCTAssertEqual(cloned.status, 0, cloned.summary)
        try concordOK(["put", "vocabulary/ball", "--json", #"{"label":"ball"}"#], as: bob, in: bobProfile)
        XCTAssertEqual(try syncJSON(bob, in: bobProfile).sent, 1)
        XCTAssertEqual(try syncJSON(alice, in: aliceProfile).received, 1)
        XCTAssertEqual(try concordOK(["get", "vocabulary/ball"], as: alice, in: aliceProfile).contains("ball"), true)

        // Plain git over ssh with Bob's key: the same server, the same rules.
        let gitClone = sandbox.appendingPathComponent("bob-git")
        try gitOK(["clone", "--quiet", host.url("kid"), gitClone.path], environment: try gitSSHEnvironment(bob, host: host))
        fsckAtEnd.append(gitClone)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: gitClone), try serverMain("kid", host: host))
        let commit = try commitWithGit(in: gitClone, signedWith: bob.keyFile) { try setLabel("jigsaw", of: "puzzle", in: $0, as: bob.member) }
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: gitClone, environment: try gitSSHEnvironment(bob, host: host))
        XCTAssertEqual(try serverMain("kid", host: host), commit, "an editor's signed commit is accepted")
    }

    func testAMemberOfOneProfileGetsNothingOfAnotherAndAStrangerIsNotLetIn() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "phone")
        let carol = try makeDevice("carol", device: "tablet")
        let host = try makeHost(admin: alice)
        _ = try publish("kid", on: host, members: [(bob, "editor")])
        _ = try publish("work", on: host)

        let (refused, target) = try cloneThroughServer("work", as: bob, host: host)
        assertOneLineRefusal(refused, status: 4, mentions: ["no profile \"work\" here that the key \(try fingerprint(bob)) may read",
                                                            "nothing was left on this device"])
        XCTAssertFalse(refused.stderr.contains("local commits"), "a clone has no local commits to keep: \(refused.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "a refused clone leaves nothing behind")
        let listed = try git(["ls-remote", host.url("work")], environment: try gitSSHEnvironment(bob, host: host))
        XCTAssertNotEqual(listed.status, 0, listed.summary)
        XCTAssertTrue(listed.stderr.contains("concord serve: no profile \"work\""), listed.stderr)
        XCTAssertFalse(listed.stdout.contains("refs/heads/main"), "nothing of the other profile is shown: \(listed.stdout)")
        // Nor can a member create a profile: only the admin key's first push does.
        let created = try git(["push", host.url("mine"), "HEAD:main"], in: host.root, environment: try gitSSHEnvironment(bob, host: host))
        XCTAssertNotEqual(created.status, 0, created.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: host.repository("mine").path))

        // Carol is a member of nothing: sshd finds no key for her and never runs concord serve.
        let stranger = try ssh("git-upload-pack '/kid.git'", as: carol, host: host)
        XCTAssertEqual(stranger.status, 255, "ssh fails to authenticate: \(stranger.summary)")
        XCTAssertTrue(stranger.stderr.contains("Permission denied (publickey)"), stranger.stderr)
        let (strangerClone, _) = try cloneThroughServer("kid", as: carol, host: host)
        XCTAssertNotEqual(strangerClone.status, 0, strangerClone.summary)
    }

    func testHostileOriginalCommandsAreRefusedWithOneLine() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        _ = try publish("kid", on: host)
        let hostile = [
            "git-upload-pack '/kid.git'; touch \(sandbox.path)/pwned",
            "git-upload-pack '/kid.git'\ntouch \(sandbox.path)/pwned",
            "git-upload-pack '/../server/repositories/kid.git'",
            "git-upload-pack '../kid'",
            "git-upload-archive '/kid.git'",
            "sh -c 'touch \(sandbox.path)/pwned'",
            "git-upload-pack '/" + String(repeating: "k", count: 65) + ".git'",
            "git-upload-pack '/" + String(repeating: "k", count: 300) + ".git'",
            "git-upload-pack /kid.git",
            "git-upload-pack '/Kid.git'",
            "git-upload-pack '/kid.git' extra",
            "",
        ]
        for command in hostile {
            let result = try ssh(command, as: alice, host: host)
            XCTAssertEqual(result.status, 1, "\(command.debugDescription): \(result.summary)")
            XCTAssertEqual(result.stdout, "", command.debugDescription)
            XCTAssertEqual(result.stderrLines.count, 1, "\(command.debugDescription): \(result.summary)")
            XCTAssertTrue(result.stderr.hasPrefix("concord serve: "), "\(command.debugDescription): \(result.summary)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("pwned").path), "a hostile command ran")
        // The same key with a well-formed command is served.
        let served = try ssh("git-upload-pack '/kid.git'", as: alice, host: host)
        XCTAssertTrue(served.stdout.contains("refs/heads/main"), served.summary)
    }

    func testTheHookRefusesAViewersVocabularyAndTheDeviceShowsWhy() throws {
        let vera = try makeDevice("vera", device: "tablet")
        let host = try publishKidWithPuzzle(member: vera, role: "viewer").host
        let published = try serverMain("kid", host: host)
        let (cloned, veraProfile) = try cloneThroughServer("kid", as: vera, host: host)
        XCTAssertEqual(cloned.status, 0, cloned.summary)

        // Vera commits by hand in her concord copy (concord itself would refuse), signed with her key, and
        // syncs: her device checks its own commits before sending and sends nothing (exit 5).
        let commit = try commitWithGit(in: veraProfile, signedWith: vera.keyFile) { try setLabel("viewer was here", of: "puzzle", in: $0) }
        let refused = try concord(["sync"], as: vera, in: veraProfile)
        assertOneLineRefusal(refused, status: 5, mentions: [
            "this device's commit \(commit.prefix(7)) would be refused by every other device",
            "\(commit.prefix(7)) by vera@tablet changes vocabulary/puzzle: Viewers may not write vocabulary", "nothing was sent",
        ])
        XCTAssertEqual(try serverMain("kid", host: host), published, "the server stored nothing")

        // Plain git shows the same line.
        let pushed = try git(["push", "origin", "HEAD:main"], in: veraProfile,
                             environment: try gitSSHEnvironment(vera, host: host).merging(["GIT_DIR": veraProfile.appendingPathComponent(".git").path]) { $1 })
        XCTAssertNotEqual(pushed.status, 0, pushed.summary)
        XCTAssertTrue(pushed.stderr.contains("remote: concord serve: refused: \(commit.prefix(7)) by vera@tablet changes vocabulary/puzzle"),
                      pushed.stderr)
        XCTAssertEqual(try serverMain("kid", host: host), published)

        // Nor may she make herself an admin in her member file.
        try gitOK(["reset", "--quiet", "--hard", published], in: veraProfile)
        let escalation = try commitWithGit(in: veraProfile, signedWith: vera.keyFile) { clone in
            let file = clone.appendingPathComponent(".concord/members/vera.json")
            let text = try String(contentsOf: file, encoding: .utf8)
            XCTAssertTrue(text.contains("\"viewer\""), text)
            try Data(text.replacingOccurrences(of: "\"viewer\"", with: "\"admin\"").utf8).write(to: file)
        }
        let escalated = try concord(["sync"], as: vera, in: veraProfile)
        assertOneLineRefusal(escalated, status: 5, mentions: [
            "\(escalation.prefix(7)) by vera@tablet changes .concord/members/vera.json", "only add or remove their own device keys",
        ])
        XCTAssertEqual(try serverMain("kid", host: host), published)
    }

    func testForgedAndMixedPushesAreRefusedWhole() throws {
        let bob = try makeDevice("bob", device: "phone")
        let host = try publishKidWithPuzzle(member: bob, role: "editor").host
        let published = try serverMain("kid", host: host)
        let gitEnvironment = try gitSSHEnvironment(bob, host: host)
        let clone = sandbox.appendingPathComponent("bob-git")
        try gitOK(["clone", "--quiet", host.url("kid"), clone.path], environment: gitEnvironment)
        fsckAtEnd.append(clone)
        func edit(_ label: String) -> (URL) throws -> Void {
            return { clone in try self.setLabel(label, of: "puzzle", in: clone, as: "bob") }
        }
        // An unsigned commit alone.
        let unsigned = try commitWithGit(in: clone, signedWith: nil, edit("unsigned"))
        var pushed = try git(["push", "origin", "HEAD:main"], in: clone, environment: gitEnvironment)
        XCTAssertNotEqual(pushed.status, 0, pushed.summary)
        XCTAssertTrue(pushed.stderr.contains("refused: \(unsigned.prefix(7)) by Tester: it is not signed"), pushed.stderr)
        XCTAssertEqual(try serverMain("kid", host: host), published)

        // A valid signed commit followed by an unsigned one: the valid one does not get in either.
        try gitOK(["reset", "--quiet", "--hard", "origin/main"], in: clone)
        let valid = try commitWithGit(in: clone, signedWith: bob.keyFile, edit("valid"))
        let forged = try commitWithGit(in: clone, signedWith: nil, edit("forged"))
        pushed = try git(["push", "origin", "HEAD:main"], in: clone, environment: gitEnvironment)
        XCTAssertNotEqual(pushed.status, 0, pushed.summary)
        XCTAssertTrue(pushed.stderr.contains("refused: \(forged.prefix(7)) by Tester: it is not signed"), pushed.stderr)
        XCTAssertEqual(try serverMain("kid", host: host), published, "nothing of a refused push is kept, \(valid) included")

        // A commit signed by a key that is no member's.
        try gitOK(["reset", "--quiet", "--hard", "origin/main"], in: clone)
        let strangerKey = sandbox.appendingPathComponent("stranger_key")
        _ = try GitSigning.makeKey(at: strangerKey, comment: "mallory@laptop", environment: environment())
        let stranger = try commitWithGit(in: clone, signedWith: strangerKey, edit("stranger"))
        pushed = try git(["push", "origin", "HEAD:main"], in: clone, environment: gitEnvironment)
        XCTAssertTrue(pushed.stderr.contains("refused: \(stranger.prefix(7)) by an unknown key (SHA256:"), pushed.stderr)

        // Then the valid commit alone goes through.
        try gitOK(["reset", "--quiet", "--hard", valid], in: clone)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone, environment: gitEnvironment)
        XCTAssertEqual(try serverMain("kid", host: host), valid)
    }

    func testARevokedKeyIsRefusedOnItsNextConnection() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "phone")
        let host = try makeHost(admin: alice)
        let aliceProfile = try publish("kid", on: host, members: [(bob, "editor")])
        let before = try ssh("git-upload-pack '/kid.git'", as: bob, host: host)
        XCTAssertTrue(before.stdout.contains("refs/heads/main"), before.summary)
        let index = try String(contentsOf: host.root.appendingPathComponent("keys.index"), encoding: .utf8)
        XCTAssertTrue(index.contains("\(try fingerprint(bob)) kid active"), index)

        // sshd still lets the revoked key in (so its device can learn it was revoked), and concord
        // serve, which reads main, refuses its push.
        let (after, seconds) = try revokeAndConnect("bob", as: alice, in: aliceProfile, device: bob, host: host)
        // The key still reaches concord serve (to read the view of its revocation, ServeRevocationTests), which refuses the push.
        XCTAssertEqual(after.status, 1, after.summary)
        XCTAssertTrue(after.stderr.contains("access removed: alice revoked bob's access to \"kid\""), after.stderr)
        // The post-receive rewrote the index before the push returned: the very first connection is refused.
        XCTAssertLessThanOrEqual(seconds, 3, "the refused connection took \(seconds) s")
        print("revoked key refused \(String(format: "%.3f", seconds)) s after the revocation's push returned (one ssh connection)")
        let rewritten = try String(contentsOf: host.root.appendingPathComponent("keys.index"), encoding: .utf8)
        XCTAssertTrue(rewritten.contains("\(try fingerprint(bob)) kid revoked"), rewritten)
        XCTAssertFalse(rewritten.contains("\(try fingerprint(bob)) kid active"), rewritten)
        // concord serve reads main itself: whatever sshd lets in, a revoked key pushes nothing.
        let direct = try ProcessRunner.run(try ConcordBinary.required(), ["serve", "--root", host.root.path, "--key", try fingerprint(bob)],
                                           environment: environment(["SSH_ORIGINAL_COMMAND": "git-receive-pack '/kid.git'"]))
        XCTAssertEqual(direct.status, 1, direct.summary)
        XCTAssertTrue(direct.stderr.contains("access removed: alice revoked bob's access to \"kid\""), direct.stderr)
    }

    /// `watch` on a concord server does not wait for its poll: with a 300 s interval, a record Alice
    /// syncs reaches Bob's copy within seconds, because `concord-wait` answers when main moves.
    /// Bob's watch (polling every 300 s) learns of Alice's pushes from its `concord-wait`, and the
    /// commits come with the answer (`concord-wait … pack`): Bob's key connects once per update
    /// (the next wait), never to fetch.
    func testWatchGetsLiveUpdatesFromConcordServe() throws {
        let (alice, bob, host, aliceProfile, bobsCopy) = try aliceAndBobThroughServer()
        let log = sandbox.appendingPathComponent("watch-bob.log")
        let watcher = try ChildProcess(path: try ConcordBinary.required(), arguments: ["watch", "-C", bobsCopy.path, "--interval", "300", "--json"],
                                       environment: concordEnvironment(bob), output: log)
        defer { _ = watcher.stop(grace: 5) }
        let output = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        let bobsKey = try fingerprint(bob)
        // sshd ends its log lines with "\r\n" (one Character to Swift).
        let bobsConnections = { host.sshd.log.split(whereSeparator: \.isNewline).filter { $0.contains("Accepted publickey") && $0.contains(bobsKey) }.count }
        XCTAssertTrue(waitUntil(30) { output().contains("\"synced\"") || output().contains("\"started\"") }, output())
        // The watch's first check and its first wait.
        XCTAssertTrue(waitUntil(30) { bobsConnections() >= 2 }, host.sshd.log)
        Thread.sleep(forTimeInterval: 0.5)
        for round in 1...2 {
            let before = bobsConnections()
            try concordOK(["put", "vocabulary/live\(round)", "--json", #"{"label":"live"}"#], as: alice, in: aliceProfile)
            try concordOK(["sync"], as: alice, in: aliceProfile)
            let pushed = Date()
            XCTAssertTrue(waitUntil(60) {
                (try? self.concord(["get", "vocabulary/live\(round)"], as: bob, in: bobsCopy).status) == 0
            }, "vocabulary/live\(round) did not reach Bob within 60 s (the poll interval is 300 s)\n\(output())")
            print("live update \(round): \(String(format: "%.2f", Date().timeIntervalSince(pushed))) s from Alice's push to Bob's copy")
            XCTAssertTrue(waitUntil(30) { bobsConnections() > before }, "Bob's watch did not wait again")
            Thread.sleep(forTimeInterval: 1)
            XCTAssertEqual(bobsConnections() - before, 1, "Bob's key connected to fetch instead of taking the pack sent with the answer:\n\(output())")
        }
        XCTAssertNil(watcher.exitStatus(), "watch keeps running: \(output())")
    }

    /// A `concord-wait` whose device hangs up (here: plain ssh, whose input is empty, closes it at
    /// once) ends then, not when its seconds are up, and leaves no `concord serve` behind.
    func testAWaitEndsWhenTheDeviceHangsUp() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        _ = try publish("kid", on: host)
        let started = Date()
        let result = try ssh("concord-wait '/kid.git' \(try serverMain("kid", host: host)) 30", as: alice, host: host)
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "the wait outlived its device")
        XCTAssertTrue(waitUntil(10) { (try? ProcessRunner.run("/usr/bin/pgrep", ["-f", "serve --root \(host.root.path)"], environment: environment()).status) == 1 },
                      "a concord serve is still running")
    }

    /// Sets the `label` of vocabulary record `id` in the work tree `clone` (a valid record still),
    /// stamped as `member`'s write when given (format 7: a record's stamps name the commit's signer).
    func setLabel(_ label: String, of id: String, in clone: URL, as member: String? = nil) throws {
        let file = try recordFile("vocabulary", id, in: clone)
        let text = try String(contentsOf: file, encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: #""label": "[^"]*""#)
        let changed = pattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text),
                                                       withTemplate: "\"label\": \"\(label)\"")
        XCTAssertNotEqual(changed, text, "no label in \(file.path)")
        try Data(changed.utf8).write(to: file)
        if let member { try stamp(file, as: member) }
    }

    /// `SHA256:…` of `device`'s key.
    func fingerprint(_ device: TestDevice) throws -> String {
        try SSHPublicKey(line: device.publicKeyLine).fingerprint
    }

    /// alice@laptop's host with her profile "kid" published on it: `member` added with `role`, and one
    /// record, vocabulary/puzzle. Returns alice, the host and alice's profile.
    private func publishKidWithPuzzle(member: TestDevice, role: String) throws -> (alice: TestDevice, host: ConcordServeHost, aliceProfile: URL) {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        let aliceProfile = try publish("kid", on: host, members: [(member, role)], records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        return (alice, host, aliceProfile)
    }

    /// `serve` and `merge-driver` are parsed without the command tree (a faster start for sshd and
    /// git); their mistakes are still one line and the usage, exit 2.
    func testTheCommandsMachinesRunAreParsedAlone() throws {
        let fingerprint = "SHA256:" + String(repeating: "A", count: 43)
        for (arguments, expected) in [(["serve", "--root", "/nowhere"], "give exactly one of --key"),
                                      (["serve", "--root", "/nowhere", "--key", "SHA256:short"], "--key takes a key fingerprint"),
                                      (["serve", "--root", "/nowhere", "--key", fingerprint, "extra"], "unexpected arguments"),
                                      (["serve", "--root", "/nowhere", "--pre-receive", "--post-receive"], "give exactly one of --key"),
                                      (["merge-driver", "a"], "Missing expected argument")] {
            let result = try concord(arguments, as: nil)
            XCTAssertEqual(result.status, 2, result.summary)
            XCTAssertTrue(result.stderr.contains(expected), result.summary)
        }
        // The exact forms sshd and the hooks run skip the parser (`ServeRun.direct`) and fail as the parsed command
        // does: one line naming the server directory, exit 1.
        for mode in [["--key", fingerprint], ["--pre-receive"], ["--post-receive"]] {
            let result = try concord(["serve", "--root", "/nowhere"] + mode, as: nil)
            XCTAssertEqual(result.status, 1, result.summary)
            XCTAssertTrue(result.stderr.hasPrefix("concord serve: ") && result.stderr.contains("/nowhere"), result.summary)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.summary)
        }
    }
}
