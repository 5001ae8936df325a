import ConcordTestSupport
import Foundation
import XCTest

/// Member attacks through hand-made merges, continued: a link's holder un-admitting its acceptor,
/// a demoted Admin's kinds change on an old fork, a viewer's write that only a revoked Admin's
/// concurrent change allowed.
extension MemberAttackTests {
    /// Like `assertRefused`, for a commit refused by the structural check (`invalid commit`).
    /// A link's holder cannot un-admit, after the fact, the member who accepted it: Vera accepts
    /// Dana's used link on a fork from before Dana's acceptance, and merging that fork with main
    /// (which would leave neither admitted and drop what Dana did since) is refused by concord's merge
    /// and, made by hand, by every device. Nor can a member Dana revoked, by the same means, undo it.
    func testALinkHolderCannotUnadmitTheMemberWhoAcceptedIt() throws {
        let team = try makeAccessTeam()
        let link = try shareAndSync(["dana", "--role", "admin"], as: team.alice, in: team.aliceProfile)
        let shared = try revParse("HEAD", in: team.aliceProfile)
        let dana = try makeDevice("dana", device: "phone")
        let danaProfile = sandbox.appendingPathComponent("dana")
        try concordOK(["accept", link, danaProfile.path], as: dana)
        fsckAtEnd.append(danaProfile)
        try concordOK(["revoke", "vera"], as: dana, in: danaProfile)
        try concordOK(["sync"], as: dana, in: danaProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let main = try revParse("HEAD", in: team.aliceProfile)

        let fork = sandbox.appendingPathComponent("fork")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, fork.path])
        fsckAtEnd.append(fork)
        try gitOK(["checkout", "--quiet", "-B", "fork", shared], in: fork)
        let stolen = try acceptWithAStolenLink(link, as: "dana", in: fork, profileID: try profileID(of: team.aliceProfile)).commit
        // concord's own merge refuses to bring the two acceptances together.
        try gitOK(["fetch", "--quiet", fork.path, "fork:refs/peers/fork"], in: team.aliceProfile)
        assertOneLineRefusal(try concord(["merge", "refs/peers/fork"], as: team.alice, in: team.aliceProfile),
                             mentions: ["the invitation for dana cannot be accepted", "accepted on two devices with different keys"])
        XCTAssertEqual(try revParse("HEAD", in: team.aliceProfile), main)
        // By hand, signed by Vera (revoked by Dana: whom the merge would bring back) or by Uma.
        for key in [team.vera.keyFile, team.uma.keyFile] {
            try gitOK(["reset", "--quiet", "--hard", stolen], in: fork)
            try gitOK(["fetch", "--quiet", "origin"], in: fork)
            let merge = try mergeWithGit(in: fork, "origin/main", signedWith: key, strategy: ["-X", "theirs"], mainFirst: true)
            try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
            try assertRefused(team, commit: merge, mentions: ["merges two acceptances of the invitation for dana"])
            try gitOK(["update-ref", "refs/heads/main", main], in: team.remote.bare)   // the remote as it was
        }
        let members = try concordOK(["members"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(members.contains("dana  admin  active"), members)
        XCTAssertTrue(members.contains("vera  viewer  revoked"), members)
    }

    /// A demoted Admin who merges two branches of an old copy, loosening kinds.json inside that merge
    /// (valid there: he was an Admin in both its parents), gains nothing when that history meets main:
    /// the change is his, made concurrently with his demotion, and left out; his plain git merge that
    /// keeps it is refused.
    func testADemotedAdminsKindsChangeInsideAMergeOnAnOldForkIsRefused() throws {
        let team = try makeAccessTeam()
        try assertAccepted(team, commit: try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try self.editMember("eddie", in: clone) { $0["role"] = "admin" }
        })
        let fork = try eddiesFork(team)
        let demotion = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try self.editMember("eddie", in: clone) { $0["role"] = "viewer" }
        }
        try assertAccepted(team, commit: demotion)
        let kindsBefore = try String(contentsOf: team.aliceProfile.appendingPathComponent(".concord/kinds.json"), encoding: .utf8)
        let signing = GitSigning.options(keyFile: team.eddie.keyFile.path)
        try gitOK(["checkout", "--quiet", "-b", "side"], in: fork)
        try gitOK(signing + ["commit", "-S", "--quiet", "--allow-empty", "-m", "empty"], in: fork)
        try gitOK(["checkout", "--quiet", "main"], in: fork)
        try mergeWithGit(in: fork, "side", signedWith: team.eddie.keyFile) { fork in
            try self.replace(#""writers": "admin""#, with: #""writers": "viewer""#, in: fork.appendingPathComponent(".concord/kinds.json"))
        }
        try gitOK(["fetch", "--quiet", "origin"], in: fork)
        let merge = try mergeWithGit(in: fork, "origin/main", signedWith: team.eddie.keyFile, mainFirst: true)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        try assertRefused(team, commit: merge, mentions: ["by eddie@laptop changes .concord/kinds.json"])
        XCTAssertEqual(try String(contentsOf: team.aliceProfile.appendingPathComponent(".concord/kinds.json"), encoding: .utf8), kindsBefore)
    }

