@testable import ConcordKit
import ConcordTestSupport
import ConcordTrust
import Foundation
import XCTest

/// `concord destroy`: an Admin deletes a profile on its remotes and on this device, leaving a
/// signed deletion notice; every other device checks the notice against the membership it holds
/// and removes its copy ("profile deleted", exit 4). A notice that does not count changes nothing.
final class DestroyTests: ConcordServeTestCase {
    /// Over a path remote: without --yes, or by an Editor, nothing happens; the Admin's destroy
    /// leaves only the notice in the remote's directory and removes her copy; Bob's next sync
    /// (with an unsent edit) reports the deletion and removes his copy; both devices list the
    /// profile as removed, saying why; a clone finds only the notice.
    func testAnAdminDestroysAPathRemoteAndTheOtherDeviceRemovesItsCopy() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        fsckAtEnd.removeAll { [scene.remote.bare, scene.ownerProfile, scene.otherProfile].contains($0) }
        let published = try remoteMain(scene.remote)

        let unconfirmed = try concord(["destroy"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertNotEqual(unconfirmed.status, 0)
        XCTAssertTrue(unconfirmed.stderr.contains("run it again with --yes"), unconfirmed.summary)
        let byEditor = try concord(["destroy", "--yes"], as: scene.other, in: scene.otherProfile)
        XCTAssertEqual(byEditor.status, 1, byEditor.summary)
        XCTAssertTrue(byEditor.stderr.contains("deleting the profile needs admin"), byEditor.summary)
        XCTAssertEqual(try remoteMain(scene.remote), published, "nothing deleted")
        XCTAssertTrue(FileManager.default.fileExists(atPath: scene.ownerProfile.path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: scene.otherProfile.path))

        try concordOK(["put", "vocabulary/unsent", "--json", #"{"label":"unsent"}"#], as: scene.other, in: scene.otherProfile)
        let destroyed = try concordOK(["destroy", "--yes", "--json"], as: scene.owner, in: scene.ownerProfile)
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(destroyed.utf8)) as? [String: Any])
        XCTAssertEqual(result["copyDeleted"] as? Bool, true, destroyed)
        XCTAssertEqual((result["failed"] as? [Any])?.count, 0, destroyed)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scene.ownerProfile.path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scene.remote.bare.path), [DeletionNotice.fileName],
                       "the remote keeps only the notice")
        XCTAssertEqual(try profiles(scene.owner).first?["access"] as? String, "removed")

