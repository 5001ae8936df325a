import ConcordTestSupport
import Foundation
import XCTest

/// Issue 31's attacks by a malicious member, made with plain git and the attacker's own key and
/// pushed through `concord serve` behind a real sshd (MemberAttackTests makes the same ones against
/// a path remote). The pre-receive refuses each push whole: one line naming the commit, its signer
/// and the rule; the server's main stays where it was and none of the pushed commits is stored.
final class ServeMemberAttackTests: ConcordServeTestCase {
    /// Eddie, promoted to Admin and then demoted to Viewer, keeps a clone from before the demotion
    /// and signs merges of it with main, main first (a merge with his old copy first is refused by
    /// the mainline rule whatever it holds: ServeForkAttackTests): one sets him back to Admin, one
    /// changes a vocabulary record. Both are refused; the policy merge of the same parents, signed
    /// by him, is taken (nothing in it is his to choose).
    func testADemotedAdminsMergeOnAnOldFirstParentIsRefused() throws {
        let (team, fork) = try eddieAsAdminWithAClone()
        try concordOK(["role", "eddie", "viewer"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let demotion = try serverMain("kid", host: team.host)
        try gitOK(["fetch", "--quiet", "origin"], in: fork, environment: try gitSSHEnvironment(team.eddie, host: team.host))
        let old = try gitOK(["rev-parse", "HEAD"], in: fork)

        let promoted = try mergeWithGit(in: fork, demotion, signedWith: team.eddie.keyFile, mainFirst: true) {
            try self.editMember("eddie", in: $0) { $0["role"] = "admin" }
        }
        XCTAssertEqual(try gitOK(["rev-parse", "\(promoted)^2"], in: fork), old, "the side is from before the demotion")
        try assertPushRefused(team, promoted, from: fork, as: team.eddie, mentions: [
            "by eddie@laptop changes .concord/members/eddie.json", "a merge changes member and invitation files only as merging its parents does",
        ])

        try gitOK(["reset", "--quiet", "--hard", old], in: fork)
        let edited = try mergeWithGit(in: fork, demotion, signedWith: team.eddie.keyFile, mainFirst: true) { fork in
            try self.replace(#""label": "puzzle""#, with: #""label": "demoted""#, in: try self.recordFile("vocabulary", "puzzle", in: fork))
        }
        try assertPushRefused(team, edited, from: fork, as: team.eddie, mentions: ["by eddie@laptop changes vocabulary/puzzle",
                                                                                   "Viewers may not write vocabulary"])

        // Loosening kinds.json inside a merge of two branches of his old copy (valid there: an Admin
        // in both of its parents), then merging main: the change is his, concurrent with the demotion.
        try gitOK(["reset", "--quiet", "--hard", old], in: fork)
        try gitOK(["checkout", "--quiet", "-b", "side"], in: fork)
        try gitOK(GitSigning.options(keyFile: team.eddie.keyFile.path) + ["commit", "-S", "--quiet", "--allow-empty", "-m", "empty"], in: fork)
        try gitOK(["checkout", "--quiet", "-"], in: fork)
        try mergeWithGit(in: fork, "side", signedWith: team.eddie.keyFile) { fork in
            try self.replace(#""writers": "admin""#, with: #""writers": "viewer""#, in: fork.appendingPathComponent(".concord/kinds.json"))
        }
        let loosened = try mergeWithGit(in: fork, demotion, signedWith: team.eddie.keyFile, mainFirst: true)
        try assertPushRefused(team, loosened, from: fork, as: team.eddie, mentions: ["by eddie@laptop changes .concord/kinds.json"],
                              stored: [try gitOK(["rev-parse", "\(loosened)^2"], in: fork)])

        try gitOK(["reset", "--quiet", "--hard", old], in: fork)
        let policy = try mergeWithGit(in: fork, demotion, signedWith: team.eddie.keyFile, mainFirst: true)
        try gitOK(["push", "--quiet", "origin", "\(policy):refs/heads/main"], in: fork, environment: try gitSSHEnvironment(team.eddie, host: team.host))
        XCTAssertEqual(try serverMain("kid", host: team.host), policy)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(try concordOK(["members"], as: team.alice, in: team.aliceProfile).contains("eddie  viewer  active"))
    }

    /// Eddie, an Admin, keeps a clone from before Alice revokes him and adds an alias there (`eddie2`,
    /// admin, valid at that parent), then merges main — the revocation, which is what the server shows
    /// his key — main first, signed by eddie2. Eddie's own push is refused at the door (he is
    /// revoked); pushed by Uma, a User who still has write access, the pre-receive refuses it:
    /// replayed on the main line, Eddie's addition of eddie2 arrives after his revocation and falls.
    func testARevokedAdminsAliasMadeOnAnOldForkIsRefused() throws {
        let (team, fork) = try eddieAsAdminWithAClone()
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let revocation = try serverMain("kid", host: team.host)
        let aliasKeyFile = sandbox.appendingPathComponent("eddie2_key")
        let aliasKey = try GitSigning.makeKey(at: aliasKeyFile, comment: "eddie2@laptop", environment: environment())
        let alias = try commitWithGit(in: fork, signedWith: team.eddie.keyFile, message: "add eddie2") { clone in
            try self.writeActiveMember("eddie2", role: "admin", publicKey: aliasKey, addedBy: "eddie", in: clone)
        }
        try gitOK(["fetch", "--quiet", "origin"], in: fork, environment: try gitSSHEnvironment(team.eddie, host: team.host))
        XCTAssertEqual(try gitOK(["rev-parse", "origin/main"], in: fork), revocation, "Eddie's key reads main as of his revocation")
        let merge = try mergeWithGit(in: fork, revocation, signedWith: aliasKeyFile, mainFirst: true)
        XCTAssertEqual(try gitOK(["rev-parse", "\(merge)^2"], in: fork), alias)

        let byEddie = try git(["push", "origin", "\(merge):refs/heads/main"], in: fork, environment: try gitSSHEnvironment(team.eddie, host: team.host))
        XCTAssertNotEqual(byEddie.status, 0, byEddie.summary)
        XCTAssertTrue(byEddie.stderr.contains("access removed: alice revoked eddie's access to \"kid\""), byEddie.stderr)
        try assertPushRefused(team, merge, from: fork, as: team.uma, mentions: ["by eddie2@laptop"])
    }

    /// Vera (a Viewer who intercepted Alice's link invitation for Dana) forks from the invitation,
    /// accepts it there as Dana with a key of her own (the acceptance signed with the link's one-time
    /// key, as `concord accept` signs it), and merges it into main — Dana's real acceptance, first —
    /// keeping both devices in Dana's file, signed first with the thief's key and then with her own.
    /// Both pushes are refused: replayed on the main line the stolen acceptance arrives after Dana's
    /// and falls, and acceptances never merge as a union of claimants' keys.
    func testAStolenLinkAcceptanceMergedWithTheInviteesIsRefused() throws {
        let team = try servedTeam()
        let link = try shareAndSync(["dana", "--role", "user"], as: team.alice, in: team.aliceProfile)
        let invited = try serverMain("kid", host: team.host)
        let dana = try makeDevice("dana", device: "phone")
        _ = try acceptThroughServer(link, as: dana, host: team.host, profile: "kid", into: "kid-dana")
        let accepted = try serverMain("kid", host: team.host)

        let fork = try gitClone(as: team.vera, team)
        try gitOK(["checkout", "--quiet", "-B", "fork", invited], in: fork)
        let (stolen, thiefKey, thiefKeyFile, proof) = try acceptWithAStolenLink(link, as: "dana", in: fork,
                                                                              profileID: try profileID(of: team.aliceProfile))
        // Dana's file as merged by hand: her acceptance, with the thief's device added.
        let union = { (clone: URL) throws in
            try self.gitOK(["checkout", "--quiet", accepted, "--", ".concord/members/dana.json"], in: clone)
            try self.editMember("dana", in: clone) { member in
                member["keys"] = (member["keys"] as? [Any] ?? []) + [["device": "stolen", "publicKey": thiefKey, "proof": proof]]
            }
        }
        for (signer, mentions) in [(thiefKeyFile, ["by dana@stolen", "merges two acceptances of the invitation for dana"]),
                                   (team.vera.keyFile, ["by vera@tablet", "merges two acceptances of the invitation for dana"])] {
            try gitOK(["reset", "--quiet", "--hard", accepted], in: fork)
            _ = try git(["merge", "--quiet", "--no-ff", "--no-commit", stolen], in: fork)   // dana.json conflicts
            let merge = try commitWithGit(in: fork, signedWith: signer, message: "merge main", union)
            try assertPushRefused(team, merge, from: fork, as: team.vera, mentions: mentions)
        }
    }

    /// Single commits that take what is not theirs: Vera lists Alice's key as a device of her own; Uma
    /// writes a log entry in Alice's name, rewrites Alice's entry as her own (same id), or repeats an
    /// id of her own (after a valid commit in the same push: the push is refused whole); Alice signs
    /// an octopus merge; Uma pushes an unsigned commit. Uma's own entry reusing Alice's id is taken,
    /// and Alice's entry stays beside it.
    func testTakenKeysShadowedLogEntriesOctopusesAndUnsignedCommitsAreRefused() throws {
        let team = try servedTeam()
        let veras = try gitClone(as: team.vera, team)
        let taken = try commitWithGit(in: veras, signedWith: team.vera.keyFile) { clone in
            try self.editMember("vera", in: clone) { member in
                member["keys"] = (member["keys"] as? [Any] ?? []) + [["device": "stolen", "publicKey": team.alice.publicKeyLine]]
            }
        }
        try assertPushRefused(team, taken, from: veras, as: team.vera, mentions: [
            "by vera@tablet changes .concord/members/vera.json", "of alice's device laptop", "a key belongs to one member",
        ])

        let alices = try gitClone(as: team.alice, team)
        let question = try commitWithGit(in: alices, signedWith: team.alice.keyFile, appendLogEntry(by: "alice", id: "q1", at: "10:00:00", text: "question"))
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: alices, environment: try gitSSHEnvironment(team.alice, host: team.host))
        XCTAssertEqual(try serverMain("kid", host: team.host), question)
        let umas = try gitClone(as: team.uma, team)
        let inAlicesName = try commitWithGit(in: umas, signedWith: team.uma.keyFile, appendLogEntry(by: "alice", id: "a9", at: "11:00:00", text: "said by uma"))
        try assertPushRefused(team, inAlicesName, from: umas, as: team.uma, mentions: ["by uma@tablet", "uma may only add entries of their own"])
        try gitOK(["reset", "--quiet", "--hard", question], in: umas)
        let rewritten = try commitWithGit(in: umas, signedWith: team.uma.keyFile) { clone in
            try Data().write(to: clone.appendingPathComponent(Self.logDay))
            try self.appendLogEntry(by: "uma", id: "q1", at: "09:00:00", text: "forged")(clone)
        }
        try assertPushRefused(team, rewritten, from: umas, as: team.uma, mentions: ["by uma@tablet changes \(Self.logDay)", "a log only grows"])
        try gitOK(["reset", "--quiet", "--hard", question], in: umas)
        let shadow = try commitWithGit(in: umas, signedWith: team.uma.keyFile, appendLogEntry(by: "uma", id: "q1", at: "09:00:00", text: "forged"))
        let twice = try commitWithGit(in: umas, signedWith: team.uma.keyFile, appendLogEntry(by: "uma", id: "q1", at: "09:30:00", text: "again"))
        try assertPushRefused(team, twice, from: umas, as: team.uma, mentions: [Self.logDay, "log entry q1 by uma appears twice"], stored: [shadow])
        try gitOK(["push", "--quiet", "origin", "\(shadow):refs/heads/main"], in: umas, environment: try gitSSHEnvironment(team.uma, host: team.host))
        let day = try gitOK(["show", "refs/heads/main:\(Self.logDay)"], in: team.host.repository("kid"))
        XCTAssertTrue(day.contains("question") && day.contains("forged"), "both entries q1 stay, each its author's: \(day)")

        try gitOK(["fetch", "--quiet", "origin"], in: alices, environment: try gitSSHEnvironment(team.alice, host: team.host))
        try gitOK(["reset", "--quiet", "--hard", "origin/main"], in: alices)
        let octopus = try octopusWithGit(in: alices, signedWith: team.alice.keyFile)
        try assertPushRefused(team, octopus, from: alices, as: team.alice, mentions: ["by alice@laptop", "merges 3 parents"])

        try gitOK(["reset", "--quiet", "--hard", shadow], in: umas)
        let unsigned = try commitWithGit(in: umas, signedWith: nil, appendLogEntry(by: "uma", id: "u2", at: "12:00:00", text: "unsigned"))
        try assertPushRefused(team, unsigned, from: umas, as: team.uma, mentions: ["it is not signed"])
    }

    /// Alice demotes eddie on her copy from before his kinds change and vera's write reached the
    /// server's main (the second red-team pass's repro-R through serve): both stand.
    func testADemotionOnAnOlderCopyLeavesPublishedKindsAndWritesStandingThroughServe() throws {
        try assertADemotionOnAnOlderCopyLeavesPublishedKindsAndWritesStanding(try publishedWorkTeam())
    }

    /// Eddie leaves on a copy from before his record existed and vera merges it and pushes it through
    /// the server (repro-U through serve): alice's published version of the record stands.
    func testALeaveOnAnOlderCopyLeavesPublishedRecordsStandingThroughServe() throws {
        try assertALeaveOnAnOlderCopyLeavesPublishedRecordsStanding(try publishedWorkTeam())
    }

    /// The third red-team pass's two-step merge through serve (repros 1-serve, 3, 4-serve): Eddie,
    /// demoted on main, writes on his copy from before, merges main into it his own line first, then
    /// merges that into main with plain git and pushes: the pre-receive refuses it, naming the merge.
    func testATwoStepMergeThroughAnOldCopyFirstIsRefusedByThePreReceive() throws {
        let team = try servedTeam()
        let (cloned, eddiesCopy) = try cloneThroughServer("kid", as: team.eddie, host: team.host)
        XCTAssertEqual(cloned.status, 0, cloned.summary)
        let old = try revParse("HEAD", in: eddiesCopy)
        try concordOK(["role", "eddie", "viewer"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        try gitOK(["checkout", "--quiet", "-b", "old", old], in: eddiesCopy)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"an editor's write after the demotion"}"#], as: team.eddie, in: eddiesCopy)
        try concordOK(["merge", "main"], as: team.eddie, in: eddiesCopy)
        let oldCopyFirst = try revParse("HEAD", in: eddiesCopy)
        try gitOK(["checkout", "--quiet", "main"], in: eddiesCopy)
        try gitOK(GitSigning.options(keyFile: team.eddie.keyFile.path) + ["merge", "--quiet", "--no-ff", "--no-edit", "-S", oldCopyFirst], in: eddiesCopy)
        let start = try serverMain("kid", host: team.host)
        let pushed = try git(["push", "origin", "HEAD:main"], in: eddiesCopy, environment: try gitSSHEnvironment(team.eddie, host: team.host))
        XCTAssertNotEqual(pushed.status, 0, pushed.summary)
        XCTAssertTrue(pushed.stderr.contains("it brings in merge \(oldCopyFirst.prefix(7))"), pushed.summary)
        XCTAssertEqual(try serverMain("kid", host: team.host), start, "the server stores nothing")
    }

    /// The fourth red-team pass: a demoted Admin's self-demotion on the old copy hides nothing.
    func testASelfDemotionOnAnOldCopyDoesNotHideWhatWasWrittenBeforeItThroughServe() throws {
        try assertASelfDemotionOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(try publishedWorkTeam())
    }

    /// The fourth red-team pass: a revoked member's departure on the old copy hides nothing.
    func testALeaveOnAnOldCopyDoesNotHideWhatWasWrittenBeforeItThroughServe() throws {
        try assertALeaveOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(try publishedWorkTeam())
    }

    /// The fifth red-team pass (HIGH 1): a departure that falls hides no write from the kinds the merge ends with.
    func testAFallenDepartureHidesNoWriteFromTheKindsTheMergeEndsWithThroughServe() throws {
        try assertAFallenDepartureHidesNoWriteFromTheKindsTheMergeEndsWith(try publishedWorkTeam())
    }

    /// The fifth red-team pass (MED 1): a removed key that removes itself on an old copy keeps no write.
    func testARemovedKeyRemovingItselfOnAnOldCopyKeepsNoWriteThroughServe() throws {
        try assertARemovedKeyRemovingItselfOnAnOldCopyKeepsNoWrite(try publishedWorkTeam())
    }

    /// The fifth red-team pass (HIGH 2): log entries written acting for another member go with their signer.
    func testLogEntriesWrittenActingForAnotherGoWithTheirSignerThroughServe() throws {
        try assertLogEntriesWrittenActingForAnotherGoWithTheirSigner(try publishedWorkTeam())
    }

    /// The fifth red-team pass (MED 2): a write made before one's own hand-over stands.
    func testAWriteMadeBeforeOnesOwnHandOverStandsThroughServe() throws {
        try assertAWriteMadeBeforeOnesOwnHandOverStands(try publishedWorkTeam())
    }

    /// The fifth red-team pass (MED 3): leaving after the remote moved records the departure.
    func testLeavingAfterTheRemoteMovedRecordsTheDepartureThroughServe() throws {
        try assertLeavingAfterTheRemoteMovedRecordsTheDeparture(try publishedWorkTeam())
    }

    /// The eighth red-team pass: an edit left out on top of an honest side keeps the honest write (F1, HIGH).
    func testAnEditLeftOutOnTopOfAnHonestSideKeepsTheHonestWriteThroughServe() throws {
        try assertAnEditLeftOutOnTopOfAnHonestSideKeepsTheHonestWrite(try publishedWorkTeam())
    }

    /// The eighth red-team pass: a left-out copy of an honest entry drops nothing (F2, HIGH).
    func testALeftOutCopyOfAnHonestEntryDropsNothingThroughServe() throws {
        try assertALeftOutCopyOfAnHonestEntryDropsNothing(try publishedWorkTeam())
    }

    /// The eighth red-team pass: a left-out write in a delete-wins kind deletes nothing (F3, HIGH).
    func testALeftOutWriteInADeleteWinsKindDeletesNothingThroughServe() throws {
        try assertALeftOutWriteInADeleteWinsKindDeletesNothing(try publishedWorkTeam())
    }

    /// The eighth red-team pass: a record of a fallen kind goes with it, whoever wrote it (F4).
    func testARecordOfAFallenKindGoesWithItWhoeverWroteItThroughServe() throws {
        try assertARecordOfAFallenKindGoesWithItWhoeverWroteIt(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a log entry written again on an old copy rewrites nothing (F1, HIGH).
    func testALogEntryWrittenAgainOnAnOldCopyRewritesNothingThroughServe() throws {
        try assertALogEntryWrittenAgainOnAnOldCopyRewritesNothing(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a kind added offline by a demoted Admin leaves a valid merge (F2).
    func testAKindAddedOfflineByADemotedAdminLeavesAValidMergeThroughServe() throws {
        try assertAKindAddedOfflineByADemotedAdminLeavesAValidMerge(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a fallen kinds change takes .gitattributes with it (F3).
    func testAFallenKindsChangeTakesGitattributesWithItThroughServe() throws {
        try assertAFallenKindsChangeTakesGitattributesWithIt(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a left-out write stamped in the future outranks no one (F5).
    func testALeftOutWriteStampedInTheFutureOutranksNoOneThroughServe() throws {
        try assertALeftOutWriteStampedInTheFutureOutranksNoOne(try publishedWorkTeam())
    }

    /// The sixth red-team pass: deleting an identity on a stale copy destroys no profile another Admin holds (HIGH 3).
    func testDeletingAnIdentityOnAStaleCopyDestroysNoProfileAnotherAdminHoldsThroughServe() throws {
        try assertDeletingAnIdentityOnAStaleCopyDestroysNoProfileAnotherAdminHolds(try publishedWorkTeam())
    }

    /// The sixth red-team pass: loosened kinds put back keep no write of a demoted Admin (HIGH 1).
    func testLoosenedThenRestoredKindsKeepNoWriteThroughServe() throws {
        try assertLoosenedThenRestoredKindsKeepNoWrite(try publishedWorkTeam())
    }

    /// The sixth red-team pass: copying the main line's kinds keeps no write made under older ones (HIGH 2).
    func testCopyingTheMainLinesKindsKeepsNoWriteMadeUnderOlderOnesThroughServe() throws {
        try assertCopyingTheMainLinesKindsKeepsNoWriteMadeUnderOlderOnes(try publishedWorkTeam())
    }

    /// The sixth red-team pass: an Admin copying the main line's kinds on a side keeps no write made before (HIGH 2).
    func testAnAdminCopyingTheMainLinesKindsOnASideKeepsNoWriteMadeBeforeThroughServe() throws {
        try assertAnAdminCopyingTheMainLinesKindsOnASideKeepsNoWriteMadeBefore(try publishedWorkTeam())
    }

    /// The eighth red-team pass (F5): a peer's branch merged before a sync, holding what main took
    /// meanwhile, is merged again by the sync, main first; nothing published is left out.
    func testAPeerMergeHoldingNewerMainIsMadeAgainBySyncThroughServe() throws {
        try assertAPeerMergeHoldingNewerMainIsMadeAgainBySync(try publishedWorkTeam())
    }

    /// The ninth red-team pass (F2): the same, with a write of alice's after her merge: made again on top.
    func testAWriteAfterAPeerMergeIsMadeAgainBySyncThroughServe() throws {
        try assertAPeerMergeHoldingNewerMainIsMadeAgainBySync(try publishedWorkTeam(), writingAfter: true)
    }

    /// The ninth red-team pass (F1): a peer's branch holding a merge that took main's commits as its
    /// side is left out by the sync, and the device's own write before it stays.
    func testAPeerBranchHoldingAMergeInTheWrongOrderIsUndoneBySyncThroughServe() throws {
        try assertAPeerBranchHoldingAMergeInTheWrongOrderIsUndoneBySync(try publishedWorkTeam())
    }

    /// The ninth red-team pass (F4): a peer's branch holding a forged commit is refused by `concord merge`.
    func testAPeersBranchIsCheckedBeforeItIsMergedThroughServe() throws {
        try assertAPeersBranchIsCheckedBeforeItIsMerged(try publishedWorkTeam())
    }

    private func publishedWorkTeam() throws -> PublishedWorkTeam {
        let team = try servedTeam()
        return PublishedWorkTeam(alice: team.alice, eddie: team.eddie, vera: team.vera, aliceProfile: team.aliceProfile) { device, directory in
            let target = self.sandbox.appendingPathComponent(directory)
            try self.concordOK(["clone", team.host.url("kid"), target.path, "--trust-host", team.host.sshd.hostKeyFingerprint], as: device)
            self.fsckAtEnd.append(target)
            return target
        }
    }

    // MARK: - The team on a server, and pushes with plain git

    /// Records speak only for their signer (data format 7): Eddie, an Editor, rewrites Alice's
    /// vocabulary record with plain git and his own key, leaving it stamped as hers, and then writes
    /// a new record in her name. The pre-receive refuses both; the same edit in his own name is stored.
    func testARecordStampedWithAnotherMembersNameIsRefused() throws {
        let team = try servedTeam()
        let eddies = try gitClone(as: team.eddie, team)
        let start = try gitOK(["rev-parse", "HEAD"], in: eddies)
        let inAlicesName = try commitWithGit(in: eddies, signedWith: team.eddie.keyFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "said by eddie""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertPushRefused(team, inAlicesName, from: eddies, as: team.eddie, mentions: [
            "by eddie@laptop changes vocabulary/puzzle", #"field "label""#, "in alice's name, but eddie signed it", "concord put",
        ])
        try gitOK(["reset", "--quiet", "--hard", start], in: eddies)
        let own = try commitWithGit(in: eddies, signedWith: team.eddie.keyFile) { clone in
            let file = try self.recordFile("vocabulary", "puzzle", in: clone)
            try self.replace(#""label": "puzzle""#, with: #""label": "ball""#, in: file)
            try self.replace(#""updatedBy": "alice""#, with: #""updatedBy": "eddie""#, in: file)
        }
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: eddies, environment: try gitSSHEnvironment(team.eddie, host: team.host))
        XCTAssertEqual(try serverMain("kid", host: team.host), own, "a write in the signer's own name is stored")
    }

    /// A merge whose second parent is an ancestor of its first (a red-team finding, issue 42): Eddie's
    /// merge takes the ancestor's older version of Alice's record, still stamped as hers, which matches
    /// one parent and used to pass; and one removes her record. The pre-receive refuses both: a merge
    /// that differs from merging its parents writes in its signer's name only (StampAttackTests makes
    /// the same merges, and the revived delete, on a path remote).
    func testAMergeWithAnAncestorCannotTakeBackAnotherMembersWrites() throws {
        let team = try servedTeam()
        let eddies = try gitClone(as: team.eddie, team)
        let old = try gitOK(["rev-parse", "HEAD"], in: eddies)
        let puzzle = String(try recordFile("vocabulary", "puzzle", in: eddies).path.dropFirst(eddies.path.count + 1))
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"ball"}"#], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try gitOK(["pull", "--quiet", "--ff-only"], in: eddies, environment: try gitSSHEnvironment(team.eddie, host: team.host))
        let main = try gitOK(["rev-parse", "HEAD"], in: eddies)

        let older = try ancestorMergeWithGit(in: eddies, with: old, signedWith: team.eddie.keyFile) { clone in
            try self.gitOK(["checkout", old, "--", puzzle], in: clone)
        }
        try assertPushRefused(team, older, from: eddies, as: team.eddie, mentions: [
            "by eddie@laptop changes vocabulary/puzzle", "in alice's name, but eddie signed it",
        ])
        try gitOK(["reset", "--quiet", "--hard", main], in: eddies)
        let gone = try ancestorMergeWithGit(in: eddies, with: old, signedWith: team.eddie.keyFile) { clone in
            try self.gitOK(["rm", "--quiet", puzzle], in: clone)
        }
        try assertPushRefused(team, gone, from: eddies, as: team.eddie, mentions: ["changes vocabulary/puzzle", "the merge removes it"])
        XCTAssertEqual(try serverMain("kid", host: team.host), main)
    }

    struct ServedTeam {
        let alice: TestDevice   // admin, and the server's admin
        let eddie: TestDevice   // editor
        let uma: TestDevice     // user
        let vera: TestDevice    // viewer
        let host: ConcordServeHost
        let aliceProfile: URL
    }

    /// Alice's profile "kid" on a concord server, as `makeAccessTeam` makes it on a path remote.
    private func servedTeam() throws -> ServedTeam {
        let alice = try makeDevice("alice", device: "laptop")
        let eddie = try makeDevice("eddie", device: "laptop")
        let uma = try makeDevice("uma", device: "tablet")
        let vera = try makeDevice("vera", device: "tablet")
        let host = try makeHost(admin: alice)
        let profile = try publish("kid", on: host, members: [(eddie, "editor"), (uma, "user"), (vera, "viewer")],
                                  records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#), ("settings/theme", #"{"color":"blue"}"#)])
        return ServedTeam(alice: alice, eddie: eddie, uma: uma, vera: vera, host: host, aliceProfile: profile)
    }

    /// The served team with Eddie promoted to Admin by Alice, and Eddie's plain git clone of that main.
    private func eddieAsAdminWithAClone() throws -> (ServedTeam, URL) {
        let team = try servedTeam()
        try concordOK(["role", "eddie", "admin"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        return (team, try gitClone(as: team.eddie, team))
    }

    /// A plain git clone of the server's "kid" over ssh with `device`'s key.
    private func gitClone(as device: TestDevice, _ team: ServedTeam) throws -> URL {
        let clone = sandbox.appendingPathComponent("git-\(device.member)-\(UUID().uuidString.prefix(8))")
        try gitOK(["clone", "--quiet", team.host.url("kid"), clone.path], environment: try gitSSHEnvironment(device, host: team.host))
        fsckAtEnd.append(clone)
        return clone
    }

    /// `device` pushes `commit` from `clone` as the server's main with plain git: refused by the
    /// pre-receive in one line naming the commit and `mentions`; main unchanged, and neither `commit`
    /// nor the commits in `stored` (pushed with it) kept on the server.
    private func assertPushRefused(_ team: ServedTeam, _ commit: String, from clone: URL, as device: TestDevice, mentions: [String],
                                   stored: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try serverMain("kid", host: team.host)
        let pushed = try git(["push", "origin", "\(commit):refs/heads/main"], in: clone, environment: try gitSSHEnvironment(device, host: team.host))
        XCTAssertNotEqual(pushed.status, 0, pushed.summary, file: file, line: line)
        let refusals = pushed.stderr.split(separator: "\n").filter { $0.contains("concord serve:") }
        XCTAssertEqual(refusals.count, 1, "one line from the pre-receive: \(pushed.stderr)", file: file, line: line)
        let refusal = String(refusals.first ?? "")
        print("\(device.member) pushing \(commit.prefix(7)): \(refusal)")
        XCTAssertTrue(refusal.hasPrefix("remote: concord serve: refused: "), refusal, file: file, line: line)
        for mention in [String(commit.prefix(7))] + mentions {
            XCTAssertTrue(refusal.contains(mention), "\(mention.debugDescription) in \(refusal)", file: file, line: line)
        }
        XCTAssertEqual(try serverMain("kid", host: team.host), before, "the server's main moved", file: file, line: line)
        for object in [commit] + stored {
            XCTAssertNotEqual(try git(["cat-file", "-e", object], in: team.host.repository("kid")).status, 0,
                              "the server stored \(object.prefix(7))", file: file, line: line)
        }
    }
}
