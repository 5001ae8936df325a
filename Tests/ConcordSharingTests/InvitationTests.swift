import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `share` and `accept`: an admin invites by key or by link; the invitee is pending until they
/// accept; an invitation works once, only before it expires, only unaltered, and only for the
/// history it names. A refused acceptance leaves nothing behind.
final class InvitationTests: ConcordTestCase {
    func testALinkInvitationIsPendingUntilAcceptedAndWorksOnceOverAPath() throws { try linkInvitation(.path) }

    func testALinkInvitationIsPendingUntilAcceptedAndWorksOnceOverSSH() throws { try linkInvitation(.ssh) }

    private func linkInvitation(_ transport: SyncTransport) throws {
        let (remote, alice, profile) = try publishAlicesProfile(over: transport)
        let invitation = try share(["dana", "--role", "editor"], as: alice, in: profile)
        let pending = try concordOK(["members"], as: alice, in: profile)
        XCTAssertTrue(pending.contains("dana  editor  pending (invited by alice, expires "), pending)
        try concordOK(["sync"], as: alice, in: profile)

        let dana = try makeDevice("dana", device: "ipad")
        let joined = try accept(invitation, as: dana, remote: remote, into: "dana")
        XCTAssertTrue(try concordOK(["members"], as: dana, in: joined).contains("dana  editor  active  devices: ipad"))
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: dana, in: joined)
        try concordOK(["sync"], as: dana, in: joined)
        try concordOK(["sync"], as: alice, in: profile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: alice, in: profile).contains("puzzle"))
        XCTAssertTrue(try concordOK(["members"], as: alice, in: profile).contains("dana  editor  active  devices: ipad"))
        // Every commit concord wrote, the acceptance included, passes plain git's check.
        for commit in try gitOK(["rev-list", "HEAD"], in: profile).split(separator: "\n") {
            XCTAssertEqual(try git(["verify-commit", String(commit)], in: profile).status, 0, "git verify-commit \(commit)")
        }

        // The same invitation once more, from another device: refused, nothing left behind.
        let replay = try makeDevice("dana", device: "phone")
        let result = try acceptResult(invitation, as: replay, remote: remote, into: "replay")
        assertOneLineRefusal(result, mentions: ["the invitation for dana cannot be accepted", "already used"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("replay").path))
    }

    /// The acceptance races another member's commit: the new member's merge of the two is signed by
    /// someone who is pending in one parent and active in the other, which the merged membership
    /// (not every parent's) decides, so every device takes it.
    func testAnAcceptanceMergedWithConcurrentWorkIsAcceptedEverywhere() throws {
        let (_, alice, profile, _, shared, dana, joined) = try danaAcceptsAndTheRemoteForgetsIt()
        // As if the acceptance had not reached the remote before Alice's next commit did.
        try gitOK(["update-ref", "refs/remotes/origin/main", shared], in: joined)
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: alice, in: profile)
        try concordOK(["sync"], as: alice, in: profile)
        try concordOK(["sync"], as: dana, in: joined)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "--merges", "-1", "HEAD"], in: joined), "1", "Dana merged")
        try concordOK(["sync"], as: alice, in: profile)
        XCTAssertEqual(try revParse("HEAD", in: profile), try revParse("HEAD", in: joined))
        XCTAssertTrue(try concordOK(["members"], as: alice, in: profile).contains("dana  editor  active  devices: ipad"))
        XCTAssertTrue(try concordOK(["verify"], as: alice, in: profile).contains("verified"))
    }

    /// A link accepted twice, on two devices with different keys, on two lines of history (the
    /// invitee, and someone who intercepted the link): an invitation admits once, so the two are never
    /// merged. The acceptance on the remote stands (here the thief's, who was first); the Admin who
    /// tries to merge the other is told, and so is the invitee's device, which merges nothing. (The
    /// other way round, the thief cannot un-admit Dana after the fact: ServeMemberAttackTests.)
    func testALinkAcceptedTwiceOnTwoBranchesIsNeverMergedAndBothSidesAreTold() throws {
        // The remote as it was before Dana's acceptance arrived, when the link's thief accepts it.
        let (remote, alice, profile, invitation, shared, dana, joined) = try danaAcceptsAndTheRemoteForgetsIt()
        try gitOK(["update-ref", "refs/remotes/origin/main", shared], in: joined)
        let thief = try makeDevice("dana", device: "stolen")
        _ = try accept(invitation, as: thief, remote: remote, into: "thief")
        try concordOK(["sync"], as: alice, in: profile)
        try gitOK(["fetch", "--quiet", joined.path, "main:refs/peers/dana"], in: profile)
        let head = try revParse("HEAD", in: profile)
        assertOneLineRefusal(try concord(["merge", "refs/peers/dana"], as: alice, in: profile),
                             mentions: ["the invitation for dana cannot be accepted", "accepted on two devices with different keys",
                                        "asks alice for a new invitation"])
        XCTAssertEqual(try revParse("HEAD", in: profile), head)
        // Dana's device, syncing, is told and merges nothing.
        let mine = try revParse("HEAD", in: joined)
        assertOneLineRefusal(try concord(["sync"], as: dana, in: joined),
                             mentions: ["another device accepted it with another key", "ask alice for a new invitation"])
        XCTAssertEqual(try revParse("HEAD", in: joined), mine)
        // The same merge made by hand is refused by every device.
        try gitOK(["fetch", "--quiet", joined.path, "main:refs/heads/dana"], in: remote.bare)
        let checkout = sandbox.appendingPathComponent("by-hand")
        try gitOK(["clone", "--quiet", remote.bare.path, checkout.path])
        try gitOK(GitSigning.options(keyFile: alice.keyFile.path) + ["merge", "-S", "--quiet", "--no-edit", "-X", "ours", "origin/dana"], in: checkout)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: checkout)
        let merge = try gitOK(["rev-parse", "HEAD"], in: checkout)
        assertOneLineRefusal(try concord(["sync"], as: alice, in: profile), status: 5,
                             mentions: [String(merge.prefix(7)), "merges two acceptances of the invitation for dana"])
    }

    /// Alice shares a link for Dana, who accepts it; then the remote's main goes back to the share
    /// (as if the acceptance had not reached it). Returns the remote, Alice, her copy, the link, the
    /// share commit, Dana and her copy.
    private func danaAcceptsAndTheRemoteForgetsIt() throws -> (SyncRemote, TestDevice, URL, String, String, TestDevice, URL) {
        let (remote, alice, profile) = try publishAlicesProfile(over: .path)
        let invitation = try shareAndSync(["dana", "--role", "editor"], as: alice, in: profile)
        let shared = try XCTUnwrap(try remoteMain(remote))
        let dana = try makeDevice("dana", device: "ipad")
        let joined = try accept(invitation, as: dana, remote: remote, into: "dana")
        try gitOK(["update-ref", "refs/heads/main", shared], in: remote.bare)
        return (remote, alice, profile, invitation, shared, dana, joined)
    }

    /// An invited member's key signing anything but the acceptance is refused by the other devices.
    func testAPendingMemberCanSignNothingButTheirAcceptance() throws {
        let (remote, alice, profile) = try publishAlicesProfile(over: .path)
        let dana = try makeDevice("dana", device: "ipad")
        _ = try shareAndSync(["dana", "--role", "editor", "--key", dana.publicKeyLine], as: alice, in: profile)
        // Dana's forged commit is refused by Alice, but it is a sound git object: the remote stays checked.
        let clone = sandbox.appendingPathComponent("dana-by-hand")
        try gitOK(["clone", "--quiet", "--branch", "main", remote.bare.path, clone.path])
        fsckAtEnd.append(clone)
        let member = clone.appendingPathComponent(".concord/members/dana.json")
        let text = try String(contentsOf: member, encoding: .utf8)
        // Accepting and raising the role at once.
        try Data(text.replacingOccurrences(of: #""status": "invited""#, with: #""status": "active""#)
            .replacingOccurrences(of: #""role": "editor""#, with: #""role": "admin""#).utf8).write(to: member)
        try gitOK(GitSigning.options(keyFile: dana.keyFile.path) + ["commit", "-S", "--quiet", "-am", "accept as admin"], in: clone)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        let before = try revParse("HEAD", in: profile)
        let result = try concord(["sync"], as: alice, in: profile)
        assertOneLineRefusal(result, status: 5, mentions: ["dana is invited, not an active member"])
        XCTAssertEqual(try revParse("HEAD", in: profile), before)
    }

    func testAKeyInvitationIsForThatKeyOnly() throws {
        let (remote, alice, profile) = try publishAlicesProfile(over: .path)
        let dana = try makeDevice("dana", device: "ipad")
        let invitation = try shareAndSync(["dana", "--role", "viewer", "--key", dana.publicKeyLine], as: alice, in: profile)
        let other = try makeDevice("dana", device: "stolen")
        assertOneLineRefusal(try acceptResult(invitation, as: other, remote: remote, into: "other"), mentions: ["another key"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("other").path))
        let joined = try accept(invitation, as: dana, remote: remote, into: "dana")
        XCTAssertTrue(try concordOK(["members"], as: dana, in: joined).contains("dana  viewer  active  devices: ipad"))
        // A viewer may read, not write.
        assertOneLineRefusal(try concord(["put", "vocabulary/x", "--json", "{}"], as: dana, in: joined), mentions: ["viewer"])
    }

    func testExpiredAlteredOrForeignInvitationsAreRefusedAndLeaveNothing() throws {
        let (remote, alice, profile) = try publishAlicesProfile(over: .path)
        let invitation = try shareAndSync(["dana", "--role", "editor", "--expires", "1h"], as: alice, in: profile)
        let dana = try makeDevice("dana", device: "ipad")

        // Two hours later.
        let late = try concord(["accept", invitation, sandbox.appendingPathComponent("late").path], as: dana,
                               clock: HLClock.formatInstant(Int64(Date().timeIntervalSince1970 * 1000) + 7_200_000))
        assertOneLineRefusal(late, mentions: ["expired"])

        // The role raised from editor to admin on the way: the admin's signature no longer holds.
        func base64url(_ text: String) -> String {
            text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
                + String(repeating: "=", count: (4 - text.count % 4) % 4)
        }
        let payload = try XCTUnwrap(Data(base64Encoded: base64url(String(invitation.dropFirst(Invitation.prefix.count)))))
        let raised = String(decoding: payload, as: UTF8.self).replacingOccurrences(of: #""role": "editor""#, with: #""role": "admin""#)
        XCTAssertNotEqual(raised, String(decoding: payload, as: UTF8.self))
        let altered = Invitation.prefix + Data(raised.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        assertOneLineRefusal(try concord(["accept", altered, sandbox.appendingPathComponent("altered").path], as: dana),
                             mentions: ["signature is not valid"])

        // The remote replaced by another profile's history: not the profile named by the invitation.
        try FileManager.default.removeItem(at: remote.bare)
        // The first remote is deleted; makeRemote registers its replacement (the same path) again below.
        fsckAtEnd.removeAll { $0 == remote.bare }
        let mallory = try makeDevice("mallory", device: "laptop")
        // A new bare repository at the same path, holding mallory's profile.
        _ = try publishProfile(owner: mallory, remote: try makeRemote(.path), directory: "mallory")
        assertOneLineRefusal(try concord(["accept", invitation, sandbox.appendingPathComponent("foreign").path], as: dana),
                             mentions: ["invitation's root commit"])
        for directory in ["late", "altered", "foreign"] {
            XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent(directory).path), directory)
        }
    }

    func testOnlyAdminsInvite() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        assertOneLineRefusal(try concord(["share", "eve", "--role", "viewer"], as: scene.other, in: scene.otherProfile),
                             mentions: ["bob is editor", "needs admin"])
        assertOneLineRefusal(try concord(["share", "bob", "--role", "viewer"], as: scene.owner, in: scene.ownerProfile),
                             mentions: ["bob is already a member"])
    }
}
