@testable import ConcordEngine
@testable import ConcordKit
@testable import ConcordServer
import ConcordTestSupport
import Foundation
import XCTest

/// The pre-receive hook run on its own (what git gives it on stdin), the ref rules through a real
/// push, an invitation accepted through the server, and the key lookup at 1,000 profiles.
final class ServeHookTests: ConcordServeTestCase {
    /// `concord serve --pre-receive` in profile `name`'s repository with `input` on stdin.
    func preReceive(_ input: String, profile name: String, host: ConcordServeHost, key: String?) throws -> RunResult {
        var extra = ["GIT_DIR": host.repository(name).path]
        if let key { extra["CONCORD_SERVE_KEY"] = key }
        return try ProcessRunner.run(try ConcordBinary.required(), ["serve", "--root", host.root.path, "--pre-receive"],
                                     environment: environment(extra), in: host.repository(name), input: Data(input.utf8))
    }

    func testTheHookRefusesOtherRefsDeletionsRewindsAndPushesNotThroughServe() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        let profile = try publish("kid", on: host, records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        let main = try serverMain("kid", host: host)
        let parent = try gitOK(["rev-parse", "refs/heads/main~1"], in: host.repository("kid"))
        let zero = String(repeating: "0", count: 40)
        let key = try SSHPublicKey(line: alice.publicKeyLine).fingerprint
        for (input, key, mention) in [
            ("\(zero) \(main) refs/heads/other\n", key, "refused refs/heads/other: a concord server keeps refs/heads/main only"),
            ("\(zero) \(main) refs/tags/v1\n", key, "refused refs/tags/v1"),
            ("\(main) \(zero) refs/heads/main\n", key, "refused deleting main"),
            ("\(main) \(parent) refs/heads/main\n", key, "refused a non-fast-forward update of main"),
            ("\(main) \(main) refs/heads/main\n", nil, "come through 'concord serve'"),
            ("not what git sends\n", key, "cannot read"),
        ] as [(String, String?, String)] {
            let result = try preReceive(input, profile: "kid", host: host, key: key)
            assertOneLineRefusal(result, status: 1, prefix: "concord serve: ", mentions: [mention])
        }
        // A push of the same main is no change, and passes.
        XCTAssertEqual(try preReceive("\(parent) \(main) refs/heads/main\n", profile: "kid", host: host, key: key).status, 0)

        // Through a real push: another branch and a forced rewind are refused, main stays.
        let gitEnvironment = try gitSSHEnvironment(alice, host: host).merging(["GIT_DIR": profile.appendingPathComponent(".git").path]) { $1 }
        let other = try git(["push", "origin", "HEAD:refs/heads/other"], in: profile, environment: gitEnvironment)
        XCTAssertTrue(other.stderr.contains("remote: concord serve: refused refs/heads/other"), other.summary)
        let rewind = try git(["push", "--force", "origin", "HEAD~1:main"], in: profile, environment: gitEnvironment)
        XCTAssertNotEqual(rewind.status, 0, rewind.summary)
        let deletion = try git(["push", "origin", ":main"], in: profile, environment: gitEnvironment)
        XCTAssertNotEqual(deletion.status, 0, deletion.summary)
        XCTAssertEqual(try serverMain("kid", host: host), main)
        XCTAssertEqual(try gitOK(["for-each-ref", "--format=%(refname)"], in: host.repository("kid")), "refs/heads/main")
    }

    func testAnInvitedKeyClonesAndPushesItsAcceptanceThroughTheServer() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let dave = try makeDevice("dave", device: "phone")
        let host = try makeHost(admin: alice)
        let aliceProfile = try publish("kid", on: host)
        let output = try concordOK(["share", "dave", "--role", "editor", "--key", dave.publicKeyLine], as: alice, in: aliceProfile)
        let invitation = try XCTUnwrap(output.split(separator: "\n").last.map(String.init))
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let index = host.root.appendingPathComponent("keys.index")
        let daveKey = try SSHPublicKey(line: dave.publicKeyLine).fingerprint
        XCTAssertTrue(try String(contentsOf: index, encoding: .utf8).contains("\(daveKey) kid invited 20"), "the post-receive listed the pending key")

