import Foundation
import XCTest

/// Integrity without an attacker: a sync stopped half-way is finished by the next command, an
/// uncommitted edit is never overwritten, a server's refusal is not an outage.
final class SyncIntegrityTests: SyncTestCase {
    /// git holds `index.lock` while a sync brings a change in: the sync fails with HEAD moved,
    /// and the next sync (once the lock is gone) brings the working tree and index in line, so a
    /// plain `git commit -a` cannot revert the received records.
    func testASyncThatCouldNotWriteTheIndexIsFinishedByTheNextOne() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let remote = try makeRemote(.path)
        let aliceProfile = try publishProfile(owner: alice, remote: remote, directory: "alice")
        let tablet = try makeDevice("alice", device: "tablet")
        try concordOK(["members", "add", "alice", "--role", "admin", "--key", tablet.publicKeyLine, "--device", "tablet"], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let tabletProfile = try cloneProfile(tablet, from: remote, into: "tablet")
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)

        let lock = tabletProfile.appendingPathComponent(".git/index.lock")
        try Data().write(to: lock)
        let failed = try concord(["sync"], as: tablet, in: tabletProfile)
        XCTAssertNotEqual(failed.status, 0, "the index was locked: \(failed.stdout)")
        try FileManager.default.removeItem(at: lock)

        try concordOK(["sync"], as: tablet, in: tabletProfile)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: tabletProfile), "", "index and working tree match HEAD")
        XCTAssertEqual(try gitOK(["diff", "HEAD", "--stat"], in: tabletProfile), "")
        XCTAssertTrue(try concordOK(["get", "vocabulary/cat"], as: tablet, in: tabletProfile).contains("cat"))
        try assertFsck(tabletProfile)
    }

    /// A hand edit to a record file that no commit holds is never overwritten by an incoming
    /// change: the sync refuses, naming the file, and changes nothing.
    func testAnUncommittedEditIsNeverOverwritten() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "tablet")
        let remote = try makeRemote(.path)
        let aliceProfile = try publishProfile(owner: alice, remote: remote, directory: "alice", members: [(bob, "editor")],
                                              records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        let bobProfile = try cloneProfile(bob, from: remote, into: "bob")
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
    }
}
