import ConcordKit
import ConcordTestSupport
import ConcordTrust
import Foundation
import XCTest

/// A revoked member on a concord server: their key still reaches `concord serve`, which shows it
/// main as it was at the revocation and nothing newer, and takes no push; the device learns of
/// its revocation from the Admin's signed commit (`RevocationView`).
final class ServeRevocationTests: ConcordServeTestCase {
    /// A `concord-wait … pack` Bob opened while still a member, answered by the push that revokes
    /// him and adds a record after that: the answer comes from what his key may read once main
    /// moved — his view, the revocation commit — and its pack holds nothing written after it.
    func testAWaitOpenedBeforeARevocationIsAnsweredWithNothingWrittenAfterIt() throws {
        let (alice, bob, host, aliceProfile, _) = try aliceAndBobThroughServer()
        let before = try serverMain("kid", host: host)
        // Bob's wait, over plain ssh whose input stays open (a wait ends when its device hangs up).
        let knownHosts = try trust(host, by: bob)
        let out = sandbox.appendingPathComponent("wait.out"), err = sandbox.appendingPathComponent("wait.err")
        let ssh = ["/usr/bin/ssh", "-T", "-F", "/dev/null", "-i", bob.keyFile.path, "-o", "IdentitiesOnly=yes",
                   "-o", "UserKnownHostsFile=\(knownHosts.path)", "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
                   "-o", "BatchMode=yes", "-p", String(host.sshd.port), "\(host.sshd.user)@127.0.0.1",
                   "concord-wait '/kid.git' \(before) 30 pack"].map(ProcessRunner.shellQuoted).joined(separator: " ")
        let script = "exec 3< <(sleep 60); \(ssh) <&3 > \(ProcessRunner.shellQuoted(out.path)) 2> \(ProcessRunner.shellQuoted(err.path)); "
            + "status=$?; kill $! 2>/dev/null; exit $status"
        let waiting = try ChildProcess(path: "/bin/bash", arguments: ["-c", script], environment: environment(),
                                       output: sandbox.appendingPathComponent("wait.log"))
        defer { if waiting.exitStatus() == nil { _ = waiting.stop(grace: 2) } }
        // The wait is open (its concord serve runs) before Alice pushes.
        XCTAssertTrue(waitUntil(20) {
            (try? ProcessRunner.run("/usr/bin/pgrep", ["-f", "serve --root \(host.root.path)"], environment: self.environment()).status) == 0
        })
        Thread.sleep(forTimeInterval: 1)
        XCTAssertNil(waiting.exitStatus(), "the wait ended before anything moved")
        try concordOK(["revoke", "bob"], as: alice, in: aliceProfile)
        let revocation = try gitOK(["rev-parse", "HEAD"], in: aliceProfile)
        try concordOK(["put", "vocabulary/after", "--json", #"{"label":"written after the revocation"}"#], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let main = try serverMain("kid", host: host)
        XCTAssertTrue(waitUntil(40) { waiting.exitStatus() != nil }, "the wait did not answer")
        XCTAssertEqual(waiting.exitStatus(), 0, (try? String(contentsOf: err, encoding: .utf8)) ?? "")
        let result = try Data(contentsOf: out)

        // The advertisement, then the pack.
        let bytes = [UInt8](result)
        var offset = 0, advertised = ""
        while offset + 4 <= bytes.count, let length = Int(String(decoding: bytes[offset..<(offset + 4)], as: UTF8.self), radix: 16) {
            if length == 0 { offset += 4; break }
            advertised += String(decoding: bytes[(offset + 4)..<(offset + length)], as: UTF8.self)
            offset += length
        }
        XCTAssertTrue(advertised.contains(revocation), "the answer is not Bob's view: \(advertised)")
        XCTAssertFalse(advertised.contains(main), "the answer shows Bob main after the revocation: \(advertised)")
        let pack = Data(bytes[offset...])
        XCTAssertEqual(Array(pack.prefix(4)), Array("PACK".utf8), "no pack came with the answer")
        // Indexed beside a copy of the server's objects (its bases): the revocation is in it, the record after it is not.
        let copy = sandbox.appendingPathComponent("server-copy.git")
        try FileManager.default.copyItem(at: host.repository("kid"), to: copy)
        fsckAtEnd.append(copy)
        let indexed = try ProcessRunner.run("/usr/bin/git", ["index-pack", "--fix-thin", "--stdin"], environment: environment(), in: copy, input: pack)
        XCTAssertEqual(indexed.status, 0, indexed.summary)
        let name = indexed.stdout.split(whereSeparator: \.isWhitespace).last.map(String.init) ?? ""
        let listed = try gitOK(["verify-pack", "-v", "objects/pack/pack-\(name).idx"], in: copy)
        XCTAssertTrue(listed.contains(revocation), listed)
        XCTAssertFalse(listed.contains(main), "the pack holds the commit written after the revocation")
    }

    /// Bob's `watch` (polling every 300 s, so only the server's live update can tell it) reports
    /// "access removed" and deletes its copy within seconds of Alice's push; what Alice wrote
    /// after the revocation never reaches Bob's key.
    func testARevokedDeviceWatchingThroughConcordServeLearnsItAndDeletesItsCopy() throws {
        let (alice, bob, host, aliceProfile, bobsCopy) = try aliceAndBobThroughServer()
        // Bob's copy is deleted when his device learns of the revocation (asserted below): nothing to check.
        fsckAtEnd.removeAll { $0 == bobsCopy }
        let (watcher, output) = try startWatch(bobsCopy, as: bob, interval: "300")
        defer { if watcher.exitStatus() == nil { _ = watcher.stop(grace: 5) } }

        try concordOK(["revoke", "bob"], as: alice, in: aliceProfile)
        let revocation = try gitOK(["rev-parse", "HEAD"], in: aliceProfile)
        try concordOK(["put", "vocabulary/after", "--json", #"{"label":"written after the revocation"}"#], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let pushed = Date()
        let main = try serverMain("kid", host: host)
        XCTAssertNotEqual(main, revocation)

        XCTAssertTrue(waitUntil(60) { watcher.exitStatus() != nil }, "watch still running 60 s after the revocation's push: \(output())")
        let seconds = Date().timeIntervalSince(pushed)
        print("revoked device's watch ended \(String(format: "%.2f", seconds)) s after the revocation's push returned (concord serve, live updates)")
        XCTAssertEqual(watcher.exitStatus(), 4, output())
        XCTAssertTrue(output().contains("access removed: alice revoked your access"), output())
        XCTAssertFalse(FileManager.default.fileExists(atPath: bobsCopy.path), "the revoked device kept its copy")

        // The server keeps Bob's view at the revocation commit; Bob's key is shown that alone.
        let view = "refs/namespaces/revoked-626f62/refs/heads/main"
        XCTAssertEqual(try gitOK(["rev-parse", view], in: host.repository("kid")), revocation)
        let advertised = try ssh("git-upload-pack '/kid.git'", as: bob, host: host)
        XCTAssertTrue(advertised.stdout.contains("\(revocation) refs/heads/main"), advertised.summary)
        XCTAssertFalse(advertised.stdout.contains(main), "Bob's key sees main after the revocation: \(advertised.summary)")
        XCTAssertFalse(advertised.stdout.contains("namespaces"), advertised.summary)
        let push = try ssh("git-receive-pack '/kid.git'", as: bob, host: host)
        XCTAssertNotEqual(push.status, 0, push.summary)
        XCTAssertTrue(push.stderr.contains("access removed: alice revoked bob's access to \"kid\""), push.stderr)
        let wait = try ssh("concord-wait '/kid.git' \(revocation) 1", as: bob, host: host)
        XCTAssertFalse(wait.stdout.contains(main), "a wait shows Bob main after the revocation: \(wait.summary)")
        // Members never see the views.
        let members = try ssh("git-upload-pack '/kid.git'", as: alice, host: host)
        XCTAssertTrue(members.stdout.contains("\(main) refs/heads/main"), members.summary)
        XCTAssertFalse(members.stdout.contains("namespaces"), members.summary)

        // Plain git asking for protocol v2 (which would hand out any object by id) gets v0, which
        // refuses an object it did not advertise: main after the revocation stays out of reach.
        let probe = sandbox.appendingPathComponent("probe")
        try gitOK(["init", "--quiet", probe.path])
        fsckAtEnd.append(probe)
        let v2 = try git(["-c", "protocol.version=2", "fetch", host.url("kid"), main], in: probe, environment: try gitSSHEnvironment(bob, host: host))
        XCTAssertNotEqual(v2.status, 0, "a revoked key fetched main by its id: \(v2.summary)")
        XCTAssertNotEqual(try git(["cat-file", "-e", main], in: probe).status, 0)

        // A view recorded late (here: deleted, then recorded by the next membership change) still
        // stops at the revocation, not at what was pushed since.
        try gitOK(["update-ref", "-d", view], in: host.repository("kid"))
        let carol = try makeDevice("carol", device: "phone")
        try concordOK(["members", "add", "carol", "--role", "viewer", "--key", carol.publicKeyLine, "--device", "phone"], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        XCTAssertEqual(try gitOK(["rev-parse", view], in: host.repository("kid")), revocation, "the late view is the revocation commit")
        // Invited again, Bob has no view; revoked a second time, his view is that second revocation.
        try concordOK(["members", "add", "bob", "--role", "editor", "--key", bob.publicKeyLine, "--device", "phone"], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        XCTAssertNotEqual(try git(["rev-parse", "--verify", "--quiet", view], in: host.repository("kid")).status, 0, "the old view is gone")
        try concordOK(["revoke", "bob"], as: alice, in: aliceProfile)
        let second = try gitOK(["rev-parse", "HEAD"], in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        XCTAssertEqual(try gitOK(["rev-parse", view], in: host.repository("kid")), second)

        // Without a recorded view (a repository from before views), the revoked key is refused outright.
        try gitOK(["update-ref", "-d", view], in: host.repository("kid"))
        let refused = try ssh("git-upload-pack '/kid.git'", as: bob, host: host)
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        XCTAssertTrue(refused.stderr.contains("access removed: alice revoked bob's access to \"kid\""), refused.stderr)
        XCTAssertFalse(refused.stdout.contains(revocation), refused.summary)
    }

    /// The view contains the main before the revoking push, so it is a fast-forward for the revoked
    /// device: here Alice revokes Bob offline while Bob pushes, and her sync merges Bob's work in
    /// on top of the revocation; Bob's view is that merge, not the revocation commit (which lacks
    /// the main Bob last fetched), and Bob's sync reports "access removed", not a rewritten history.
    func testTheViewOfAnOfflineRevocationContainsWhatTheDeviceFetched() throws {
        let (alice, bob, host, aliceProfile, bobsCopy) = try aliceAndBobThroughServer()
        // Bob's copy is deleted when his device learns of the revocation (asserted below): nothing to check.
        fsckAtEnd.removeAll { $0 == bobsCopy }
        try concordOK(["revoke", "bob"], as: alice, in: aliceProfile)
        let revocation = try gitOK(["rev-parse", "HEAD"], in: aliceProfile)
        try concordOK(["put", "vocabulary/ball", "--json", #"{"label":"ball"}"#], as: bob, in: bobsCopy)
        XCTAssertEqual(try syncJSON(bob, in: bobsCopy).sent, 1)
        let bobsMain = try serverMain("kid", host: host)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let view = try gitOK(["rev-parse", "refs/namespaces/revoked-626f62/refs/heads/main"], in: host.repository("kid"))
        XCTAssertNotEqual(view, revocation, "the view must contain the main Bob fetched")
        XCTAssertEqual(try git(["merge-base", "--is-ancestor", bobsMain, view], in: host.repository("kid")).status, 0)

        let synced = try concord(["sync"], as: bob, in: bobsCopy)
        XCTAssertEqual(synced.status, 4, synced.summary)
        XCTAssertTrue(synced.stderr.contains("access removed: alice revoked your access"), synced.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: bobsCopy.path), "the revoked device kept its copy")
    }
}