        let synced = try concord(["sync"], as: scene.other, in: scene.otherProfile)
        XCTAssertEqual(synced.status, 4, synced.summary)
        XCTAssertTrue(synced.stderr.contains("profile deleted: alice@laptop deleted Shared"), synced.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scene.otherProfile.path))
        let listed = try profiles(scene.other)
        XCTAssertEqual(listed.first?["access"] as? String, "removed", "\(listed)")
        XCTAssertTrue((listed.first?["note"] as? String)?.contains("deleted: alice@laptop deleted the profile") == true, "\(listed)")

        // Cloning it again finds only the notice.
        let clone = try concord(["clone", scene.remote.url, sandbox.appendingPathComponent("again").path], as: scene.other)
        XCTAssertEqual(clone.status, 4, clone.summary)
        XCTAssertTrue(clone.stderr.contains("profile deleted"), clone.summary)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("again").path))
    }

    /// A notice that does not delete this profile changes nothing on the device that finds it: one
    /// an Editor signed, one another profile's Admin signed (for that profile), and a damaged one.
    func testANoticeThatDoesNotCountChangesNothing() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        let snapshot = try workTreeSnapshot(scene.otherProfile)
        let bob = try Identity.load(from: scene.other.home)
        let profile = try Profile.open(at: scene.otherProfile, environment: try ConcordEnvironment.fromProcess())
        let byEditor = DeletionNotice.sign(profileID: profile.info.id, profileName: profile.info.name, root: try profile.rootCommit(),
                                           identity: bob, at: 1_700_000_000_000)

        // Another profile Alice administers, destroyed on its own path remote: a genuine notice, for another profile.
        let otherRemote = try makeRemote(.path, name: "other.git")
        let other = try publishProfile(owner: scene.owner, remote: otherRemote, directory: "other")
        fsckAtEnd.removeAll { $0 == otherRemote.bare || $0 == other }
        try concordOK(["destroy", "--yes"], as: scene.owner, in: other)
        let foreign = try Data(contentsOf: otherRemote.bare.appendingPathComponent(DeletionNotice.fileName))
        var damaged = byEditor.bytes
        damaged[damaged.count / 2] ^= 0x01

        for (name, bytes, expected) in [("editor", Data(byEditor.bytes), "bob is not an active Admin"),
                                        ("foreign", foreign, "it is for another profile"),
                                        ("damaged", Data(damaged), "is not valid")] {
            let noticePath = scene.remote.bare.appendingPathComponent(DeletionNotice.fileName)
            try bytes.write(to: noticePath)
            let synced = try concord(["sync"], as: scene.other, in: scene.otherProfile)
            XCTAssertNotEqual(synced.status, 0, name)
            XCTAssertTrue(synced.stderr.contains(expected), "\(name): \(synced.summary)")
            XCTAssertEqual(try workTreeSnapshot(scene.otherProfile), snapshot, name)
            try FileManager.default.removeItem(at: noticePath)
        }
        // The remote is intact: the next sync works.
        try concordOK(["sync"], as: scene.other, in: scene.otherProfile)
    }

    /// On a concord server, through sshd and `concord serve`: an Editor's key may not destroy; the
    /// Admin's destroy deletes the repository (the server keeps the notice); Bob's watch learns it
    /// from the notice and removes his copy; nobody can fetch or push the profile any more, and
    /// a stranger's key cannot read the notice.
    func testAnAdminDestroysAProfileOnAConcordServer() throws {
        let (alice, bob, host, aliceProfile, bobsCopy) = try aliceAndBobThroughServer()
        fsckAtEnd.removeAll { [aliceProfile, bobsCopy, host.repository("kid")].contains($0) }
        let byEditor = try concord(["destroy", "--yes"], as: bob, in: bobsCopy)
        XCTAssertNotEqual(byEditor.status, 0, byEditor.summary)
        XCTAssertTrue(FileManager.default.fileExists(atPath: host.repository("kid").path))

        let log = sandbox.appendingPathComponent("watch-bob.log")
        let watcher = try ChildProcess(path: try ConcordBinary.required(), arguments: ["watch", "-C", bobsCopy.path, "--interval", "1", "--json"],
                                       environment: concordEnvironment(bob), output: log)
        defer { if watcher.exitStatus() == nil { _ = watcher.stop(grace: 5) } }
        let output = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        XCTAssertTrue(waitUntil(60) { output().contains(#""event":"started""#) }, output())

        let destroyed = try concordOK(["destroy", "--yes"], as: alice, in: aliceProfile)
        XCTAssertTrue(destroyed.contains("origin: deleted on the server"), destroyed)
        XCTAssertFalse(FileManager.default.fileExists(atPath: host.repository("kid").path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: host.root.appendingPathComponent("repositories/kid.deleted.json").path))

        XCTAssertTrue(waitUntil(60) { watcher.exitStatus() != nil }, output())
        XCTAssertEqual(watcher.exitStatus(), 4, output())
        XCTAssertTrue(output().contains("profile deleted: alice@laptop deleted"), output())
        XCTAssertFalse(FileManager.default.fileExists(atPath: bobsCopy.path))

        // Nothing is served under that name any more, to the Admin either; a stranger's key learns nothing.
        let (clone, _) = try cloneThroughServer("kid", as: alice, host: host)
        XCTAssertEqual(clone.status, 4, clone.summary)
        XCTAssertTrue(clone.stderr.contains("profile deleted"), clone.summary)
        let stranger = try makeDevice("mallory", device: "laptop")
        let (strangerClone, _) = try cloneThroughServer("kid", as: stranger, host: host)
        XCTAssertNotEqual(strangerClone.status, 0)
        XCTAssertFalse(strangerClone.stderr.contains("deleted"), strangerClone.summary)
    }

    private func profiles(_ device: SyncDevice) throws -> [[String: Any]] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try concordOK(["profiles", "--json"], as: device).utf8)) as? [[String: Any]])
    }
}