    /// An Admin revoked on the main line loosens who writes vocabulary on a copy from before the
    /// revocation, and a Viewer writes it on top there: when that copy joins main, the kinds change
    /// falls with the Admin, and the Viewer's write, which only it allowed, with it.
    func testAViewersWriteThatOnlyARevokedAdminsConcurrentKindsChangeAllowedIsLeftOut() throws {
        let team = try makeAccessTeam()
        try assertAccepted(team, commit: try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try self.editMember("eddie", in: clone) { $0["role"] = "admin" }
        })
        let verasCopy = try cloneProfile(team.vera, from: team.remote, into: "vera")
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        // On vera's copy eddie is still an Admin.
        try commitWithGit(in: verasCopy, signedWith: team.eddie.keyFile) { clone in
            try self.replace(#""writers": "editor""#, with: #""writers": "viewer""#, in: clone.appendingPathComponent(".concord/kinds.json"))
        }
        try commitWithGit(in: verasCopy, signedWith: team.vera.keyFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "by vera""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
            try self.stamp(try self.recordFile("vocabulary", "puzzle", in: clone), as: "vera")
        }
        let synced = try concordOK(["sync"], as: team.vera, in: verasCopy)
        XCTAssertTrue(synced.contains("left out: .concord/kinds.json: eddie's change"), synced)
        XCTAssertTrue(synced.contains("vera's change"), synced)
        XCTAssertTrue(synced.contains("lost to the kinds where it lands, which do not let vera write it"), synced)
        XCTAssertEqual(synced.components(separatedBy: "left out: .concord/kinds.json").count, 2, "kinds.json reported once: \(synced)")
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(try String(contentsOf: team.aliceProfile.appendingPathComponent(".concord/kinds.json"), encoding: .utf8)
                        .contains(#""writers": "editor""#), "eddie's kinds change is left out")
        let puzzle = try String(contentsOf: try recordFile("vocabulary", "puzzle", in: team.aliceProfile), encoding: .utf8)
        XCTAssertFalse(puzzle.contains("by vera"), "a Viewer's write that only the fallen kinds change allowed: \(puzzle)")
        XCTAssertTrue(try concordOK(["verify"], as: team.alice, in: team.aliceProfile).contains("verified"))
    }

    /// Eddie's edit reaches main; Alice, on her copy from before it, revokes him and syncs (the red
    /// team's repro-H, issue 42). His revocation takes effect where it joins the main line, after his
    /// published edit: the edit stands on every device, and he is revoked from then on.
    func testARevocationMadeOnAnOlderCopyLeavesWhatAlreadyReachedMainStanding() throws {
        let team = try makeAccessTeam()
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        try concordOK(["put", "vocabulary/published", "--json", #"{"label":"published by eddie"}"#], as: team.eddie, in: eddiesCopy)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile)
        let synced = try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertFalse(synced.contains("left out"), synced)

        let fresh = try cloneProfile(team.vera, from: team.remote, into: "vera")
        for (device, copy) in [(team.alice, team.aliceProfile), (team.vera, fresh)] {
            XCTAssertTrue(try concordOK(["get", "vocabulary/published"], as: device, in: copy).contains("published by eddie"))
            let members = try concordOK(["members", "list"], as: device, in: copy)
            XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("revoked") }, members)
        }
        try concordOK(["put", "vocabulary/late", "--json", #"{"label":"after"}"#], as: team.eddie, in: eddiesCopy)
        XCTAssertNotEqual(try concordWithDeadline(["sync"], as: team.eddie, in: eddiesCopy).status, 0, "his later write is refused")
    }
}
