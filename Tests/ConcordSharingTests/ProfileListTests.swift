import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `concord profiles` (the profiles on this device, per identity) and `concord leave`.
final class ProfileListTests: ConcordTestCase {
    /// Bob's device lists the profile with his role and access; he leaves: his departure reaches
    /// the remote as a valid commit (revoked by himself, no keys), his copy and entry are gone.
    func testProfilesListsWhatThisIdentityHasAndLeaveRecordsTheDeparture() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        fsckAtEnd.removeAll { $0 == scene.otherProfile }
        let listed = try profilesJSON(scene.other)
        XCTAssertEqual(listed.count, 1, "\(listed)")
        XCTAssertEqual(listed.first?["path"] as? String, scene.otherProfile.path)
        XCTAssertEqual(listed.first?["role"] as? String, "editor")
        XCTAssertEqual(listed.first?["access"] as? String, "active")
        XCTAssertNotNil(listed.first?["lastSync"] as? String)
        XCTAssertNotNil(listed.first?["remote"] as? String)
        // Another identity on the same machine sees only its own.
        let carol = try makeDevice("carol", device: "phone")
        XCTAssertEqual(try profilesJSON(carol).count, 0)
        XCTAssertTrue(try concordOK(["profiles"], as: carol).contains("no profiles on this device for carol"))

        let left = try concordOK(["leave"], as: scene.other, in: scene.otherProfile)
        XCTAssertTrue(left.contains("departure recorded on origin"), left)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scene.otherProfile.path))
        XCTAssertEqual(try profilesJSON(scene.other).count, 0)

        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        let members = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try concordOK(["members", "--json"], as: scene.owner, in: scene.ownerProfile).utf8))
                                    as? [[String: Any]])
        let bob = try XCTUnwrap(members.first { $0["name"] as? String == "bob" })
        XCTAssertEqual(bob["status"] as? String, "revoked")
        XCTAssertEqual(bob["revokedBy"] as? String, "bob")
        XCTAssertEqual((bob["devices"] as? [Any])?.count, 0)
        try concordOK(["verify"], as: scene.owner, in: scene.ownerProfile)
    }

    /// A revoked device's copy is deleted, and `profiles` says why instead of forgetting it.
    func testARevokedProfileIsListedAsRemoved() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        fsckAtEnd.removeAll { $0 == scene.otherProfile }
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        let synced = try concord(["sync"], as: scene.other, in: scene.otherProfile)
        XCTAssertEqual(synced.status, 4, synced.summary)
        let listed = try profilesJSON(scene.other)
        XCTAssertEqual(listed.first?["access"] as? String, "removed", "\(listed)")
        XCTAssertTrue((listed.first?["note"] as? String)?.contains("access removed: alice revoked bob's access") == true, "\(listed)")
    }

    /// An Admin's membership stays when they leave; offline, a member's departure is not recorded
    /// and says so; either way this device's copy goes.
    func testAnAdminOrAnOfflineMemberLeavesWithoutRecordingIt() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        fsckAtEnd.removeAll { $0 == scene.otherProfile || $0 == scene.ownerProfile }
        let published = try remoteMain(scene.remote)
        try concordOK(["put", "vocabulary/unsent", "--json", #"{"label":"unsent"}"#], as: scene.other, in: scene.otherProfile)
        try FileManager.default.moveItem(at: scene.remote.bare, to: scene.remote.bare.appendingPathExtension("away"))
        let offline = try concord(["leave", "--json"], as: scene.other, in: scene.otherProfile)
        XCTAssertEqual(offline.status, 0, offline.summary)
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(offline.stdout.utf8)) as? [String: Any])
        XCTAssertTrue((result["departure"] as? String)?.hasPrefix("not recorded: origin could not be reached") == true, "\(result)")
        let saved = try XCTUnwrap(result["saved"] as? String, "the unsent edit is saved")
        XCTAssertTrue(try String(contentsOfFile: saved, encoding: .utf8).contains("unsent"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: scene.otherProfile.path))
        try FileManager.default.moveItem(at: scene.remote.bare.appendingPathExtension("away"), to: scene.remote.bare)

        let admin = try concordOK(["leave"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertTrue(admin.contains("departure not recorded: alice is an Admin"), admin)
        XCTAssertFalse(FileManager.default.fileExists(atPath: scene.ownerProfile.path))
        XCTAssertEqual(try remoteMain(scene.remote), published, "nothing of Bob's reached the remote, and the Admin's leave pushed nothing")
    }

    /// Scenario A7: a caregiver's personal profile (template `personal`: name, role, personality)
    /// set on the phone is on the tablet after `devices add` and a sync, and the other way round;
    /// both devices list it, and the phone lists no one else's.
    func testAPersonalProfileFollowsItsOwnerToTheirOtherDevice() throws {
        let phone = try makeDevice("alice", device: "phone")
        let tablet = try makeDevice("alice", device: "tablet")
        let remote = try makeRemote(.path, name: "personal.git")
        let mine = try publishProfile(owner: phone, remote: remote, directory: "personal-phone", template: "personal",
                                      records: [("profile/me", #"{"name":"Alice","role":"ABA therapist","personality":"calm"}"#)])
        try concordOK(["devices", "add", "--name", "tablet", "--key", tablet.publicKeyLine, "--proof", try keyProof(of: tablet, for: mine)],
                      as: phone, in: mine)
        try concordOK(["sync"], as: phone, in: mine)
        let onTablet = try cloneProfile(tablet, from: remote, into: "personal-tablet")
        let record = try concordOK(["get", "profile/me"], as: tablet, in: onTablet)
        XCTAssertTrue(record.contains(#""role": "ABA therapist""#) && record.contains(#""personality": "calm""#), record)

        try concordOK(["put", "profile/me", "--json", #"{"name":"Alice","role":"ABA therapist","personality":"playful"}"#], as: tablet, in: onTablet)
        try concordOK(["sync"], as: tablet, in: onTablet)
        try concordOK(["sync"], as: phone, in: mine)
        XCTAssertTrue(try concordOK(["get", "profile/me"], as: phone, in: mine).contains(#""personality": "playful""#))
        for (device, path) in [(phone, mine), (tablet, onTablet)] {
            let listed = try profilesJSON(device)
            XCTAssertEqual(listed.map { $0["path"] as? String }, [path.path])
            XCTAssertEqual(listed.first?["role"] as? String, "admin")
        }
        try concordOK(["verify"], as: phone, in: mine)

        // A copy moved away outside concord is listed as missing, with where it was.
        let moved = sandbox.appendingPathComponent("personal-moved")
        try FileManager.default.moveItem(at: mine, to: moved)
        fsckAtEnd.removeAll { $0 == mine }
        let listed = try profilesJSON(phone)
        XCTAssertEqual(listed.first?["access"] as? String, "missing", "\(listed)")
        XCTAssertTrue((listed.first?["note"] as? String)?.contains("no profile at \(mine.path)") == true, "\(listed)")
    }

    private func profilesJSON(_ device: TestDevice) throws -> [[String: Any]] {
        try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try concordOK(["profiles", "--json"], as: device).utf8)) as? [[String: Any]])
    }
}