        let target = try acceptThroughServer(invitation, as: dave, host: host, profile: "kid", into: "kid-dave")
        XCTAssertTrue(try String(contentsOf: index, encoding: .utf8).contains("\(daveKey) kid active -"), "dave's key is now an active member's")
        try concordOK(["put", "vocabulary/ball", "--json", #"{"label":"ball"}"#], as: dave, in: target)
        XCTAssertEqual(try syncJSON(dave, in: target).sent, 1, "now a member, dave writes as an editor")
    }

    func testALinkInvitationIsAcceptedThroughTheServerWithItsOneTimeKey() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let erin = try makeDevice("erin", device: "tablet")
        let host = try makeHost(admin: alice)
        let aliceProfile = try publish("kid", on: host)
        let output = try concordOK(["share", "erin", "--role", "user"], as: alice, in: aliceProfile)
        let invitation = try XCTUnwrap(output.split(separator: "\n").last.map(String.init))
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let erinKey = try SSHPublicKey(line: erin.publicKeyLine).fingerprint
        // Erin's own key is no one's yet: sshd does not let it in.
        XCTAssertEqual(try ssh("git-upload-pack '/kid.git'", as: erin, host: host).status, 255)

        let target = try acceptThroughServer(invitation, as: erin, host: host, profile: "kid", into: "kid-erin")
        let index = try String(contentsOf: host.root.appendingPathComponent("keys.index"), encoding: .utf8)
        XCTAssertTrue(index.contains("\(erinKey) kid active -"), index)
        XCTAssertFalse(index.contains(" invited "), "the one-time key is let in no more: \(index)")
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: erin.home.path).contains { $0.hasPrefix("invitation-login") },
                       "the one-time key file is removed")
        // From now on Erin's own key is a member's.
        XCTAssertEqual(try syncJSON(erin, in: target).received, 0)
    }

    /// An open invitation through the server: its one-time key lets each joiner clone and push their
    /// own joining while places are left; once taken, the key is let in no more.
    func testAnOpenInvitationIsJoinedThroughTheServerUntilItsPlacesAreTaken() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        let aliceProfile = try publish("group", on: host)
        let output = try concordOK(["share", "--open", "--role", "user", "--uses", "1"], as: alice, in: aliceProfile)
        let invitation = try XCTUnwrap(output.split(separator: "\n").last.map(String.init))
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let index = { try String(contentsOf: host.root.appendingPathComponent("keys.index"), encoding: .utf8) }
        let opened = try index()
        XCTAssertTrue(opened.contains(" group invited "), "the open invitation's key is let in: \(opened)")

        let erin = try makeDevice("erin", device: "tablet")
        _ = try acceptThroughServer(invitation, as: erin, host: host, profile: "group", into: "group-erin")
        let erinKey = try SSHPublicKey(line: erin.publicKeyLine).fingerprint
        let joined = try index()
        XCTAssertTrue(joined.contains("\(erinKey) group active -"), joined)
        XCTAssertFalse(joined.contains(" invited "), "no place left, so the one-time key is let in no more: \(joined)")

        let fay = try makeDevice("fay", device: "phone")
        let late = try concord(["accept", invitation, sandbox.appendingPathComponent("group-fay").path,
                                "--trust-host", host.sshd.hostKeyFingerprint], as: fay)
        XCTAssertNotEqual(late.status, 0, late.summary)
        XCTAssertEqual(late.stderr.split(separator: "\n").count, 1, late.stderr)
        XCTAssertTrue(late.stderr.contains("all its places are taken"), "said in words: \(late.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("group-fay").path))
    }

    /// Erin is already a member of another profile on the server, so sshd lets her device key in and
    /// `concord serve` refuses it for "kid": accepting a link invitation to "kid" offers the
    /// invitation's one-time key first, and goes through.
    func testALinkInvitationIsAcceptedByADeviceTheServerKnowsFromAnotherProfile() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let erin = try makeDevice("erin", device: "tablet")
        let host = try makeHost(admin: alice)
        _ = try publish("other", on: host, members: [(erin, "user")])
        let aliceProfile = try publish("kid", on: host)
        XCTAssertNotEqual(try ssh("git-upload-pack '/other.git'", as: erin, host: host).status, 255, "sshd lets erin's key in")
        let output = try concordOK(["share", "erin", "--role", "user"], as: alice, in: aliceProfile)
        let invitation = try XCTUnwrap(output.split(separator: "\n").last.map(String.init))
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let target = try acceptThroughServer(invitation, as: erin, host: host, profile: "kid", into: "kid-erin")
        XCTAssertTrue(try concordOK(["members"], as: erin, in: target).contains("erin  user  active"))
    }

    /// The post-receive hook starts concord only for a push that may change who can log in (main
    /// moved from or to nothing, or its `.concord/members` or `.concord/invitations` changed), and
    /// then hands it the same updates. Here the configured executable is a stub that records what it
    /// was given, and the hook runs as git runs it (`GIT_DIR` set, the updates on standard input).
    func testThePostReceiveStartsConcordOnlyWhenMainsMembersOrInvitationsChange() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let stub = sandbox.appendingPathComponent("stub-concord"), received = sandbox.appendingPathComponent("stub-received")
        try Data("#!/bin/sh\ncat >> '\(received.path)'\n".utf8).write(to: stub)
        XCTAssertEqual(chmod(stub.path, 0o755), 0)
        let server = try ConcordServer.initialize(root: sandbox.appendingPathComponent("server"), adminKey: try SSHPublicKey(line: alice.publicKeyLine),
                                                  user: "git", executable: stub.path)
        let work = try makeDirectory("work")
        try gitOK(["init", "-q", "-b", "main"], in: work)
        func commit(_ files: [String: String]) throws -> String {
            for (path, text) in files {
                let url = work.appendingPathComponent(path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(text.utf8).write(to: url)
            }
            try gitOK(["add", "-A"], in: work)
            try gitOK(["commit", "-q", "-m", files.keys.sorted().joined(separator: " ")], in: work)
            return try gitOK(["rev-parse", "HEAD"], in: work)
        }
        let first = try commit([".concord/members/alice.json": "{}", "vocabulary/a.json": "{}"])
        let records = try commit(["vocabulary/a.json": "{\"label\":\"a\"}"])
        let members = try commit([".concord/members/bob.json": "{}"])
        let invitations = try commit([".concord/invitations/x.json": "{}"])
        let gitDirectory = work.appendingPathComponent(".git")
        try server.installHooks(in: gitDirectory.path)
        let zero = String(repeating: "0", count: 40)
        let cases: [(String, String, Bool)] = [
            ("records only", "\(first) \(records) refs/heads/main", false),
            ("another branch", "\(records) \(members) refs/heads/other", false),
            ("members", "\(records) \(members) refs/heads/main", true),
            ("invitations", "\(members) \(invitations) refs/heads/main", true),
            ("main created", "\(zero) \(first) refs/heads/main", true),
            ("an object git cannot read", "\(first) \(String(repeating: "e", count: 40)) refs/heads/main", true),
            ("two refs, main's members among them", "\(first) \(records) refs/heads/other\n\(first) \(members) refs/heads/main", true),
        ]
        for (what, updates, runs) in cases {
            try? FileManager.default.removeItem(at: received)
            let hook = try ProcessRunner.run("/bin/sh", [gitDirectory.appendingPathComponent("hooks/post-receive").path],
                                             environment: environment(["GIT_DIR": gitDirectory.path]), in: work, input: Data((updates + "\n").utf8))
            XCTAssertEqual(hook.status, 0, "\(what): \(hook.summary)")
            XCTAssertEqual((try? String(contentsOf: received, encoding: .utf8)), runs ? updates + "\n" : nil, what)
        }
    }

    func testKeyLookupAtAThousandProfilesOfTenMembers() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let root = sandbox.appendingPathComponent("server")
        try concordOK(["server", "init", "--root", root.path, "--admin-key", alice.publicKeyLine], as: nil)
        var memberships = [String: Membership]()
        var keys = [SSHPublicKey]()
        for profile in 0..<1_000 {
            let members = (0..<10).map { index -> Member in
                let key = SigningKey.generate().publicKey
                keys.append(key)
                // Every tenth an invitation that expired: not let in.
                var member = Member(name: "m\(index)", role: .editor, status: index == 9 ? .invited : .active,
                                    keys: [Member.Key(device: "d", publicKey: key)], addedBy: "alice", addedAt: "2026-01-01T10:00:00.000Z")
                if index == 9 { member.expiresAt = "2026-01-02T10:00:00.000Z" }
                return member
            }
            memberships["p\(profile)"] = Membership(members)
        }
        let server = try ConcordServer.open(root: root)
        try server.keyIndex.replaceAll(memberships)
        let user = server.configuration.user
        let now = ConcordEnvironment.systemClock()

        let rounds = 300
        let started = Date()
        var found = 0
        for round in 0..<rounds {
            let key = keys[(round * 7_919) % keys.count]
            // Each lookup is a new process: it opens the server and reads the index afresh.
            let opened = try ConcordServer.open(root: root)
            if try opened.authorizedKeysLine(user: user, key: key.base64, now: now) != nil { found += 1 }
        }
        let perLookup = Date().timeIntervalSince(started) / Double(rounds) * 1000
        XCTAssertEqual(found, (0..<rounds).filter { ((($0 * 7_919) % keys.count) % 10) != 9 }.count, "expired invitations' keys are not let in")
        print("concord serve --lookup, 1,000 profiles x 10 members: \(String(format: "%.2f", perLookup)) ms per lookup in process")

        // The whole command, as sshd runs it (process start included).
        let processStarted = Date()
        let result = try ProcessRunner.run(try ConcordBinary.required(), ["serve", "--root", root.path, "--lookup", user, keys[0].base64],
                                           environment: environment())
        let processMilliseconds = Date().timeIntervalSince(processStarted) * 1000
        XCTAssertEqual(result.status, 0, result.summary)
        XCTAssertTrue(result.stdout.hasPrefix("command=\"'"), result.stdout)
        XCTAssertTrue(result.stdout.hasSuffix(",restrict \(keys[0].line(comment: nil))\n"), result.stdout)
        print("concord serve --lookup as a process: \(String(format: "%.1f", processMilliseconds)) ms")
        let other = try ProcessRunner.run(try ConcordBinary.required(), ["serve", "--root", root.path, "--lookup", "someone-else", keys[0].base64],
                                          environment: environment())
        XCTAssertEqual(other.status, 0)
        XCTAssertEqual(other.stdout, "", "no key is let in for another account")
    }
}
