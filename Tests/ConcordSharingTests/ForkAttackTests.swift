import ConcordTestSupport
import Foundation
import XCTest

/// Issue 42: a decision that has been published cannot be reversed by a decision made later on an
/// older copy. Each attacker keeps a copy from before a decision against them (or a name they want
/// was taken), makes their own decision there, merges main and pushes it to a path remote. Whether
/// the push is refused by the honest devices' sync or taken with the attacker's decision dropped,
/// the honest devices end in the state the published decisions made; never the attacker's. Where
/// concord will not make the attacker's merge, they make it with plain git, main first and their
/// fork second, git's merge keeping their side (`mainFirstMergeWithGit`), and push that.
final class ForkAttackTests: ConcordTestCase {
    // MARK: - 1. A revoked or demoted senior Admin

    /// Jay (an Admin alice added) revokes alice, adds kim and writes a record. Alice, on her copy
    /// from before, revokes jay, merges main with `concord merge` and pushes.
    func testARevokedCreatorsRevocationOfHerRevokerMergedByConcordFalls() throws {
        let scene = try jayRemovesAlice(demoting: false)
        try concordOK(["revoke", "jay"], as: scene.alice, in: scene.aliceProfile)
        try mergeMainAndPushAnyway(in: scene.aliceProfile, as: scene.alice)
        try assertJayStands(scene, alice: ("admin", "revoked"))
    }

    /// The same with plain git: alice's fork first, main second, signed with her key, pushed (its
    /// tree the one concord's merge makes there, so that only the parents' order is plain git's).
    func testARevokedCreatorsRevocationOfHerRevokerMergedByPlainGitFalls() throws {
        let scene = try jayRemovesAlice(demoting: false)
        try concordOK(["revoke", "jay"], as: scene.alice, in: scene.aliceProfile)
        let fork = try revParse("HEAD", in: scene.aliceProfile)
        try gitOK(["fetch", "--quiet", "origin"], in: scene.aliceProfile)
        let merge = try forkFirstMergeWithGit(in: scene.aliceProfile, of: "origin/main", as: scene.alice, signedWith: scene.alice.keyFile)
        XCTAssertEqual(try revParse("\(merge)^1", in: scene.aliceProfile), fork, "alice's fork is the first parent")
        try pushAnyway(from: scene.aliceProfile)
        try assertJayStands(scene, alice: ("admin", "revoked"))
    }

    /// Jay demotes alice to Viewer instead; alice, on her copy from before, demotes jay and runs
    /// plain `concord sync`.
    func testADemotedCreatorsDemotionOfHerDemoterOnAnOldCopyFalls() throws {
        let scene = try jayRemovesAlice(demoting: true)
        try concordOK(["role", "jay", "viewer"], as: scene.alice, in: scene.aliceProfile)
        if try concord(["sync"], as: scene.alice, in: scene.aliceProfile).status != 0 {
            try gitOK(["fetch", "--quiet", "origin"], in: scene.aliceProfile)
            try mainFirstMergeWithGit(in: scene.aliceProfile, of: "origin/main", signedWith: scene.alice.keyFile)
            try pushAnyway(from: scene.aliceProfile)
        }
        try assertJayStands(scene, alice: ("viewer", "active"))
    }

    // MARK: - 2. An open link's holder squatting a name

