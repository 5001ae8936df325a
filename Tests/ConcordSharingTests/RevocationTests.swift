import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Revoking a member, changing roles and a member's own device keys: only admins revoke and change
/// roles, a profile always keeps an active admin, and a revoked device learns it on its next sync or
/// watch tick, says so, and deletes its copy (saving what it never sent).
final class RevocationTests: ConcordTestCase {
    func testARevokedDeviceReportsAccessRemovedAndDeletesItsCopyOverAPath() throws { try revokedDeviceLeaves(.path) }

    func testARevokedDeviceReportsAccessRemovedAndDeletesItsCopyOverSSH() throws { try revokedDeviceLeaves(.ssh) }

    private func revokedDeviceLeaves(_ transport: SyncTransport) throws {
        let scene = try makeTwoDevices(transport, other: ("bob", "tablet"), role: "editor",
                                       records: [("vocabulary/puzzle", #"{"label":"everyone has this"}"#)])
        let (alice, bob) = (scene.owner, scene.other)
        // Bob's copy is meant to go: it is not checked at the end.
        fsckAtEnd.removeAll { $0 == scene.otherProfile }
        try concordOK(["put", "vocabulary/unsent", "--json", #"{"label":"written before the revocation arrived"}"#], as: bob,
                      in: scene.otherProfile)
        XCTAssertTrue(try concordOK(["revoke", "bob"], as: alice, in: scene.ownerProfile).contains("revoked bob"))
        try concordOK(["sync"], as: alice, in: scene.ownerProfile)
        let published = try remoteMain(scene.remote)
        let members = try concordOK(["members", "--json"], as: alice, in: scene.ownerProfile)
        XCTAssertTrue(members.contains(#""revokedBy": "alice""#), members)

        let result = try concord(["sync"], as: bob, in: scene.otherProfile)
        assertOneLineRefusal(result, status: 4, mentions: ["access removed: alice revoked your access to Shared", "copy was deleted"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: scene.otherProfile.path), "the revoked device kept its copy")
        XCTAssertEqual(try remoteMain(scene.remote), published, "the revoked device pushed")
        // What Bob wrote and never sent is saved, not silently lost.
        let saved = bob.home.appendingPathComponent("saved")
        let dumps = try FileManager.default.contentsOfDirectory(atPath: saved.path)
        XCTAssertEqual(dumps.count, 1, "\(dumps)")
        let dump = try String(contentsOf: saved.appendingPathComponent(dumps[0]), encoding: .utf8)
        XCTAssertTrue(dump.contains("written before the revocation arrived"), dump)
        // Only what never reached the remote: not the records every device already has.
        XCTAssertFalse(dump.contains("everyone has this"), dump)
        XCTAssertTrue(result.stderr.contains(dumps[0]), result.stderr)
        let registry = (try? String(contentsOf: bob.home.appendingPathComponent("profiles.json"), encoding: .utf8)) ?? ""
        // Listed still, as removed, so `concord profiles` can say why (ProfileListTests).
        XCTAssertTrue(registry.contains(#""removed": "access removed: alice revoked bob's access"#), registry)
    }

    /// A revocation that arrives as a side (a peer's branch merged with `concord merge`, as `remote
    /// restore` merges a damaged line) names the Admin who revoked, not an Admin who admitted them
    /// (the second red-team pass's repro-P gave "the Admin who admitted bob").
    func testARevocationMergedInAsASideNamesWhoRevoked() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        try concordOK(["put", "vocabulary/bobs", "--json", #"{"label":"by bob"}"#], as: scene.other, in: scene.otherProfile)
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        let revocation = try revParse("HEAD", in: scene.ownerProfile)
        try gitOK(["fetch", "--quiet", scene.ownerProfile.path, "main:refs/peer/alice"], in: scene.otherProfile)
        assertOneLineRefusal(try concord(["merge", revocation], as: scene.other, in: scene.otherProfile), status: 4,
                             mentions: ["access removed: alice revoked your access to Shared"])
    }

    func testKeepLeavesTheRevokedCopyInPlace() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        let head = try revParse("HEAD", in: scene.otherProfile)
        let result = try concord(["sync", "--keep"], as: scene.other, in: scene.otherProfile)
        assertOneLineRefusal(result, status: 4, mentions: ["access removed", "kept (--keep)"])
        XCTAssertEqual(try revParse("HEAD", in: scene.otherProfile), head, "nothing of the revocation was merged")
    }

    func testOnlyAdminsRevokeAndChangeRolesAndTheLastAdminStays() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        let (alice, bob) = (scene.owner, scene.other)
        let aliceHead = try revParse("HEAD", in: scene.ownerProfile)
        assertOneLineRefusal(try concord(["revoke", "alice"], as: alice, in: scene.ownerProfile),
                             mentions: ["alice is the last active admin", "concord role"])
        assertOneLineRefusal(try concord(["role", "alice", "editor"], as: alice, in: scene.ownerProfile),
                             mentions: ["last active admin"])
        XCTAssertEqual(try revParse("HEAD", in: scene.ownerProfile), aliceHead, "a refused change committed")

        let bobHead = try revParse("HEAD", in: scene.otherProfile)
        assertOneLineRefusal(try concord(["revoke", "alice"], as: bob, in: scene.otherProfile),
                             mentions: ["bob is editor", "revoking members needs admin"])
        assertOneLineRefusal(try concord(["role", "bob", "admin"], as: bob, in: scene.otherProfile),
                             mentions: ["changing roles needs admin"])
        assertOneLineRefusal(try concord(["revoke", "nobody"], as: alice, in: scene.ownerProfile),
                             mentions: ["nobody is not a member"])
        XCTAssertEqual(try revParse("HEAD", in: scene.otherProfile), bobHead, "a refused change committed")

        // With a second admin, the first may step down.
        XCTAssertTrue(try concordOK(["role", "bob", "admin"], as: alice, in: scene.ownerProfile).contains("bob is now admin"))
        XCTAssertTrue(try concordOK(["role", "alice", "viewer"], as: alice, in: scene.ownerProfile).contains("alice is now viewer"))
        let listed = try concordOK(["members"], as: alice, in: scene.ownerProfile)
        XCTAssertTrue(listed.contains("alice  viewer  active") && listed.contains("bob  admin  active"), listed)
    }

    func testMembersChangeOnlyTheirOwnDeviceKeys() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "viewer")
        let (alice, bob) = (scene.owner, scene.other)
        let phone = try makeDevice("bob", device: "phone")
        // A viewer may add a key of their own...
        try concordOK(["devices", "add", "--name", "phone", "--key", phone.publicKeyLine,
                       "--proof", try keyProof(of: phone, for: scene.otherProfile)], as: bob, in: scene.otherProfile)
        let listed = try concordOK(["members"], as: bob, in: scene.otherProfile)
        XCTAssertTrue(listed.contains("bob  viewer  active  devices: phone, tablet"), listed)
        // ...but not someone else's, nor remove their last.
        assertOneLineRefusal(try concord(["devices", "add", "--name", "stolen", "--key", alice.publicKeyLine], as: bob,
                                         in: scene.otherProfile), mentions: ["already alice's"])
        // Nor does an Admin give a member's key to another (repro-N: it committed, and the Admin's own sync refused it).
        let head = try revParse("HEAD", in: scene.ownerProfile)
        assertOneLineRefusal(try concord(["members", "add", "zed", "--role", "viewer", "--key", bob.publicKeyLine], as: alice,
                                         in: scene.ownerProfile), mentions: ["that key is already bob's", "a key belongs to one member"])
        XCTAssertEqual(try revParse("HEAD", in: scene.ownerProfile), head, "nothing committed")
        try concordOK(["devices", "remove", "phone"], as: bob, in: scene.otherProfile)
        assertOneLineRefusal(try concord(["devices", "remove", "tablet"], as: bob, in: scene.otherProfile),
                             mentions: ["only device"])
        assertOneLineRefusal(try concord(["devices", "remove", "laptop"], as: bob, in: scene.otherProfile),
                             mentions: ["bob has no device laptop"])
        // Alice sees Bob's own change after a sync.
        try concordOK(["sync"], as: bob, in: scene.otherProfile)
        try concordOK(["sync"], as: alice, in: scene.ownerProfile)
        let seen = try concordOK(["members"], as: alice, in: scene.ownerProfile)
        XCTAssertTrue(seen.contains("bob  viewer  active  devices: tablet"), seen)
    }

    /// A remote rewound to a commit where Bob was revoked, after he was invited again and synced:
    /// his device reports the rewind and pushes its history back; it does not take the old
    /// revocation for a new one and delete its copy.
    func testARewindToAnOldRevocationDoesNotRemoveAReinvitedDevice() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        let revocation = try XCTUnwrap(try remoteMain(scene.remote))
        try concordOK(["members", "add", "bob", "--role", "editor", "--key", scene.other.publicKeyLine, "--device", "tablet"],
                      as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertEqual(try syncJSON(scene.other, in: scene.otherProfile).sent, 0)
        let current = try XCTUnwrap(try remoteMain(scene.remote))
        // The server goes back to the revocation.
        try gitOK(["update-ref", "refs/heads/main", revocation], in: scene.remote.bare)
        let synced = try concord(["sync"], as: scene.other, in: scene.otherProfile)
        XCTAssertEqual(synced.status, 0, synced.summary)
        XCTAssertTrue(synced.stdout.contains("went back") || synced.stderr.contains("went back"), synced.summary)
        XCTAssertTrue(FileManager.default.fileExists(atPath: scene.otherProfile.path), "the re-invited device kept its copy")
        XCTAssertEqual(try remoteMain(scene.remote), current, "the device pushed its history back")
    }

    private func wait(_ seconds: TimeInterval, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }
}
