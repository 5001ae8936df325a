import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// The care-team scenarios (A5, A6 and concurrent membership changes): a team of four seen alike
/// on every device, one therapist in two families' profiles with different roles and no data
/// crossing, and two admins adding members at once without losing either.
final class CareTeamTests: ConcordTestCase {
    func testACareTeamOfFourIsListedWithRolesOnEveryDevice() throws {
        let remote = try makeRemote(.path)
        let parent = try makeDevice("parent", device: "phone")
        let profile = try publishProfile(owner: parent, remote: remote, directory: "parent")
        var devices = [(parent, profile)]
        for (name, role) in [("therapist", "editor"), ("grandma", "viewer"), ("teacher", "user")] {
            let device = try makeDevice(name, device: "tablet")
            let invitation = try invite(name, role: role, by: parent, in: profile)
            let joined = sandbox.appendingPathComponent(name)
            try concordOK(["accept", invitation, joined.path], as: device)
            fsckAtEnd.append(joined)
            devices.append((device, joined))
        }
        for (device, directory) in devices {
            try concordOK(["sync"], as: device, in: directory)
        }
        let expected = ["grandma  viewer  active", "parent  admin  active", "teacher  user  active", "therapist  editor  active"]
        for (device, directory) in devices {
            let listed = try concordOK(["members"], as: device, in: directory).split(separator: "\n")
                .map { $0.components(separatedBy: "  devices:")[0] }
            XCTAssertEqual(listed, expected, "as seen by \(device.member)")
        }
        // Only admins invite or revoke.
        let (therapist, therapistProfile) = devices[1]
        assertOneLineRefusal(try concord(["revoke", "grandma"], as: therapist, in: therapistProfile), mentions: ["needs admin"])
    }

    func testOneTherapistInTwoFamiliesProfilesWithDifferentRoles() throws {
        let therapist = try makeDevice("dana", device: "ipad")
        var joined = [URL]()
        for (family, role) in [("smith", "editor"), ("jones", "viewer")] {
            let remote = try makeRemote(.path, name: "\(family).git")
            let parent = try makeDevice("\(family)-parent", device: "phone")
            let profile = try publishProfile(owner: parent, remote: remote, directory: family,
                                             records: [("vocabulary/\(family)-only", #"{"label":"\#(family)"}"#)])
            let invitation = try invite("dana", role: role, by: parent, in: profile)
            let directory = sandbox.appendingPathComponent("dana-\(family)")
            try concordOK(["accept", invitation, directory.path], as: therapist)
            fsckAtEnd.append(directory)
            joined.append(directory)
        }
        // Both are registered on the therapist's device.
        let registry = try String(contentsOf: therapist.home.appendingPathComponent("profiles.json"), encoding: .utf8)
        XCTAssertTrue(joined.allSatisfy { registry.contains($0.path) }, registry)
        // Each holds its own family's records only, and the role differs.
        XCTAssertTrue(try concordOK(["ls"], as: therapist, in: joined[0]).contains("smith-only"))
        XCTAssertFalse(try concordOK(["ls"], as: therapist, in: joined[0]).contains("jones-only"))
        XCTAssertTrue(try concordOK(["ls"], as: therapist, in: joined[1]).contains("jones-only"))
        XCTAssertFalse(try concordOK(["ls"], as: therapist, in: joined[1]).contains("smith-only"))
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: therapist, in: joined[0])
        assertOneLineRefusal(try concord(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: therapist, in: joined[1]),
                             mentions: ["dana is viewer"])
    }

    func testTwoAdminsAddingMembersAtOnceKeepBoth() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "admin")
        _ = try invite("carol", role: "editor", by: scene.owner, in: scene.ownerProfile, sync: false)
        _ = try invite("erin", role: "viewer", by: scene.other, in: scene.otherProfile, sync: false)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.other, in: scene.otherProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        for (device, profile) in [(scene.owner, scene.ownerProfile), (scene.other, scene.otherProfile)] {
            let listed = try concordOK(["members"], as: device, in: profile)
            XCTAssertTrue(listed.contains("carol  editor  pending") && listed.contains("erin  viewer  pending"), listed)
        }
        XCTAssertEqual(try revParse("HEAD", in: scene.ownerProfile), try revParse("HEAD", in: scene.otherProfile))
    }

    private func invite(_ member: String, role: String, by admin: TestDevice, in profile: URL, sync: Bool = true) throws -> String {
        let output = try concordOK(["share", member, "--role", role], as: admin, in: profile)
        if sync { try concordOK(["sync"], as: admin, in: profile) }
        let invitation = output.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(invitation.hasPrefix(Invitation.prefix), output)
        return invitation
    }
}
