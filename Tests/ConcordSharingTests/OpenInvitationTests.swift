import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `share --open`: anyone holding an open invitation joins under their own name, as its role, until
/// its places are taken or it expires. Every device counts the places from the member files, so of
/// two acceptances racing for the last place exactly one stands everywhere.
final class OpenInvitationTests: ConcordTestCase {
    func testAnOpenInvitationAdmitsUpToItsUsesOverAPath() throws { try openInvitation(.path) }

    func testAnOpenInvitationAdmitsUpToItsUsesOverSSH() throws { try openInvitation(.ssh) }

    private func openInvitation(_ transport: SyncTransport) throws {
        let (remote, alice, profile) = try publishAlicesProfile(over: transport)
        let invitation = try shareAndSync(["--open", "--role", "user", "--uses", "2", "--expires", "3h"], as: alice, in: profile)
        XCTAssertTrue(try concordOK(["members", "--open"], as: alice, in: profile).contains("user  0 of 2 joined"))

        let bob = try makeDevice("bob", device: "phone")
        let bobsCopy = try accept(invitation, as: bob, remote: remote, into: "bob")
        let carol = try makeDevice("carol", device: "tablet")
        let carolsCopy = try accept(invitation, as: carol, remote: remote, into: "carol")
        let dave = try makeDevice("dave", device: "phone")
        assertOneLineRefusal(try acceptResult(invitation, as: dave, remote: remote, into: "dave"),
                             mentions: ["the invitation for dave cannot be accepted", "all 2 of its places are taken"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("dave").path))

        // Joined as Users: they append to the log; they may not edit vocabulary.
        try concordOK(["sync"], as: bob, in: bobsCopy)
        try concordOK(["append", "logs", "--json", #"{"event":"bob joined the session"}"#], as: bob, in: bobsCopy)
        try concordOK(["sync"], as: bob, in: bobsCopy)
        assertOneLineRefusal(try concord(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: carol, in: carolsCopy),
                             mentions: ["carol is user"])
        try concordOK(["sync"], as: alice, in: profile)
        let members = try concordOK(["members"], as: alice, in: profile)
        XCTAssertTrue(members.contains("bob  user  active  devices: phone"), members)
        XCTAssertTrue(members.contains("carol  user  active  devices: tablet"), members)
        XCTAssertFalse(members.contains("dave"), members)
        XCTAssertTrue(try concordOK(["members", "--open"], as: alice, in: profile).contains("user  2 of 2 joined"))
        XCTAssertTrue(try concordOK(["verify"], as: alice, in: profile).contains("verified"))
        for commit in try gitOK(["rev-list", "HEAD"], in: profile).split(separator: "\n") {
            XCTAssertEqual(try git(["verify-commit", String(commit)], in: profile).status, 0, "git verify-commit \(commit)")
        }
        XCTAssertTrue(try String(contentsOf: profile.appendingPathComponent(".concord/profile.json"), encoding: .utf8)
            .contains(#""formatVersion": \#(concordFormatVersion)"#), "a new profile is of this build's format, and an open invitation leaves it so")
    }

    /// Two people accept the last place at once: the one whose push lands first joins; the other's
    /// accept starts again on the new main, finds no place left, and leaves nothing behind.
    func testTwoAcceptancesRacingForTheLastPlaceExactlyOneWins() throws {
        let (remote, alice, profile) = try publishAlicesProfile(over: .path)
        let text = try shareAndSync(["--open", "--role", "viewer", "--uses", "1"], as: alice, in: profile)
        let bob = try makeDevice("bob", device: "phone")
        let carol = try makeDevice("carol", device: "tablet")
        let bobsDirectory = sandbox.appendingPathComponent("bob")
        var carolJoined = false
        // Bob's acceptance is committed; before it is pushed, Carol's whole accept runs and lands.
        XCTAssertThrowsError(try Members.accept(
            try Invitation(text: text), into: bobsDirectory, identity: try Identity.load(from: bob.home),
            environment: ConcordEnvironment(home: bob.home), beforePublishing: {
                guard !carolJoined else { return }
                carolJoined = true
                _ = try self.accept(text, as: carol, remote: remote, into: "carol")
            })) { error in
            XCTAssertTrue("\(error.localizedDescription)".contains("all 1 of its places are taken"), "\(error)")
        }
        XCTAssertTrue(carolJoined)
        XCTAssertFalse(FileManager.default.fileExists(atPath: bobsDirectory.path), "the losing accept leaves nothing")
        try concordOK(["sync"], as: alice, in: profile)
        let members = try concordOK(["members"], as: alice, in: profile)
        XCTAssertTrue(members.contains("carol  viewer  active"), members)
        XCTAssertFalse(members.contains("bob"), members)
    }

    /// A device that merged its own acceptance with another one of the last place (its acceptance
    /// reached the remote too late, as plain git or a crash between commit and push can make happen)
    /// pushes a history every other device refuses: the places are counted in every merged tree.
    func testAMergeOfTwoAcceptancesOfTheLastPlaceIsRefusedEverywhere() throws {
        let (remote, alice, profile) = try publishAlicesProfile(over: .path)
        let text = try shareAndSync(["--open", "--role", "user", "--uses", "1"], as: alice, in: profile)
        let opened = try XCTUnwrap(try remoteMain(remote))
        let bob = try makeDevice("bob", device: "phone")
        let bobsCopy = try accept(text, as: bob, remote: remote, into: "bob")
        // As if Bob's acceptance had not reached the remote before Carol's did.
        try gitOK(["update-ref", "refs/heads/main", opened], in: remote.bare)
        try gitOK(["update-ref", "refs/remotes/origin/main", opened], in: bobsCopy)
        let carol = try makeDevice("carol", device: "tablet")
        _ = try accept(text, as: carol, remote: remote, into: "carol")
        let carolsAcceptance = try XCTUnwrap(try remoteMain(remote))

        // Bob's own sync sees the place taken and says so, merging and pushing nothing.
        assertOneLineRefusal(try concord(["sync"], as: bob, in: bobsCopy),
                             mentions: ["the invitation for bob cannot be accepted", "taken by others"])
        XCTAssertEqual(try remoteMain(remote), carolsAcceptance)

        // Alice, fetching Bob's copy herself, is not let merge it either (its merge could not be published).
        try concordOK(["sync"], as: alice, in: profile)
        try gitOK(["fetch", "--quiet", bobsCopy.path, "main:refs/peers/bob"], in: profile)
        assertOneLineRefusal(try concord(["merge", "refs/peers/bob"], as: alice, in: profile),
                             mentions: ["the invitation for bob cannot be accepted", "were taken by others on another line of history"])

        // The same merge made by hand (plain git, Bob's key, the remote's main first so that the
        // mainline rule alone does not refuse it) is refused by Alice's device. It is a sound git
        // object all the same: the remote stays checked.
        try gitOK(["fetch", "--quiet", "origin"], in: bobsCopy)
        try mergeWithGit(in: bobsCopy, "origin/main", signedWith: bob.keyFile, message: "merge both acceptances", mainFirst: true)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: bobsCopy)
        let before = try revParse("HEAD", in: profile)
        assertOneLineRefusal(try concord(["sync"], as: alice, in: profile), status: 5,
                             mentions: ["bob", "is revoked in the merged membership"])
        XCTAssertEqual(try revParse("HEAD", in: profile), before)
    }

    /// Carol (Admin) opens an invitation while Alice, offline, demotes her. Decisions count in the
    /// order they reach the remote (issue 42): when Alice's demotion arrives first, Carol's
    /// invitation, made on an older copy, does not count, and her sync says so in one line; when
    /// Carol's arrives first it stood, but an open invitation whose Admin is no longer one admits
    /// nobody. Either way `members --open` lists it withdrawn and accepting it is refused.
    func testAnOpenInvitationWhoseAdminWasDemotedAdmitsNobody() throws {
        for demotionFirst in [false, true] {
            let remote = try makeRemote(.path, name: "remote-\(demotionFirst).git")
            let alice = try makeDevice("alice", device: demotionFirst ? "laptop" : "desktop")
            let carol = try makeDevice("carol", device: demotionFirst ? "tablet" : "pad")
            let profile = try publishProfile(owner: alice, remote: remote, directory: "alice-\(demotionFirst)", members: [(carol, "admin")])
            let carolsCopy = try cloneProfile(carol, from: remote, into: "carol-\(demotionFirst)")
            try concordOK(["role", "carol", "viewer"], as: alice, in: profile)   // offline: not synced yet
            if demotionFirst { try concordOK(["sync"], as: alice, in: profile) }
            let text = try share(["--open", "--role", "user", "--uses", "2"], as: carol, in: carolsCopy)
            let told = try concordOK(["sync"], as: carol, in: carolsCopy)
            try concordOK(["sync"], as: alice, in: profile)
            let listed = try concordOK(["members", "--open"], as: alice, in: profile)
            let dave = try makeDevice("dave", device: demotionFirst ? "phone" : "watch")
            let accepted = try acceptResult(text, as: dave, remote: remote, into: "dave-\(demotionFirst)")
            if demotionFirst {
                XCTAssertTrue(told.contains("was made on a copy older than the main line's and does not count"), told)
            } else {
                XCTAssertFalse(told.contains("does not count"), told)
            }
            XCTAssertTrue(listed.contains("user  withdrawn, 0 joined"), listed)
            if !demotionFirst {
                let json = try concordOK(["members", "--open", "--json"], as: alice, in: profile)
                XCTAssertTrue(json.contains(#""withdrawn":true"#) || json.contains(#""withdrawn": true"#), json)
                assertOneLineRefusal(accepted, mentions: ["the invitation for dave cannot be accepted", "it was withdrawn",
                                                          "carol, who opened it, is no longer an active Admin"])
            }
            assertOneLineRefusal(accepted, mentions: ["the invitation for dave cannot be accepted"])
            XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("dave-\(demotionFirst)").path))
        }
    }

    /// An open invitation is Admin-made, never makes Admins, and is refused once expired.
    func testOpenInvitationsAreBoundedByRoleAndExpiry() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        assertOneLineRefusal(try concord(["share", "--open", "--role", "viewer"], as: scene.other, in: scene.otherProfile),
                             mentions: ["bob is editor", "needs admin"])
        let admins = try concord(["share", "--open", "--role", "admin"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertEqual(admins.status, 2, admins.stderr)
        XCTAssertTrue(admins.stderr.contains("cannot make Admins"), admins.stderr)
        let text = try shareAndSync(["--open", "--role", "viewer", "--expires", "1m"], as: scene.owner, in: scene.ownerProfile)
        let erin = try makeDevice("erin", device: "phone")
        try allow(erin, on: scene.remote, trustHost: false)
        let late = try concord(["accept", text, sandbox.appendingPathComponent("late").path], as: erin,
                               clock: HLClock.formatInstant(Int64(Date().timeIntervalSince1970 * 1000) + 120_000))
        assertOneLineRefusal(late, mentions: ["the invitation for erin cannot be accepted", "expired"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("late").path))
    }

    /// Scenarios D1–D2: a host opens a session; three people join by one open invitation and add
    /// themselves to the participant list; everyone chats, two of them offline. After syncing, every
    /// device lists all four participants and holds every message, in the same order.
    func testAGroupSessionJoinedByAnOpenInvitationLosesNoMessage() throws {
        let remote = try makeRemote(.path)
        let host = try makeDevice("host", device: "laptop")
        let session = try publishProfile(owner: host, remote: remote, directory: "host", template: "sessions",
                                         records: [("sessions/tonight", #"{"title":"Tuesday group"}"#), ("participants/host", #"{"name":"host"}"#)])
        let text = try shareAndSync(["--open", "--role", "user", "--uses", "3"], as: host, in: session)
        var devices = [(host, session)]
        for (name, device) in [("ana", "phone"), ("ben", "tablet"), ("cai", "phone")] {
            let person = try makeDevice(name, device: device)
            let copy = try accept(text, as: person, remote: remote, into: name)
            try concordOK(["put", "participants/\(name)", "--json", #"{"name":"\#(name)"}"#], as: person, in: copy)
            try concordOK(["sync"], as: person, in: copy)
            devices.append((person, copy))
        }
        // Everyone has everyone's acceptance before the chat starts; then two of them write offline.
        for (person, copy) in devices { try concordOK(["sync"], as: person, in: copy) }
        var sent = [String]()
        for round in 1...2 {
            for (person, copy) in devices {
                let message = "\(person.member) says \(round)"
                try concordOK(["append", "messages", "--json", #"{"text":"\#(message)"}"#], as: person, in: copy)
                sent.append(message)
                if !["ben", "cai"].contains(person.member) { try concordOK(["sync"], as: person, in: copy) }
            }
        }
        for _ in 0..<2 { for (person, copy) in devices { try concordOK(["sync"], as: person, in: copy) } }
        let exports = try devices.map { person, copy in try concordOK(["export"], as: person, in: copy) }
        XCTAssertEqual(Set(exports).count, 1, "every device holds the same records and messages, in the same order")
        for message in sent { XCTAssertTrue(exports[0].contains(message), "\(message) is missing") }
        let participants = try concordOK(["ls", "participants"], as: devices[2].0, in: devices[2].1)
        XCTAssertEqual(participants.split(separator: "\n").count, 4, participants)
        XCTAssertTrue(try concordOK(["members", "--open"], as: host, in: session).contains("3 of 3 joined"))
        XCTAssertTrue(try concordOK(["verify"], as: host, in: session).contains("verified"))
    }
}
