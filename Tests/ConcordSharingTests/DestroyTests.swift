@testable import ConcordEngine
@testable import ConcordKit
@testable import ConcordServer
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
        // Destroyed on purpose: both copies are deleted and the remote's directory keeps only the notice (no repository).
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
        // The notices are files beside the remote's objects, removed after each case: the remote stays checked.
        let snapshot = try workTreeSnapshot(scene.otherProfile)
        let bob = try Identity.load(from: scene.other.home)
        let profile = try Profile.open(at: scene.otherProfile, environment: try ConcordEnvironment.fromProcess())
        let byEditor = DeletionNotice.sign(profileID: profile.info.id, profileName: profile.info.name, root: try profile.history.rootCommit(),
                                           identity: bob, at: 1_700_000_000_000)

        // Another profile Alice administers, destroyed on its own path remote: a genuine notice, for another profile.
        let otherRemote = try makeRemote(.path, name: "other.git")
        let other = try publishProfile(owner: scene.owner, remote: otherRemote, directory: "other")
        // Destroyed just below (the copy deleted, the remote reduced to its notice).
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
        // Destroyed on purpose: the server's repository and both copies are deleted.
        fsckAtEnd.removeAll { [aliceProfile, bobsCopy, host.repository("kid")].contains($0) }
        let byEditor = try concord(["destroy", "--yes"], as: bob, in: bobsCopy)
        XCTAssertNotEqual(byEditor.status, 0, byEditor.summary)
        XCTAssertTrue(FileManager.default.fileExists(atPath: host.repository("kid").path))

        let (watcher, output) = try startWatch(bobsCopy, as: bob, interval: "1")
        defer { if watcher.exitStatus() == nil { _ = watcher.stop(grace: 5) } }

        let destroyed = try concordOK(["destroy", "--yes"], as: alice, in: aliceProfile)
        XCTAssertTrue(destroyed.contains("origin: deleted on the server"), destroyed)
        XCTAssertFalse(FileManager.default.fileExists(atPath: host.repository("kid").path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: host.root.appendingPathComponent("repositories/kid.deleted.json").path))

        XCTAssertTrue(waitUntil(60) { watcher.exitStatus() != nil }, output())
        XCTAssertEqual(watcher.exitStatus(), 4, output())
        XCTAssertTrue(output().contains("profile deleted: alice@laptop deleted"), output())
        XCTAssertFalse(FileManager.default.fileExists(atPath: bobsCopy.path))

        // Setting the server up again keeps the deletion: no repository comes back, the members' keys stay (revoked).
        try concordOK(["server", "init", "--root", host.root.path, "--admin-key", alice.publicKeyLine], as: nil)
        XCTAssertFalse(FileManager.default.fileExists(atPath: host.repository("kid").path))
        let keys = try String(contentsOf: host.root.appendingPathComponent("keys.index"), encoding: .utf8)
        XCTAssertTrue(keys.split(separator: "\n").contains { $0.contains(" kid revoked ") && $0.hasSuffix(bob.publicKeyLine.split(separator: " ")[1]) },
                      keys)

        // Nothing is served under that name any more, to the Admin either; a stranger's key learns nothing.
        let (clone, _) = try cloneThroughServer("kid", as: alice, host: host)
        XCTAssertEqual(clone.status, 4, clone.summary)
        XCTAssertTrue(clone.stderr.contains("profile deleted"), clone.summary)
        let stranger = try makeDevice("mallory", device: "laptop")
        let (strangerClone, _) = try cloneThroughServer("kid", as: stranger, host: host)
        XCTAssertNotEqual(strangerClone.status, 0)
        XCTAssertFalse(strangerClone.stderr.contains("deleted"), strangerClone.summary)
    }

    /// The server as the attacker: it claims "kid" was deleted and hands out a notice signed by an
    /// Editor's key (Bob's own, as a stolen or malicious member's would be). The device refuses it
    /// with one line and keeps its copy exactly as it was.
    func testAServerClaimingADeletionWithoutAnAdminsNoticeChangesNothing() throws {
        let (_, bob, host, _, bobsCopy) = try aliceAndBobThroughServer()
        let snapshot = try workTreeSnapshot(bobsCopy)
        let profile = try Profile.open(at: bobsCopy, environment: ConcordEnvironment(home: bob.home))
        let forged = DeletionNotice.sign(profileID: profile.info.id, profileName: profile.info.name, root: try profile.history.rootCommit(),
                                         identity: try Identity.load(from: bob.home), at: 1_700_000_000_000)
        try Data(ServerDeletion(notice: forged, members: try profile.members.list()).bytes)
            .write(to: host.root.appendingPathComponent("repositories/kid.deleted.json"))

        let synced = try concord(["sync"], as: bob, in: bobsCopy)
        XCTAssertEqual(synced.status, 4, synced.summary)
        XCTAssertTrue(synced.stderr.contains("holds a deletion notice that does not count: bob is not an active Admin"), synced.summary)
        XCTAssertEqual(synced.stderr.split(separator: "\n").count, 1, synced.summary)
        XCTAssertFalse(synced.stderr.contains("profile deleted"), synced.summary)
        XCTAssertEqual(try workTreeSnapshot(bobsCopy), snapshot)
    }

    private func profiles(_ device: TestDevice) throws -> [[String: Any]] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try concordOK(["profiles", "--json"], as: device).utf8)) as? [[String: Any]])
    }
}

