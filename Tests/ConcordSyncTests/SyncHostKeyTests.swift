import ConcordTestSupport
import Foundation
import XCTest

/// ssh host keys: unknown keys are refused with their fingerprint and the command that trusts them,
/// `remote trust` and `clone --trust-host` record them, a changed key is refused and never replaced.
final class SyncHostKeyTests: ConcordTestCase {
    func testUnknownThenTrustedThenChangedHostKey() throws {
        let remote = try makeRemote(.ssh)
        let server = try XCTUnwrap(remote.server)
        let laptop = try makeDevice("alice", device: "laptop")
        try allow(laptop, on: remote, trustHost: false)
        let profile = sandbox.appendingPathComponent("laptop")
        try concordOK(["init", profile.path, "--name", "Shared", "--template", "aac"], as: laptop)
        fsckAtEnd.append(profile)
        try concordOK(["remote", "add", "origin", remote.url], as: laptop, in: profile)
        let knownHosts = laptop.home.appendingPathComponent("known_hosts")

        // Unknown: refused, naming the fingerprint and the way to trust it; nothing recorded or sent.
        let unknown = try concord(["sync"], as: laptop, in: profile)
        assertOneLineRefusal(unknown, mentions: [server.hostKeyFingerprint, "concord remote trust origin", "[127.0.0.1]:\(server.port)"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: knownHosts.path), "a refused key was recorded")
        XCTAssertNil(try remoteMain(remote), "something was pushed to an untrusted server")

        // Trusted: recorded in OpenSSH's format, then sync works.
        let trusted = try concordOK(["remote", "trust", "origin"], as: laptop, in: profile)
        XCTAssertTrue(trusted.contains(server.hostKeyFingerprint), trusted)
        XCTAssertEqual(try String(contentsOf: knownHosts, encoding: .utf8), server.knownHostsLine + "\n")
        try concordOK(["sync"], as: laptop, in: profile)
        XCTAssertEqual(try remoteMain(remote), try revParse("HEAD", in: profile))

        // Changed: the server gets a new key; sync is refused loudly, nothing changes here or there.
        try concordOK(["put", "vocabulary/kept", "--json", #"{"label":"kept"}"#], as: laptop, in: profile)
        let oldFingerprint = server.hostKeyFingerprint
        server.stop()
        try server.regenerateHostKey()
        try server.start()
        XCTAssertNotEqual(server.hostKeyFingerprint, oldFingerprint)
        let before = try workTreeSnapshot(profile)
        let trackingBefore = try revParse("refs/remotes/origin/main", in: profile)
        let remoteBefore = try remoteMain(remote)
        let knownHostsBefore = try Data(contentsOf: knownHosts)
        let changed = try concord(["sync"], as: laptop, in: profile)
        assertOneLineRefusal(changed, mentions: ["CHANGED", server.hostKeyFingerprint, "known_hosts"])
        XCTAssertEqual(try workTreeSnapshot(profile), before, "a refused sync changed the profile")
        XCTAssertEqual(try revParse("refs/remotes/origin/main", in: profile), trackingBefore)
        XCTAssertEqual(try remoteMain(remote), remoteBefore, "a commit reached a server whose key changed")
        XCTAssertEqual(try Data(contentsOf: knownHosts), knownHostsBefore, "known_hosts changed silently")
        // --trust-host on clone never overrides a changed key either.
        let overriding = sandbox.appendingPathComponent("overriding")
        let refusedClone = try concord(["clone", remote.url, overriding.path, "--trust-host", server.hostKeyFingerprint], as: laptop)
        assertOneLineRefusal(refusedClone, mentions: ["CHANGED"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: overriding.path), "a refused clone left \(overriding.path)")
        XCTAssertEqual(try Data(contentsOf: knownHosts), knownHostsBefore, "known_hosts changed silently")

        // A fresh device that was told the new fingerprint out of band clones with it.
        let phone = try makeDevice("bob", device: "phone")
        let cloned = try cloneProfile(phone, from: remote, into: "phone")
        XCTAssertEqual(try revParse("HEAD", in: cloned), remoteBefore)
        XCTAssertEqual(try String(contentsOf: phone.home.appendingPathComponent("known_hosts"), encoding: .utf8),
                       server.knownHostsLine + "\n")
    }

    func testServerRefusingTheDeviceKey() throws {
        let remote = try makeRemote(.ssh)
        let laptop = try makeDevice("alice", device: "laptop")
        _ = try publishProfile(owner: laptop, remote: remote, directory: "laptop")
        let stranger = try makeDevice("eve", device: "laptop")
        try Data((try XCTUnwrap(remote.server).knownHostsLine + "\n").utf8)
            .write(to: stranger.home.appendingPathComponent("known_hosts"))
        let target = sandbox.appendingPathComponent("stranger")
        let started = Date()
        let refused = try concord(["clone", remote.url, target.path], as: stranger)
        assertOneLineRefusal(refused, mentions: ["refused this device's key", "concord identity show --public-key"])
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "a refused key must not be retried for long")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "a refused clone left \(target.path)")
    }

    func testCloneTrustsOnlyTheGivenFingerprint() throws {
        let remote = try makeRemote(.ssh)
        let server = try XCTUnwrap(remote.server)
        let laptop = try makeDevice("alice", device: "laptop")
        _ = try publishProfile(owner: laptop, remote: remote, directory: "laptop",
                               records: [("vocabulary/hello", #"{"label":"hello"}"#)])
        let phone = try makeDevice("bob", device: "phone")
        try allow(phone, on: remote, trustHost: false)
        let knownHosts = phone.home.appendingPathComponent("known_hosts")
        let target = sandbox.appendingPathComponent("phone")

        let wrong = try concord(["clone", remote.url, target.path, "--trust-host", "SHA256:wrong"], as: phone)
        assertOneLineRefusal(wrong, mentions: [server.hostKeyFingerprint])
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "a refused clone left \(target.path)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: knownHosts.path), "a refused key was recorded")

        let without = try concord(["clone", remote.url, target.path], as: phone)
        assertOneLineRefusal(without, mentions: [server.hostKeyFingerprint,
                                                 "run 'concord clone \(remote.url) \(target.path) --trust-host \(server.hostKeyFingerprint)'"])
        XCTAssertFalse(without.stderr.contains("remote trust"), "a clone has no profile to run 'remote trust' in: \(without.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "a refused clone left \(target.path)")

        // An invitation's accept, the same: its own --trust-host, not `remote trust origin`.
        let invitation = try shareAndSync(["bob", "--role", "viewer", "--key", phone.publicKeyLine], as: laptop, in: sandbox.appendingPathComponent("laptop"))
        let joining = sandbox.appendingPathComponent("joining")
        let unknownAccept = try concord(["accept", invitation, joining.path], as: phone)
        assertOneLineRefusal(unknownAccept, mentions: [server.hostKeyFingerprint,
                                                       "run 'concord accept <invitation> \(joining.path) --trust-host \(server.hostKeyFingerprint)'"])
        XCTAssertFalse(unknownAccept.stderr.contains("remote trust"), unknownAccept.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: joining.path), "a refused accept left \(joining.path)")

        try concordOK(["clone", remote.url, target.path, "--trust-host", server.hostKeyFingerprint], as: phone)
        fsckAtEnd.append(target)
        XCTAssertEqual(try String(contentsOf: knownHosts, encoding: .utf8), server.knownHostsLine + "\n")
        XCTAssertEqual(try concordOK(["ls"], as: phone, in: target), "vocabulary/hello")
        // The recorded key serves later syncs with no flag.
        XCTAssertEqual(try syncJSON(phone, in: target).received, 0)
    }
}