    /// Eve joined by alice's open link; alice later adds zed (Editor), who writes. Eve makes a second
    /// key and joins by the same link as `zed` on her copy from before zed existed, merges main with
    /// `concord merge` and pushes. Zed keeps his name, his key and his record everywhere.
    func testAnOpenLinksHolderCannotSquatTheNameOfALaterMember() throws {
        let scene = try eveJoinsByAnOpenLink()
        let zed = try makeDevice("zed", device: "laptop")
        try concordOK(["members", "add", "zed", "--role", "editor", "--key", zed.publicKeyLine, "--device", "laptop"],
                      as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let zedProfile = try cloneProfile(zed, from: scene.remote, into: "zed")
        try concordOK(["put", "vocabulary/zeds", "--json", #"{"label":"by zed"}"#], as: zed, in: zedProfile)
        try concordOK(["sync"], as: zed, in: zedProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)

        let squat = try joinWithAnOpenLink(scene.link, as: "zed", in: scene.eveProfile, profileID: try profileID(of: scene.eveProfile))
        try mergeMainAndPushAnyway(in: scene.eveProfile, as: scene.eve)

        for (device, profile) in [(scene.alice, scene.aliceProfile), (zed, zedProfile)] {
            let synced = try concord(["sync"], as: device, in: profile)
            XCTAssertFalse(synced.stderr.contains("access removed"), "\(device.member) is told: \(synced.summary)")
            guard copyIsThere(profile, of: device, after: synced) else { continue }
            try assertMember("zed", "editor", "active", as: device, in: profile)
            XCTAssertEqual(try memberKeys("zed", in: profile), [keyBlob(zed.publicKeyLine)], "\(device.member): zed's keys are his own")
            XCTAssertFalse(try memberKeys("zed", in: profile).contains(keyBlob(squat.key)), "eve's second key is not zed's")
            XCTAssertTrue(try holdsRecord("vocabulary", "zeds", in: profile), "\(device.member) keeps zed's record")
        }
        // Zed's device still writes as zed.
        if FileManager.default.fileExists(atPath: zedProfile.path) {
            try concordOK(["put", "vocabulary/zeds", "--json", #"{"label":"zed again"}"#], as: zed, in: zedProfile)
        }
    }

    /// Alice invites dave by his key; eve, on her copy from before that invitation, joins by her
    /// open link as `dave` with a second key and merges main with `concord merge`. Dave's file still
    /// invites exactly his key, and the real dave's accept succeeds.
    func testAnOpenLinksHolderCannotSquatAPendingNamedInvitation() throws {
        let scene = try eveJoinsByAnOpenLink()
        let dave = try makeDevice("dave", device: "phone")
        let named = try shareAndSync(["dave", "--role", "editor", "--key", dave.publicKeyLine], as: scene.alice, in: scene.aliceProfile)

        let squat = try joinWithAnOpenLink(scene.link, as: "dave", in: scene.eveProfile, profileID: try profileID(of: scene.eveProfile))
        try mergeMainAndPushAnyway(in: scene.eveProfile, as: scene.eve)

        _ = try concord(["sync"], as: scene.alice, in: scene.aliceProfile)
        try assertMemberFile("dave", "editor", "invited", in: scene.aliceProfile, "alice's device after eve's push")
        XCTAssertEqual(try memberKeys("dave", in: scene.aliceProfile), [keyBlob(dave.publicKeyLine)], "dave's file invites exactly his key")
        let daveProfile = try accept(named, as: dave, remote: scene.remote, into: "dave")
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        try assertSquatFell(dave, squat: squat.key, on: [(scene.alice, scene.aliceProfile), (dave, daveProfile)])
    }

    // MARK: - 3. A removed device key

    /// Bob removes his tablet's key; the thief holding it adds a key X of their own to bob's file on
    /// the tablet's copy from before (signed by the tablet's key, its id ground to sort before the
    /// removal's), writes a record there, merges main with `concord merge` as X and pushes.
    func testARemovedKeysAdditionOnAnOldCopyMergedByConcordFalls() throws {
        let scene = try bobRemovesHisTablet()
        let thief = try thiefAddsAKeyAndWrites(on: scene.tabletProfile, as: scene.tablet, before: scene.removal)
        try mergeMainAndPushAnyway(in: scene.tabletProfile, as: thief)
        try assertTheTabletStaysRemoved(scene, thief: thief)
    }

    /// The same with plain git: the thief's fork first, main second, signed with the thief's key.
    func testARemovedKeysAdditionOnAnOldCopyMergedByPlainGitFalls() throws {
        let scene = try bobRemovesHisTablet()
        let thief = try thiefAddsAKeyAndWrites(on: scene.tabletProfile, as: scene.tablet, before: scene.removal)
        try gitOK(["fetch", "--quiet", "origin"], in: scene.tabletProfile)
        try forkFirstMergeWithGit(in: scene.tabletProfile, of: "origin/main", as: thief, signedWith: thief.keyFile)
        try pushAnyway(from: scene.tabletProfile)
        try assertTheTabletStaysRemoved(scene, thief: thief)
    }

    /// Alice (Admin) removes her phone's key; the thief holding it adds an Admin alias on the phone's
    /// copy from before (signed by the phone's key, its id ground to sort before the removal's),
    /// merges main with `concord merge` as the alias and pushes: the alias is never an active
    /// member on an honest device.
    func testARemovedAdminKeysAliasOnAnOldCopyNeverBecomesAMember() throws {
        let phone = try makeDevice("alice", device: "phone")
        let bob = try makeDevice("bob", device: "phone")
        let (remote, alice, aliceProfile) = try alicesProfile(with: [(phone, "admin"), (bob, "editor")])
        let phoneProfile = try cloneProfile(phone, from: remote, into: "alice-phone")
        let bobProfile = try cloneProfile(bob, from: remote, into: "bob")
        let removal = try removeDevice("phone", as: alice, in: aliceProfile)
        try concordOK(["sync"], as: bob, in: bobProfile)

        let alias = try makeDevice("alias", device: "laptop")
        try concordOK(["members", "add", "alias", "--role", "admin", "--key", alias.publicKeyLine, "--device", "laptop"], as: phone, in: phoneProfile)
        try grindHead(in: phoneProfile, before: removal, signedWith: phone.keyFile)
        try mergeMainAndPushAnyway(in: phoneProfile, as: alias)

        for (device, profile) in [(alice, aliceProfile), (bob, bobProfile)] {
            let synced = try concord(["sync"], as: device, in: profile)
            guard copyIsThere(profile, of: device, after: synced) else { continue }
            let listed = try memberLine("alias", as: device, in: profile)
            XCTAssertFalse(listed?.contains("active") == true, "\(device.member)@\(device.device) lists \(listed ?? "")")
            XCTAssertNotEqual(try memberFile("alias", in: profile)?["status"] as? String, "active", "\(device.member): alias's file")
            XCTAssertEqual(try memberKeys("alice", in: profile), [keyBlob(alice.publicKeyLine)], "\(device.member): the phone stays removed")
        }
    }

    // MARK: - 4. A decision on an old copy against published work

    /// Alice demotes eddie on her copy from before his kinds change and vera's write reached main
    /// (the second red-team pass's repro-R): both stand.
    func testADemotionOnAnOlderCopyLeavesPublishedKindsAndWritesStanding() throws {
        try assertADemotionOnAnOlderCopyLeavesPublishedKindsAndWritesStanding(try publishedWorkTeam())
    }

    /// Eddie leaves on a copy from before his record existed and vera merges it (repro-U): alice's
    /// published version of the record stands.
    func testALeaveOnAnOlderCopyLeavesPublishedRecordsStanding() throws {
        try assertALeaveOnAnOlderCopyLeavesPublishedRecordsStanding(try publishedWorkTeam())
    }

    /// The third red-team pass (repros 1–4, 6): Eddie, demoted to Viewer on main, writes on his copy
    /// from before, merges main into it with his own line first (`concord merge main`: M), then
    /// merges M into main. M judged main's commits as its side, so bringing it in would keep his
    /// writes (and could take published ones away): `concord merge M` is refused, changing nothing,
    /// and the same merge made with plain git and pushed is refused by every device.
    func testATwoStepMergeThroughAnOldCopyFirstIsRefused() throws {
        let team = try makeAccessTeam()
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        let old = try revParse("HEAD", in: eddiesCopy)
        try concordOK(["role", "eddie", "viewer"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        let main = try revParse("HEAD", in: eddiesCopy)

        try gitOK(["checkout", "--quiet", "-b", "old", old], in: eddiesCopy)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"an editor's write after the demotion"}"#], as: team.eddie, in: eddiesCopy)
        try concordOK(["merge", "main"], as: team.eddie, in: eddiesCopy)
        let oldCopyFirst = try revParse("HEAD", in: eddiesCopy)
        try gitOK(["checkout", "--quiet", "main"], in: eddiesCopy)
        assertOneLineRefusal(try concord(["merge", oldCopyFirst], as: team.eddie, in: eddiesCopy), status: 5,
                             mentions: ["\(oldCopyFirst.prefix(7)) by eddie", "took the main line's commits (\(main.prefix(7))) as the side of another line"])
        XCTAssertEqual(try revParse("HEAD", in: eddiesCopy), main, "nothing changed")

        try gitOK(GitSigning.options(keyFile: team.eddie.keyFile.path) + ["merge", "--quiet", "--no-ff", "--no-edit", "-S", oldCopyFirst], in: eddiesCopy)
        let twoStep = try revParse("HEAD", in: eddiesCopy)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: eddiesCopy)
        try assertRefused(team, commit: twoStep, mentions: ["it brings in merge \(oldCopyFirst.prefix(7))"])
        XCTAssertNotEqual(try concord(["get", "vocabulary/evil"], as: team.alice, in: team.aliceProfile).status, 0, "his write is nowhere")
    }

    /// The fourth red-team pass: a demoted Admin's self-demotion on the old copy hides nothing.
    func testASelfDemotionOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt() throws {
        try assertASelfDemotionOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(try publishedWorkTeam())
    }

    /// The fourth red-team pass: a revoked member's departure on the old copy hides nothing.
    func testALeaveOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt() throws {
        try assertALeaveOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(try publishedWorkTeam())
    }

    /// The fifth red-team pass (HIGH 1): a departure that falls hides no write from the kinds the merge ends with.
    func testAFallenDepartureHidesNoWriteFromTheKindsTheMergeEndsWith() throws {
        try assertAFallenDepartureHidesNoWriteFromTheKindsTheMergeEndsWith(try publishedWorkTeam())
    }

    /// The fifth red-team pass (MED 1): a removed key that removes itself on an old copy keeps no write.
    func testARemovedKeyRemovingItselfOnAnOldCopyKeepsNoWrite() throws {
        try assertARemovedKeyRemovingItselfOnAnOldCopyKeepsNoWrite(try publishedWorkTeam())
    }

    /// The fifth red-team pass (HIGH 2): log entries written acting for another member go with their signer.
    func testLogEntriesWrittenActingForAnotherGoWithTheirSigner() throws {
        try assertLogEntriesWrittenActingForAnotherGoWithTheirSigner(try publishedWorkTeam())
    }

    /// The fifth red-team pass (MED 2): a write made before one's own hand-over stands.
    func testAWriteMadeBeforeOnesOwnHandOverStands() throws {
        try assertAWriteMadeBeforeOnesOwnHandOverStands(try publishedWorkTeam())
    }

    /// The fifth red-team pass (MED 3): leaving after the remote moved records the departure.
    func testLeavingAfterTheRemoteMovedRecordsTheDeparture() throws {
        try assertLeavingAfterTheRemoteMovedRecordsTheDeparture(try publishedWorkTeam())
    }

    /// The eighth red-team pass: an edit left out on top of an honest side keeps the honest write (F1, HIGH).
    func testAnEditLeftOutOnTopOfAnHonestSideKeepsTheHonestWrite() throws {
        try assertAnEditLeftOutOnTopOfAnHonestSideKeepsTheHonestWrite(try publishedWorkTeam())
    }

    /// The eighth red-team pass: a left-out copy of an honest entry drops nothing (F2, HIGH).
    func testALeftOutCopyOfAnHonestEntryDropsNothing() throws {
        try assertALeftOutCopyOfAnHonestEntryDropsNothing(try publishedWorkTeam())
    }

    /// The eighth red-team pass: a left-out write in a delete-wins kind deletes nothing (F3, HIGH).
    func testALeftOutWriteInADeleteWinsKindDeletesNothing() throws {
        try assertALeftOutWriteInADeleteWinsKindDeletesNothing(try publishedWorkTeam())
    }

    /// The eighth red-team pass: a record of a fallen kind goes with it, whoever wrote it (F4).
    func testARecordOfAFallenKindGoesWithItWhoeverWroteIt() throws {
        try assertARecordOfAFallenKindGoesWithItWhoeverWroteIt(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a log entry written again on an old copy rewrites nothing (F1, HIGH).
    func testALogEntryWrittenAgainOnAnOldCopyRewritesNothing() throws {
        try assertALogEntryWrittenAgainOnAnOldCopyRewritesNothing(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a kind added offline by a demoted Admin leaves a valid merge (F2).
    func testAKindAddedOfflineByADemotedAdminLeavesAValidMerge() throws {
        try assertAKindAddedOfflineByADemotedAdminLeavesAValidMerge(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a fallen kinds change takes .gitattributes with it (F3).
    func testAFallenKindsChangeTakesGitattributesWithIt() throws {
        try assertAFallenKindsChangeTakesGitattributesWithIt(try publishedWorkTeam())
    }

    /// The seventh red-team pass: a left-out write stamped in the future outranks no one (F5).
    func testALeftOutWriteStampedInTheFutureOutranksNoOne() throws {
        try assertALeftOutWriteStampedInTheFutureOutranksNoOne(try publishedWorkTeam())
    }

    /// The sixth red-team pass: deleting an identity on a stale copy destroys no profile another Admin holds (HIGH 3).
    func testDeletingAnIdentityOnAStaleCopyDestroysNoProfileAnotherAdminHolds() throws {
        try assertDeletingAnIdentityOnAStaleCopyDestroysNoProfileAnotherAdminHolds(try publishedWorkTeam())
    }

    /// The sixth red-team pass: loosened kinds put back keep no write of a demoted Admin (HIGH 1).
    func testLoosenedThenRestoredKindsKeepNoWrite() throws {
        try assertLoosenedThenRestoredKindsKeepNoWrite(try publishedWorkTeam())
    }

    /// The sixth red-team pass: copying the main line's kinds keeps no write made under older ones (HIGH 2).
    func testCopyingTheMainLinesKindsKeepsNoWriteMadeUnderOlderOnes() throws {
        try assertCopyingTheMainLinesKindsKeepsNoWriteMadeUnderOlderOnes(try publishedWorkTeam())
    }

    /// The sixth red-team pass: an Admin copying the main line's kinds on a side keeps no write made before (HIGH 2).
    func testAnAdminCopyingTheMainLinesKindsOnASideKeepsNoWriteMadeBefore() throws {
        try assertAnAdminCopyingTheMainLinesKindsOnASideKeepsNoWriteMadeBefore(try publishedWorkTeam())
    }

    /// The eighth red-team pass (F5): a peer's branch merged before a sync, holding what main took
    /// meanwhile, is merged again by the sync, main first; nothing published is left out.
    func testAPeerMergeHoldingNewerMainIsMadeAgainBySync() throws {
        try assertAPeerMergeHoldingNewerMainIsMadeAgainBySync(try publishedWorkTeam())
    }

    /// The ninth red-team pass (F2): the same, with a write of alice's after her merge: made again on top.
    func testAWriteAfterAPeerMergeIsMadeAgainBySync() throws {
        try assertAPeerMergeHoldingNewerMainIsMadeAgainBySync(try publishedWorkTeam(), writingAfter: true)
    }

    /// The ninth red-team pass (F1): a peer's branch holding a merge that took main's commits as its
    /// side is left out by the sync, and the device's own write before it stays.
    func testAPeerBranchHoldingAMergeInTheWrongOrderIsUndoneBySync() throws {
        try assertAPeerBranchHoldingAMergeInTheWrongOrderIsUndoneBySync(try publishedWorkTeam())
    }

    /// The ninth red-team pass (F4): a peer's branch holding a forged commit is refused by `concord merge`.
    func testAPeersBranchIsCheckedBeforeItIsMerged() throws {
        try assertAPeersBranchIsCheckedBeforeItIsMerged(try publishedWorkTeam())
    }

    private func publishedWorkTeam() throws -> PublishedWorkTeam {
        let team = try makeAccessTeam()
        return PublishedWorkTeam(alice: team.alice, eddie: team.eddie, vera: team.vera, aliceProfile: team.aliceProfile) { device, directory in
            try self.cloneProfile(device, from: team.remote, into: directory)
        }
    }

    // MARK: - Scenes

    /// Alice's profile on a path remote with vocabulary/puzzle and `members` (device, role).
    private func alicesProfile(with members: [(TestDevice, String)]) throws -> (remote: SyncRemote, alice: TestDevice, profile: URL) {
        let remote = try makeRemote(.path)
        let alice = try makeDevice("alice", device: "laptop")
        let profile = try publishProfile(owner: alice, remote: remote, directory: "alice", members: members,
                                         records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        return (remote, alice, profile)
    }

    struct RevokerScene {
        let alice: TestDevice, jay: TestDevice, bob: TestDevice, kim: TestDevice
        let remote: SyncRemote
        let aliceProfile: URL, jayProfile: URL, bobProfile: URL
    }

    /// Alice creates the profile with jay (Admin) and bob (Editor); both clone it. Jay revokes alice
    /// (or demotes her to Viewer) and syncs, then adds kim and writes vocabulary/jays; bob syncs.
    /// Alice's copy is left as it was before.
    private func jayRemovesAlice(demoting: Bool) throws -> RevokerScene {
        let jay = try makeDevice("jay", device: "laptop")
        let bob = try makeDevice("bob", device: "phone")
        let kim = try makeDevice("kim", device: "tablet")
        let (remote, alice, aliceProfile) = try alicesProfile(with: [(jay, "admin"), (bob, "editor")])
        let jayProfile = try cloneProfile(jay, from: remote, into: "jay")
        let bobProfile = try cloneProfile(bob, from: remote, into: "bob")
        try jayRemovesAlice(demoting: demoting, jay: (jay, jayProfile), kim: kim, bob: (bob, bobProfile))
        return RevokerScene(alice: alice, jay: jay, bob: bob, kim: kim, remote: remote,
                            aliceProfile: aliceProfile, jayProfile: jayProfile, bobProfile: bobProfile)
    }

    /// After alice's push: jay's and bob's devices sync and show jay an active Admin, alice as
    /// `alice` (role, status), kim active and jay's record; the remote's main never holds jay revoked
    /// for them to see (they read it through their own sync).
    private func assertJayStands(_ scene: RevokerScene, alice: (role: String, status: String),
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        for (device, profile) in [(scene.jay, scene.jayProfile), (scene.bob, scene.bobProfile)] {
            let synced = try concord(["sync"], as: device, in: profile)
            print("\(device.member)'s sync after the attack: \(synced.summary)")
            XCTAssertFalse(synced.stderr.contains("access removed"), "\(device.member) is told: \(synced.summary)", file: file, line: line)
            guard copyIsThere(profile, of: device, after: synced, file: file, line: line) else { continue }
            try assertMember("jay", "admin", "active", as: device, in: profile, file: file, line: line)
            try assertMember("alice", alice.role, alice.status, as: device, in: profile, file: file, line: line)
            try assertMember("kim", "editor", "active", as: device, in: profile, file: file, line: line)
            XCTAssertTrue(try holdsRecord("vocabulary", "jays", in: profile), "\(device.member) keeps jay's record", file: file, line: line)
        }
        // Jay still acts as an Admin (on his copy: a path remote's main his sync refused stays refused).
        guard FileManager.default.fileExists(atPath: scene.jayProfile.path) else { return }
        try concordOK(["role", "kim", "viewer"], as: scene.jay, in: scene.jayProfile, file: file, line: line)
    }

    struct OpenLinkScene {
        let alice: TestDevice, eve: TestDevice
        let remote: SyncRemote
        let aliceProfile: URL, eveProfile: URL
        let link: String
    }

    /// Alice's profile with an open link for 4 Users; eve joins by it and keeps that copy unsynced.
    private func eveJoinsByAnOpenLink() throws -> OpenLinkScene {
        let (remote, alice, aliceProfile) = try publishAlicesProfile(over: .path)
        let link = try shareAndSync(["--open", "--role", "user", "--uses", "4", "--expires", "3h"], as: alice, in: aliceProfile)
        let eve = try makeDevice("eve", device: "phone")
        let eveProfile = try accept(link, as: eve, remote: remote, into: "eve")
        try concordOK(["sync"], as: alice, in: aliceProfile)
        return OpenLinkScene(alice: alice, eve: eve, remote: remote, aliceProfile: aliceProfile, eveProfile: eveProfile, link: link)
    }

    struct RemovedKeyScene {
        let alice: TestDevice, phone: TestDevice, tablet: TestDevice
        let aliceProfile: URL, phoneProfile: URL, tabletProfile: URL
        let removal: String
    }

    /// Bob (Editor) with a phone and a tablet; his phone removes the tablet's key and syncs, alice
    /// syncs. The tablet's copy is left as it was before the removal: the thief's.
    private func bobRemovesHisTablet() throws -> RemovedKeyScene {
        let phone = try makeDevice("bob", device: "phone")
        let tablet = try makeDevice("bob", device: "tablet")
        let (remote, alice, aliceProfile) = try alicesProfile(with: [(phone, "editor")])
        let phoneProfile = try cloneProfile(phone, from: remote, into: "bob-phone")
        let (tabletProfile, removal) = try deviceRemovedAfterItCopied(tablet, by: phone, in: phoneProfile) {
            try self.cloneProfile($0, from: remote, into: "bob-tablet")
        }
        try concordOK(["sync"], as: alice, in: aliceProfile)
        return RemovedKeyScene(alice: alice, phone: phone, tablet: tablet, aliceProfile: aliceProfile, phoneProfile: phoneProfile,
                               tabletProfile: tabletProfile, removal: removal)
    }

    /// After the thief's push: alice's and bob's phone's devices sync; bob's file holds only the
    /// phone's key (neither the tablet's nor the thief's) and the thief's record is nowhere.
    private func assertTheTabletStaysRemoved(_ scene: RemovedKeyScene, thief: TestDevice,
                                             file: StaticString = #filePath, line: UInt = #line) throws {
        for (device, profile) in [(scene.alice, scene.aliceProfile), (scene.phone, scene.phoneProfile)] {
            let synced = try concord(["sync"], as: device, in: profile)
            print("\(device.member)@\(device.device)'s sync after the attack: \(synced.summary)")
            guard copyIsThere(profile, of: device, after: synced, file: file, line: line) else { continue }
            XCTAssertEqual(try memberKeys("bob", in: profile), [keyBlob(scene.phone.publicKeyLine)],
                           "\(device.member)@\(device.device): bob's keys are the phone's only", file: file, line: line)
            XCTAssertFalse(try memberKeys("bob", in: profile).contains(keyBlob(thief.publicKeyLine)), "the thief's key is not bob's", file: file, line: line)
            try assertMember("bob", "editor", "active", as: device, in: profile, file: file, line: line)
            XCTAssertFalse(try holdsRecord("vocabulary", "thief", in: profile), "\(device.member)@\(device.device) holds the thief's record",
                           file: file, line: line)
        }
    }
}