/// `concord identity delete`: leave every shared profile, destroy the ones the person alone
/// administers, remove the identity; what cannot be reached is said, and a second run finishes.
final class AccountDeletionTests: ConcordTestCase {
    func testIdentityDeleteDestroysWhatItAloneAdministersLeavesTheRestAndFinishesOnASecondRun() throws {
        // Alice alone administers "mine" (Bob edits it); Bob administers "theirs" (Alice edits it).
        let mine = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        let theirsRemote = try makeRemote(.path, name: "theirs.git")
        let theirs = try publishProfile(owner: mine.other, remote: theirsRemote, directory: "theirs-bob", members: [(mine.owner, "editor")])
        let alicesTheirs = try cloneProfile(mine.owner, from: theirsRemote, into: "theirs-alice")
        fsckAtEnd.removeAll { [mine.remote.bare, mine.ownerProfile, mine.otherProfile, alicesTheirs].contains($0) }

        let unconfirmed = try concord(["identity", "delete"], as: mine.owner)
        XCTAssertNotEqual(unconfirmed.status, 0)
        XCTAssertTrue(unconfirmed.stderr.contains("run it again with --yes"), unconfirmed.summary)

        // "theirs" is out of reach: it is not done, and the identity stays.
        let away = theirsRemote.bare.appendingPathExtension("away")
        try FileManager.default.moveItem(at: theirsRemote.bare, to: away)
        let first = try concord(["identity", "delete", "--yes", "--json"], as: mine.owner)
        XCTAssertEqual(first.status, 1, first.summary)
        let firstReport = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(firstReport["identityDeleted"] as? Bool, false)
        let results = Dictionary(uniqueKeysWithValues: ((firstReport["profiles"] as? [[String: Any]]) ?? []).map {
            ($0["path"] as? String ?? "", $0["result"] as? String ?? "")
        })
        XCTAssertEqual(results[mine.ownerProfile.path], "destroyed", "\(firstReport)")
        XCTAssertEqual(results[alicesTheirs.path], "NOT done", "\(firstReport)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: mine.ownerProfile.path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: alicesTheirs.path), "kept for the next run")
        XCTAssertTrue(FileManager.default.fileExists(atPath: mine.owner.home.appendingPathComponent("identity.json").path))
        XCTAssertEqual(try concord(["sync"], as: mine.other, in: mine.otherProfile).status, 4, "Bob's copy of the destroyed profile goes")
        XCTAssertFalse(FileManager.default.fileExists(atPath: mine.otherProfile.path))

        try FileManager.default.moveItem(at: away, to: theirsRemote.bare)
        let second = try concordOK(["identity", "delete", "--yes"], as: mine.owner)
        XCTAssertTrue(second.contains("left: departure recorded on origin"), second)
        XCTAssertTrue(second.contains("deleted identity alice@laptop"), second)
        XCTAssertFalse(FileManager.default.fileExists(atPath: alicesTheirs.path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: mine.owner.home.appendingPathComponent("id_ed25519").path))
        XCTAssertFalse(FileManager.default.fileExists(atPath: mine.owner.home.appendingPathComponent("profiles.json").path))

        // Bob sees Alice's departure in "theirs": revoked by herself, no device keys left.
        try concordOK(["sync"], as: mine.other, in: theirs)
        let members = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try concordOK(["members", "--json"], as: mine.other, in: theirs).utf8))
                                    as? [[String: Any]])
        let alice = try XCTUnwrap(members.first { $0["name"] as? String == "alice" })
        XCTAssertEqual(alice["status"] as? String, "revoked")
        XCTAssertEqual(alice["revokedBy"] as? String, "alice")
        XCTAssertEqual((alice["devices"] as? [Any])?.count, 0)
        try concordOK(["verify"], as: mine.other, in: theirs)
    }

    /// The seventh red-team pass (F4): alice's laptop syncs "Shared" with origin and backup; from her
    /// phone, through backup alone, she makes bob an Admin. Her laptop, where she alone administers
    /// it, deletes her identity: every remote is synced before deciding, so she leaves, and nothing
    /// is destroyed on either remote.
    func testIdentityDeleteSyncsEveryRemoteBeforeDecidingToDestroy() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let phone = try makeDevice("alice", device: "phone")
        let bob = try makeDevice("bob", device: "laptop")
        let (origin, backup, _) = try publishedToTwoRemotes(by: alice, directory: "two-remotes-laptop", members: [(phone, "admin")])
        let phones = try cloneProfile(phone, from: backup, into: "two-remotes-phone")
        try concordOK(["members", "add", "bob", "--role", "admin", "--key", bob.publicKeyLine, "--device", bob.device], as: phone, in: phones)
        try concordOK(["sync"], as: phone, in: phones)
        let bobs = try cloneProfile(bob, from: backup, into: "two-remotes-bob")

        let deleted = try concordOK(["identity", "delete", "--yes"], as: alice)
        XCTAssertTrue(deleted.contains("left: departure recorded on origin") && !deleted.contains("destroyed"), deleted)
        for remote in [origin, backup] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: remote.bare.appendingPathComponent("HEAD").path), "\(remote.bare.lastPathComponent) kept")
        }
        try concordOK(["sync"], as: bob, in: bobs)
        try concordOK(["put", "vocabulary/after", "--json", #"{"label":"still here"}"#], as: bob, in: bobs)
        try concordOK(["sync"], as: bob, in: bobs)
    }

    /// The eighth red-team pass (F7): alice's laptop makes bob an Admin and syncs origin and backup;
    /// bob, whose copy knows only backup, destroys the profile there. Deleting alice's identity finds
    /// backup deleted and still leaves origin: her departure is recorded there, and origin keeps the
    /// profile for bob.
    func testIdentityDeleteLeavesTheOtherRemotesWhenOneDeletedTheProfile() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "laptop")
        let (origin, backup, _) = try publishedToTwoRemotes(by: alice, directory: "deleted-backup-laptop", members: [(bob, "admin")])
        try destroy(backup, as: bob, into: "deleted-backup-bob")

        let deleted = try concordOK(["identity", "delete", "--yes"], as: alice)
        XCTAssertTrue(deleted.contains("departure recorded on origin") && deleted.contains("backup: the profile was deleted"), deleted)
        XCTAssertFalse(deleted.contains("destroyed"), deleted)
        let file = try gitOK(["--git-dir", origin.bare.path, "show", "main:.concord/members/alice.json"])
        let aliceOnOrigin = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(file.utf8)) as? [String: Any])
        XCTAssertEqual(aliceOnOrigin["status"] as? String, "revoked", "her departure reached origin: \(file)")
        XCTAssertEqual(aliceOnOrigin["revokedBy"] as? String, "alice")
        XCTAssertEqual((aliceOnOrigin["keys"] as? [Any])?.count, 0)
    }

    /// The ninth red-team pass (F3): a genuine deletion notice copied into origin's folder, beside
    /// its live repository, deletes nothing and counts for nothing: alice's `identity delete` is not
    /// done for that profile (her identity stays), and her sync says why, changing nothing.
    func testANoticeBesideALiveRepositoryIsRefused() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "laptop")
        let (origin, backup, laptops) = try publishedToTwoRemotes(by: alice, directory: "planted-notice-laptop", members: [(bob, "admin")])
        try destroy(backup, as: bob, into: "planted-notice-bob")
        let notice = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: backup.bare.path).first { $0 != "concord" })
        try FileManager.default.copyItem(at: backup.bare.appendingPathComponent(notice), to: origin.bare.appendingPathComponent(notice))
        let head = try gitOK(["--git-dir", origin.bare.path, "rev-parse", "main"])

        let synced = try concord(["sync"], as: alice, in: laptops)
        XCTAssertNotEqual(synced.status, 0)
        XCTAssertTrue(synced.stderr.contains("holds a deletion notice beside a live repository"), synced.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: laptops.path), "the copy stays")
        let deleted = try concord(["identity", "delete", "--yes", "--json"], as: alice)
        XCTAssertEqual(deleted.status, 1, deleted.stdout + deleted.stderr)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(deleted.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(report["identityDeleted"] as? Bool, false, "\(report)")
        XCTAssertEqual(((report["profiles"] as? [[String: Any]])?.first?["result"] as? String), "NOT done", "\(report)")
        XCTAssertEqual(try gitOK(["--git-dir", origin.bare.path, "rev-parse", "main"]), head, "origin is untouched")
        XCTAssertTrue(FileManager.default.fileExists(atPath: alice.home.appendingPathComponent("identity.json").path))
    }

    /// `owner`'s copy in `<sandbox>/<directory>` of a profile published on origin with `members`,
    /// then given backup as a second remote and synced there too.
    private func publishedToTwoRemotes(by owner: TestDevice, directory: String, members: [(TestDevice, String)])
        throws -> (origin: SyncRemote, backup: SyncRemote, copy: URL) {
        let origin = try makeRemote(.path, name: "origin.git")
        let backup = try makeRemote(.path, name: "backup.git")
        let copy = try publishProfile(owner: owner, remote: origin, directory: directory, members: members)
        try concordOK(["remote", "add", "backup", backup.url], as: owner, in: copy)
        try concordOK(["sync", "--remote", "backup"], as: owner, in: copy)
        return (origin, backup, copy)
    }

    /// `device` clones `remote` into `<sandbox>/<directory>` and destroys the profile there.
    private func destroy(_ remote: SyncRemote, as device: TestDevice, into directory: String) throws {
        let copy = try cloneProfile(device, from: remote, into: directory)
        try concordOK(["destroy", "--yes"], as: device, in: copy)
        fsckAtEnd.removeAll { $0 == remote.bare }   // it keeps only the deletion notice
    }
}
