// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest

/// The team of the published-work scenes (issue 42, the second red-team pass's repro-R and
/// repro-U): alice (Admin), eddie (Editor) and vera (Viewer) on one remote, a path or `concord
/// serve`; `clone` gives a device its own copy through that remote.
package struct PublishedWorkTeam {
    package let alice: TestDevice
    package let eddie: TestDevice
    package let vera: TestDevice
    package let aliceProfile: URL
    package let clone: (TestDevice, String) throws -> URL

    package init(alice: TestDevice, eddie: TestDevice, vera: TestDevice, aliceProfile: URL, clone: @escaping (TestDevice, String) throws -> URL) {
        (self.alice, self.eddie, self.vera, self.aliceProfile, self.clone) = (alice, eddie, vera, aliceProfile, clone)
    }
}

extension ConcordTestCase {
    /// Eddie, an Admin, lets Viewers write vocabulary and vera writes some; both reach main. Alice,
    /// on her copy from before, demotes eddie to Viewer and syncs. His demotion takes effect where it
    /// joins main, after what he and vera published: the kinds change and vera's record stand on every
    /// device (nothing is left out), eddie is a Viewer from then on, and his next kinds change is refused.
    package func assertADemotionOnAnOlderCopyLeavesPublishedKindsAndWritesStanding(_ team: PublishedWorkTeam,
                                                                                file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try eddieAsAdminLetsViewersWriteVocabulary(on: "published-eddie", team, file: file, line: line)
        let verasCopy = try team.clone(team.vera, "published-vera")
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/veras", "--json", #"{"label":"by vera"}"#], as: team.vera, in: verasCopy, file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)

        try concordOK(["role", "eddie", "viewer"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let synced = try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertFalse(synced.contains("left out"), "what reached main first stands: \(synced)", file: file, line: line)

        let fresh = try team.clone(team.alice, "published-fresh")
        for (device, copy) in [(team.alice, team.aliceProfile), (team.alice, fresh), (team.vera, verasCopy)] {
            try concordOK(["sync"], as: device, in: copy, file: file, line: line)
            let kinds = try concordOK(["kinds", "list"], as: device, in: copy, file: file, line: line)
            XCTAssertTrue(kinds.split(separator: "\n").contains { $0.hasPrefix("vocabulary") && $0.contains("viewer") },
                          "eddie's published kinds change stands at \(copy.lastPathComponent): \(kinds)", file: file, line: line)
            XCTAssertTrue(try concordOK(["get", "vocabulary/veras"], as: device, in: copy, file: file, line: line).contains("by vera"),
                          "vera's published record stands at \(copy.lastPathComponent)", file: file, line: line)
            let members = try concordOK(["members", "list"], as: device, in: copy, file: file, line: line)
            XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("viewer") }, members, file: file, line: line)
        }
        try assertVerified(fresh, as: team.alice, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertNotEqual(try concord(["kinds", "set", "vocabulary", "--writers", "user"], as: team.eddie, in: eddiesCopy).status, 0,
                          "a Viewer changes no kind", file: file, line: line)
    }

    /// Eddie (Editor) creates vocabulary/pie and alice rewrites it; both reach main. Eddie then
    /// records his departure on a copy from before pie existed (plain git: his file marked left, as
    /// `concord leave` writes it), and vera merges that commit with `concord merge` and syncs. His
    /// departure takes effect where it joins main: pie keeps alice's published version on every
    /// device (not a tombstone in eddie's name), nothing is left out, and eddie has left.
    package func assertALeaveOnAnOlderCopyLeavesPublishedRecordsStanding(_ team: PublishedWorkTeam,
                                                                         file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "leaving-eddie")
        let verasCopy = try team.clone(team.vera, "leaving-vera")
        let beforePie = try revParse("HEAD", in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/pie", "--json", #"{"label":"pie by eddie"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["put", "vocabulary/pie", "--json", #"{"label":"pie by alice"}"#], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)

        try gitOK(["checkout", "--quiet", "-b", "old", beforePie], in: eddiesCopy, file: file, line: line)
        let leave = try eddiesDeparture(in: eddiesCopy, team)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try gitOK(["fetch", "--quiet", eddiesCopy.path, "old"], in: verasCopy, file: file, line: line)
        let merged = try concordOK(["merge", leave], as: team.vera, in: verasCopy, file: file, line: line)
        XCTAssertFalse(merged.contains("left out"), "a departure on an old copy takes nothing published away: \(merged)", file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)

        let fresh = try team.clone(team.alice, "leaving-fresh")
        for copy in [team.aliceProfile, fresh] {
            try concordOK(["sync"], as: team.alice, in: copy, file: file, line: line)
            let pie = try concordOK(["get", "vocabulary/pie"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertTrue(pie.contains("pie by alice"), "alice's published version stands at \(copy.lastPathComponent): \(pie)", file: file, line: line)
            let members = try concordOK(["members", "list"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("revoked") }, members, file: file, line: line)
        }
        try assertVerified(fresh, as: team.alice, file: file, line: line)
    }

    /// The eighth red-team pass (F5): alice, offline, demotes eddie; meanwhile eddie publishes
    /// vocabulary/puzzle, then writes vocabulary/extra he does not send. Alice merges eddie's branch
    /// as a peer's (`concord merge`, her own line first) and syncs: her merge took commits main had
    /// meanwhile as its side, so the sync makes it again, main first, then eddie's branch on top. The
    /// sync succeeds; what reached main before the demotion (puzzle) stands on every device; what
    /// did not (extra) is left out. `writingAfter`: alice also writes after her merge (the ninth
    /// pass, F2): that commit is made again on top, nothing of hers is lost.
    package func assertAPeerMergeHoldingNewerMainIsMadeAgainBySync(_ team: PublishedWorkTeam, writingAfter: Bool = false,
                                                                  file: StaticString = #filePath, line: UInt = #line) throws {
        try concordOK(["role", "eddie", "viewer"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "peer-merge-eddie")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle by eddie"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/extra", "--json", #"{"label":"never sent"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)

        try gitOK(["fetch", "--quiet", eddiesCopy.path, "main:refs/peers/eddie"], in: team.aliceProfile, file: file, line: line)
        let before = try revParse("HEAD", in: team.aliceProfile, file: file, line: line)
        try concordOK(["merge", "refs/peers/eddie"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        if writingAfter {
            try concordOK(["put", "vocabulary/after", "--json", #"{"label":"written after the merge"}"#], as: team.alice, in: team.aliceProfile,
                          file: file, line: line)
        }
        let synced = try concord(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(synced.status, 0, "an honest peer merge does not wedge the sync: \(synced.stderr)", file: file, line: line)
        XCTAssertTrue(synced.stderr.contains("was made again, the remote's main first"), synced.stderr, file: file, line: line)
        XCTAssertEqual(synced.stderr.contains("1 of this device's commits after it made again on top"), writingAfter, synced.stderr, file: file, line: line)
        XCTAssertFalse(synced.stdout.contains("puzzle"), "what reached main before the demotion is not left out: \(synced.stdout)", file: file, line: line)
        XCTAssertTrue(synced.stdout.contains("left out: ") && synced.stdout.contains("extra.json: eddie's change"), synced.stdout, file: file, line: line)
        XCTAssertTrue(try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line).contains("received 0 commits, sent 0"),
                      "and the next sync has nothing to do", file: file, line: line)
        try gitOK(["merge-base", "--is-ancestor", before, "HEAD"], in: team.aliceProfile, file: file, line: line)

        let fresh = try team.clone(team.vera, "peer-merge-fresh")
        for (device, copy) in [(team.alice, team.aliceProfile), (team.vera, fresh)] {
            XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: device, in: copy, file: file, line: line).contains("puzzle by eddie"),
                          "eddie's published write stands at \(copy.lastPathComponent)", file: file, line: line)
            XCTAssertNotEqual(try concord(["get", "vocabulary/extra"], as: device, in: copy).status, 0, file: file, line: line)
            if writingAfter {
                XCTAssertTrue(try concordOK(["get", "vocabulary/after"], as: device, in: copy, file: file, line: line).contains("written after the merge"),
                              "alice's write after her merge stands at \(copy.lastPathComponent)", file: file, line: line)
            }
            let members = try concordOK(["members", "list"], as: device, in: copy, file: file, line: line)
            XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("viewer") }, members, file: file, line: line)
        }
        try assertVerified(fresh, as: team.vera, file: file, line: line)
    }

    /// The ninth red-team pass (F1): vera merges eddie's offline edit, then, after alice demoted
    /// eddie on main, merges main's commit in with her own line first (`concord merge <id>`): a merge
    /// that took main's commits as its side. Alice, on a second copy with a write of her own not yet
    /// sent, merges vera's branch and syncs. The sync undoes her merge of vera's branch (it cannot be
    /// made main first), keeps her own write, and keeps her old line in a set-aside ref; eddie's
    /// offline edit, never on main before his demotion, is on no device.
    package func assertAPeerBranchHoldingAMergeInTheWrongOrderIsUndoneBySync(_ team: PublishedWorkTeam,
                                                                            file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "wrong-order-eddie")
        let verasCopy = try team.clone(team.vera, "wrong-order-vera")
        let second = try team.clone(team.alice, "wrong-order-alice")
        try concordOK(["put", "vocabulary/own", "--json", #"{"label":"alice's own, not yet sent"}"#], as: team.alice, in: second, file: file, line: line)
        let own = try revParse("HEAD", in: second, file: file, line: line)
        try concordOK(["put", "vocabulary/puzzle", #"--json"#, #"{"label":"puzzle by eddie, offline"}"#], as: team.eddie, in: eddiesCopy,
                      file: file, line: line)
        try gitOK(["fetch", "--quiet", eddiesCopy.path, "main:refs/peers/eddie"], in: verasCopy, file: file, line: line)
        try concordOK(["merge", "refs/peers/eddie"], as: team.vera, in: verasCopy, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)
        try gitOK(["fetch", "--quiet", team.aliceProfile.path, "main:refs/peers/main"], in: verasCopy, file: file, line: line)
        try concordOK(["merge", try revParse("refs/peers/main", in: verasCopy, file: file, line: line)], as: team.vera, in: verasCopy,
                      file: file, line: line)

        try gitOK(["fetch", "--quiet", verasCopy.path, "main:refs/peers/vera"], in: second, file: file, line: line)
        try concordOK(["merge", "refs/peers/vera"], as: team.alice, in: second, file: file, line: line)
        let synced = try concord(["sync"], as: team.alice, in: second)
        XCTAssertEqual(synced.status, 0, "an honest peer merge does not wedge the sync: \(synced.stderr)", file: file, line: line)
        XCTAssertTrue(synced.stderr.contains("was undone: that line holds merge"), synced.stderr, file: file, line: line)
        try gitOK(["merge-base", "--is-ancestor", own, "HEAD"], in: second, file: file, line: line)
        XCTAssertFalse(try gitOK(["for-each-ref", "refs/concord/set-aside/"], in: second, file: file, line: line).isEmpty,
                       "the old line is kept", file: file, line: line)

        let fresh = try team.clone(team.vera, "wrong-order-fresh")
        for (device, copy) in [(team.alice, second), (team.vera, fresh)] {
            XCTAssertTrue(try concordOK(["get", "vocabulary/own"], as: device, in: copy, file: file, line: line).contains("not yet sent"),
                          "alice's own write stands at \(copy.lastPathComponent)", file: file, line: line)
            XCTAssertFalse(try concordOK(["get", "vocabulary/puzzle"], as: device, in: copy, file: file, line: line).contains("offline"),
                           "eddie's edit never reached main before his demotion", file: file, line: line)
        }
        try assertVerified(fresh, as: team.vera, file: file, line: line)
    }

    /// The ninth red-team pass (F4): a peer's branch is checked before it is merged. Vera (Viewer)
    /// makes herself an Admin with plain git on her copy and hands alice her branch: `concord merge`
    /// refuses it, naming the commit, and alice's copy is as it was.
    package func assertAPeersBranchIsCheckedBeforeItIsMerged(_ team: PublishedWorkTeam,
                                                            file: StaticString = #filePath, line: UInt = #line) throws {
        let verasCopy = try team.clone(team.vera, "checked-vera")
        let forged = try commitWithGit(in: verasCopy, signedWith: team.vera.keyFile, message: "members/vera: admin") { clone in
            try self.editMember("vera", in: clone) { member in member["role"] = "admin" }
        }
        try gitOK(["fetch", "--quiet", verasCopy.path, "main:refs/peers/vera"], in: team.aliceProfile, file: file, line: line)
        let before = try revParse("HEAD", in: team.aliceProfile, file: file, line: line)
        let merged = try concord(["merge", "refs/peers/vera"], as: team.alice, in: team.aliceProfile)
        XCTAssertNotEqual(merged.status, 0, merged.stdout, file: file, line: line)
        XCTAssertTrue(merged.stderr.contains(String(forged.prefix(7))), merged.stderr, file: file, line: line)
        XCTAssertEqual(try revParse("HEAD", in: team.aliceProfile, file: file, line: line), before, file: file, line: line)
        let members = try concordOK(["members", "list"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("vera") && $0.contains("viewer") }, members, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
    }

    /// The fourth red-team pass (repros B, B2): eddie, an Admin alice then demoted to Viewer, writes
    /// on his copy from before the demotion and demotes himself there, so that the side's tip shows
    /// him a Viewer already; he merges that copy into main. His rights on the side are the most he
    /// held where its commits were made (an Admin's): his write is left out, on every device.
    package func assertASelfDemotionOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(_ team: PublishedWorkTeam,
                                                                                file: StaticString = #filePath, line: UInt = #line) throws {
        try aliceSetsRole(of: "eddie", to: "admin", team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "self-demoted-eddie")
        let old = try revParse("HEAD", in: eddiesCopy, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)

        try gitOK(["checkout", "--quiet", "-b", "old", old], in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"an Admin's write after the demotion"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["role", "eddie", "viewer"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try gitOK(["checkout", "--quiet", "main"], in: eddiesCopy, file: file, line: line)
        let merged = try concordOK(["merge", "old"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(merged.contains("left out: ") && merged.contains("evil.json: eddie's change"), merged, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try assertNowhere("vocabulary/evil", team, file: file, line: line)
    }

    /// The fourth red-team pass (repro C): eddie (Editor), revoked by alice, writes on his copy from
    /// before the revocation and records his departure there (plain git, as `concord leave` writes
    /// it); vera merges that branch into main and syncs. His write is left out all the same.
    package func assertALeaveOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(_ team: PublishedWorkTeam,
                                                                           file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "leaving-revoked-eddie")
        let verasCopy = try team.clone(team.vera, "leaving-revoked-vera")
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"written after the revocation"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        let leave = try eddiesDeparture(in: eddiesCopy, team)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try gitOK(["fetch", "--quiet", eddiesCopy.path, "main:refs/peers/eddie"], in: verasCopy, file: file, line: line)
        let merged = try concordOK(["merge", leave], as: team.vera, in: verasCopy, file: file, line: line)
        XCTAssertTrue(merged.contains("left out: ") && merged.contains("evil.json: eddie's change"), merged, file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try assertNowhere("vocabulary/evil", team, file: file, line: line)
    }

    /// The fifth red-team pass (HIGH 1): eddie (Editor) has a tablet; alice makes vocabulary
    /// Admin-only, and eddie's tablet removes his laptop's key. On the tablet's copy from before
    /// both, eddie writes vocabulary/evil, then records a departure signed by the removed laptop key
    /// (plain git), which falls where it joins; the tablet merges that into main. His write lands
    /// under the kinds main has: left out, on every device.
    package func assertAFallenDepartureHidesNoWriteFromTheKindsTheMergeEndsWith(_ team: PublishedWorkTeam,
                                                                               file: StaticString = #filePath, line: UInt = #line) throws {
        let (tablet, tabletsCopy) = try eddiesTablet(team, file: file, line: line)
        let old = try revParse("HEAD", in: tabletsCopy, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["kinds", "set", "vocabulary", "--writers", "admin"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["devices", "remove", try fingerprint(team.eddie.publicKeyLine)], as: tablet, in: tabletsCopy, file: file, line: line)
        try concordOK(["sync"], as: tablet, in: tabletsCopy, file: file, line: line)

        try gitOK(["checkout", "--quiet", "-b", "old", old], in: tabletsCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"under the old kinds"}"#], as: tablet, in: tabletsCopy, file: file, line: line)
        try eddiesDeparture(in: tabletsCopy, team)
        try gitOK(["checkout", "--quiet", "main"], in: tabletsCopy, file: file, line: line)
        let merged = try concordOK(["merge", "old"], as: tablet, in: tabletsCopy, file: file, line: line)
        XCTAssertTrue(merged.contains("evil.json: eddie's change") && merged.contains("lost to the kinds where it lands"), merged, file: file, line: line)
        try concordOK(["sync"], as: tablet, in: tabletsCopy, file: file, line: line)
        try assertNowhere("vocabulary/evil", team, file: file, line: line)
    }

    /// The fifth red-team pass (MED 1): eddie removes his tablet's key; a thief holding the tablet
    /// and its copy from before writes vocabulary/stolen there, then removes the tablet's key from
    /// eddie's file itself (plain git, signed by the tablet), so that the side's tip no longer shows
    /// the key; vera merges that into main. The key signs nothing that lands after its removal.
    package func assertARemovedKeyRemovingItselfOnAnOldCopyKeepsNoWrite(_ team: PublishedWorkTeam,
                                                                       file: StaticString = #filePath, line: UInt = #line) throws {
        let (tablet, tabletsCopy) = try eddiesTablet(team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "removing-eddie")
        let verasCopy = try team.clone(team.vera, "removing-vera")
        let tabletsKey = try fingerprint(tablet.publicKeyLine)
        try concordOK(["devices", "remove", tabletsKey], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)

        try concordOK(["put", "vocabulary/stolen", "--json", #"{"label":"by the removed key"}"#], as: tablet, in: tabletsCopy, file: file, line: line)
        let removedItself = try commitWithGit(in: tabletsCopy, signedWith: tablet.keyFile, message: "members/eddie: a device removed") { clone in
            try self.editMember("eddie", in: clone) { member in
                member["keys"] = (member["keys"] as? [[String: Any]] ?? []).filter { ($0["device"] as? String) != "tablet" }
            }
        }
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try gitOK(["fetch", "--quiet", tabletsCopy.path, "main:refs/peers/tablet"], in: verasCopy, file: file, line: line)
        let merged = try concordOK(["merge", removedItself], as: team.vera, in: verasCopy, file: file, line: line)
        XCTAssertTrue(merged.contains("stolen.json: eddie's change") && merged.contains("lost to the removal of the key that signed it (\(tabletsKey))"),
                      merged, file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try assertNowhere("vocabulary/stolen", team, file: file, line: line)
    }

    /// The fifth red-team pass (HIGH 2): alice demotes eddie (Editor) to Viewer. On his copy from
    /// before, eddie hands his device to alice (`concord switch alice`) and appends to the log, so
    /// that the entries name her; then merges that copy into main as a Viewer. The entries his key
    /// signed go with his change, whoever they name: on no device.
    package func assertLogEntriesWrittenActingForAnotherGoWithTheirSigner(_ team: PublishedWorkTeam,
                                                                        file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "acting-eddie")
        let old = try revParse("HEAD", in: eddiesCopy, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)

        try gitOK(["checkout", "--quiet", "-b", "old", old], in: eddiesCopy, file: file, line: line)
        try concordOK(["switch", "alice"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["append", "logs", "--json", #"{"tapped":"POISON after the demotion"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Actor,valueonly,separator=)"], in: eddiesCopy), "alice",
                       file: file, line: line)
        try gitOK(["checkout", "--quiet", "main"], in: eddiesCopy, file: file, line: line)
        let merged = try concordOK(["merge", "old"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(merged.contains("left out: logs/"), merged, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "acting-fresh")
        for copy in [team.aliceProfile, fresh] {
            let exported = try concordOK(["export"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertFalse(exported.contains("POISON"), "at \(copy.lastPathComponent): \(exported)", file: file, line: line)
        }
    }

    /// The fifth red-team pass (MED 2): eddie is made an Admin. Offline, alice writes a setting (only
    /// Admins may) and then hands over, demoting herself to Editor; meanwhile eddie publishes a
    /// record. Alice syncs: her setting was written while she held the right, and the main line took
    /// nothing from her, so it stands on every device; nothing is left out.
    package func assertAWriteMadeBeforeOnesOwnHandOverStands(_ team: PublishedWorkTeam,
                                                           file: StaticString = #filePath, line: UInt = #line) throws {
        try aliceSetsRole(of: "eddie", to: "admin", team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "handing-eddie")
        try concordOK(["put", "settings/budget", "--json", #"{"color":"set while an Admin"}"#], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["role", "alice", "editor"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["put", "vocabulary/eddies", "--json", #"{"label":"meanwhile"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        let synced = try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertFalse(synced.contains("left out"), synced, file: file, line: line)
        let fresh = try team.clone(team.eddie, "handing-fresh")
        for (device, copy) in [(team.alice, team.aliceProfile), (team.eddie, fresh)] {
            XCTAssertTrue(try concordOK(["get", "settings/budget"], as: device, in: copy, file: file, line: line).contains("set while an Admin"),
                          "at \(copy.lastPathComponent)", file: file, line: line)
        }
    }

    /// The fifth red-team pass (MED 3): eddie (Editor) writes a record; alice publishes meanwhile;
    /// eddie leaves. His record and his departure both reach the remote (the departure made on top
    /// of the remote's main), and his copy is gone.
    package func assertLeavingAfterTheRemoteMovedRecordsTheDeparture(_ team: PublishedWorkTeam,
                                                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "leaving-late-eddie")
        try concordOK(["put", "vocabulary/eddies", "--json", #"{"label":"written before leaving"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/alices", "--json", #"{"label":"meanwhile"}"#], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let left = try concordOK(["leave"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(left.contains("departure recorded on origin"), left, file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: eddiesCopy.path), file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertTrue(try concordOK(["get", "vocabulary/eddies"], as: team.alice, in: team.aliceProfile, file: file, line: line).contains("before leaving"),
                      file: file, line: line)
        let members = try concordOK(["members", "list"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("revoked") }, members, file: file, line: line)
    }

    /// The sixth red-team pass (HIGH 1): eddie is made an Admin, and alice later demotes him to
    /// Viewer. On his copy from before, eddie lets Viewers write vocabulary, writes vocabulary/sneaky,
    /// and puts the kinds back byte for byte; he syncs. His kinds changes fall where they land (he
    /// is no Admin there), so the write is judged under the main line's kinds, where a Viewer writes
    /// no vocabulary: it is left out, and is nowhere.
    package func assertLoosenedThenRestoredKindsKeepNoWrite(_ team: PublishedWorkTeam,
                                                            file: StaticString = #filePath, line: UInt = #line) throws {
        try aliceSetsRole(of: "eddie", to: "admin", team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "loosening-eddie")
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)

        let kindsFile = eddiesCopy.appendingPathComponent(".concord/kinds.json")
        let original = try Data(contentsOf: kindsFile)
        try concordOK(["kinds", "set", "vocabulary", "--writers", "viewer"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/sneaky", "--json", #"{"label":"under loosened kinds"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try commitWithGit(in: eddiesCopy, signedWith: team.eddie.keyFile, message: "kinds: put back") { _ in try original.write(to: kindsFile) }
        let synced = try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(synced.contains("sneaky.json: eddie's change"), synced, file: file, line: line)
        try assertNowhere("vocabulary/sneaky", team, file: file, line: line)
    }

    /// The sixth red-team pass (HIGH 2): eddie is made an Admin; later alice lets only Admins write
    /// vocabulary and demotes eddie to Editor. On his copy from before, eddie writes vocabulary/late
    /// and then sets exactly the main line's kinds, so that the side's tip has the kinds the merge
    /// ends with; he syncs. The write lands under the main line's kinds with eddie an Editor: left
    /// out, and nowhere.
    package func assertCopyingTheMainLinesKindsKeepsNoWriteMadeUnderOlderOnes(_ team: PublishedWorkTeam,
                                                                              file: StaticString = #filePath, line: UInt = #line) throws {
        try aliceSetsRole(of: "eddie", to: "admin", team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "copying-eddie")
        try concordOK(["kinds", "set", "vocabulary", "--writers", "admin"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "editor", team, file: file, line: line)
        let mainLines = try Data(contentsOf: team.aliceProfile.appendingPathComponent(".concord/kinds.json"))

        try assertAWriteThenTheMainLinesKindsIsLeftOut("late", in: eddiesCopy, kinds: mainLines, signedWith: team.eddie.keyFile,
                                                       cause: "lost to the revocation or demotion", team, file: file, line: line)
    }

    /// The sixth red-team pass (HIGH 2, an Admin's hand): alice lets only Admins write vocabulary.
    /// On his copy from before, eddie (Editor) writes vocabulary/before; then alice's key, there,
    /// sets exactly the main line's kinds, so that no member file differs anywhere and the side's
    /// tip has the merged kinds. Eddie syncs: his write lands under the main line's kinds, where an
    /// Editor writes no vocabulary: left out, and nowhere.
    package func assertAnAdminCopyingTheMainLinesKindsOnASideKeepsNoWriteMadeBefore(_ team: PublishedWorkTeam,
                                                                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "accomplice-eddie")
        try concordOK(["kinds", "set", "vocabulary", "--writers", "admin"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let mainLines = try Data(contentsOf: team.aliceProfile.appendingPathComponent(".concord/kinds.json"))

        try assertAWriteThenTheMainLinesKindsIsLeftOut("before", in: eddiesCopy, kinds: mainLines, signedWith: team.alice.keyFile,
                                                       cause: "lost to the kinds where it lands", team, file: file, line: line)
    }

    /// Eddie writes vocabulary/`id` on `copy`, then a commit signed by `key` sets the main line's
    /// `kinds` there, and he syncs: his write is left out (`cause`), and is nowhere.
    private func assertAWriteThenTheMainLinesKindsIsLeftOut(_ id: String, in copy: URL, kinds: Data, signedWith key: URL, cause: String,
                                                            _ team: PublishedWorkTeam, file: StaticString, line: UInt) throws {
        try concordOK(["put", "vocabulary/\(id)", "--json", #"{"label":"under the older kinds"}"#], as: team.eddie, in: copy, file: file, line: line)
        try commitWithGit(in: copy, signedWith: key, message: "kinds: as main has them") { clone in
            try kinds.write(to: clone.appendingPathComponent(".concord/kinds.json"))
        }
        let synced = try concordOK(["sync"], as: team.eddie, in: copy, file: file, line: line)
        XCTAssertTrue(synced.contains("\(id).json: eddie's change") && synced.contains(cause), synced, file: file, line: line)
        try assertNowhere("vocabulary/\(id)", team, file: file, line: line)
    }

    /// The sixth red-team pass (HIGH 3): alice alone administers the profile as her laptop last saw
    /// it; from her phone she makes eddie an Admin. Her laptop, not synced since, deletes her
    /// identity: what the remote holds decides, so she leaves (her departure recorded) and the
    /// profile stays for eddie and vera.
    package func assertDeletingAnIdentityOnAStaleCopyDestroysNoProfileAnotherAdminHolds(_ team: PublishedWorkTeam,
                                                                                        file: StaticString = #filePath, line: UInt = #line) throws {
        let phone = try makeDevice("alice", device: "phone")
        try concordOK(["devices", "add", "--name", "phone", "--key", phone.publicKeyLine, "--proof", try keyProof(of: phone, for: team.aliceProfile)],
                      as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let phonesCopy = try team.clone(phone, "stale-phone")
        let eddiesCopy = try team.clone(team.eddie, "stale-eddie")
        try concordOK(["role", "eddie", "admin"], as: phone, in: phonesCopy, file: file, line: line)
        try concordOK(["sync"], as: phone, in: phonesCopy, file: file, line: line)

        let deleted = try concordOK(["identity", "delete", "--yes"], as: team.alice, file: file, line: line)
        XCTAssertTrue(deleted.contains("left: departure recorded on origin") && !deleted.contains("destroyed"), deleted, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        let members = try concordOK(["members", "list"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("alice") && $0.contains("revoked") }, members, file: file, line: line)
        XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("admin") }, members, file: file, line: line)
        try concordOK(["put", "vocabulary/after", "--json", #"{"label":"the profile lives on"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
    }

    /// The seventh red-team pass (F1, HIGH): alice publishes a log entry. On his copy from before it,
    /// eddie writes a line with its identity (by alice, acting for her as `concord switch` does, the
    /// same id), stamped earlier that day, with other data, and syncs. The main line's entry is the
    /// one kept: alice's entry reads as she wrote it on every device.
    package func assertALogEntryWrittenAgainOnAnOldCopyRewritesNothing(_ team: PublishedWorkTeam,
                                                                       file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "rewriting-eddie")
        let id = try concordOK(["append", "logs", "--json", #"{"text":"gave 5mg at 9:00"}"#], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let day = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: team.aliceProfile.appendingPathComponent("logs").path).first,
                                file: file, line: line)
        let forged = #"{"at":"\#(day.prefix(10))T00:00:01.000Z-0000","by":"alice","data":{"text":"gave 50mg at 9:00"},"device":"laptop","id":"\#(id)"}"#
        try commitWithGit(in: eddiesCopy, signedWith: team.eddie.keyFile, message: "logs: appended\n\nConcord-Actor: alice\nConcord-Device: laptop") { clone in
            try FileManager.default.createDirectory(at: clone.appendingPathComponent("logs"), withIntermediateDirectories: true)
            try Data((forged + "\n").utf8).write(to: clone.appendingPathComponent("logs/\(day)"))
        }
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "rewriting-fresh")
        for copy in [team.aliceProfile, fresh] {
            let entry = try concordOK(["get", "logs/\(id)"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertTrue(entry.contains("gave 5mg") && !entry.contains("50mg"), "at \(copy.lastPathComponent): \(entry)", file: file, line: line)
        }
        try assertVerified(fresh, as: team.alice, file: file, line: line)
    }

    /// The seventh red-team pass (F2): eddie, an Admin, adds a kind and writes a record of it
    /// offline, while alice demotes him to Editor. His sync leaves both out — the kind is no kind of
    /// the merge, so the record goes with it — and publishes a valid merge; the next sync has
    /// nothing to do, and a fresh clone verifies.
    package func assertAKindAddedOfflineByADemotedAdminLeavesAValidMerge(_ team: PublishedWorkTeam,
                                                                          file: StaticString = #filePath, line: UInt = #line) throws {
        try aliceSetsRole(of: "eddie", to: "admin", team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "new-kind-eddie")
        try concordOK(["kinds", "add", "notes", "--policy", "lww", "--writers", "viewer"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "notes/n1", "--json", #"{"text":"offline"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "editor", team, file: file, line: line)

        let synced = try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(synced.contains("left out: .concord/kinds.json") && synced.contains("n1.json: eddie's change"), synced, file: file, line: line)
        XCTAssertTrue(try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line).contains("sent 0"), file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "new-kind-fresh")
        XCTAssertFalse(try concordOK(["kinds", "list"], as: team.alice, in: fresh, file: file, line: line).contains("notes"), file: file, line: line)
        try assertVerified(fresh, as: team.alice, file: file, line: line)
    }

    /// The seventh red-team pass (F3): eddie, an Admin, lets Viewers write vocabulary on his copy;
    /// alice, on a copy of hers from before his demotion, merges that and adds a kind, while on her
    /// main copy she demotes eddie. Her sync of that copy leaves eddie's kinds change out, so the
    /// kinds are the main line's and `.gitattributes` with them: a valid merge, published.
    package func assertAFallenKindsChangeTakesGitattributesWithIt(_ team: PublishedWorkTeam,
                                                                  file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try eddieAsAdminLetsViewersWriteVocabulary(on: "attributes-eddie", team, file: file, line: line)
        let alicesOther = try team.clone(team.alice, "attributes-alice")
        let eddies = try revParse("HEAD", in: eddiesCopy, file: file, line: line)
        try gitOK(["fetch", "--quiet", eddiesCopy.path, "main:refs/peers/eddie"], in: alicesOther, file: file, line: line)
        try concordOK(["merge", eddies], as: team.alice, in: alicesOther, file: file, line: line)
        try concordOK(["kinds", "add", "notes", "--policy", "lww", "--writers", "editor"], as: team.alice, in: alicesOther, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "editor", team, file: file, line: line)

        let synced = try concordOK(["sync"], as: team.alice, in: alicesOther, file: file, line: line)
        XCTAssertTrue(synced.contains("left out: .concord/kinds.json"), synced, file: file, line: line)
        let attributes = try String(contentsOf: alicesOther.appendingPathComponent(".gitattributes"), encoding: .utf8)
        XCTAssertFalse(attributes.contains("notes"), attributes, file: file, line: line)
        let fresh = try team.clone(team.alice, "attributes-fresh")
        try assertVerified(fresh, as: team.alice, file: file, line: line)
        XCTAssertTrue(try concordOK(["kinds", "list"], as: team.alice, in: fresh, file: file, line: line)
            .split(separator: "\n").contains { $0.hasPrefix("vocabulary") && !$0.contains("viewer") }, file: file, line: line)
    }

    /// The seventh red-team pass (F5): eddie, demoted to Viewer, writes vocabulary/apple on his copy
    /// from before, stamped in 2099, and syncs: left out, its tombstone at the earliest stamp there
    /// is. Alice, offline meanwhile, made vocabulary/apple of her own; her sync keeps it, on every
    /// device, and her next write of it is stamped now, not after 2099.
    package func assertALeftOutWriteStampedInTheFutureOutranksNoOne(_ team: PublishedWorkTeam,
                                                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "future-eddie")
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)
        try concordOK(["put", "vocabulary/apple", "--json", #"{"label":"alice's apple"}"#], as: team.alice, in: team.aliceProfile, file: file, line: line)

        try concordOK(["put", "vocabulary/apple", "--json", #"{"label":"from 2099"}"#], as: team.eddie, in: eddiesCopy,
                      clock: "2099-01-01T00:00:00.000Z", file: file, line: line)
        let synced = try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(synced.contains("apple.json: eddie's change"), synced, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "future-fresh")
        for copy in [team.aliceProfile, fresh] {
            let apple = try concordOK(["get", "vocabulary/apple"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertTrue(apple.contains("alice's apple") && !apple.contains("2099"), "at \(copy.lastPathComponent): \(apple)", file: file, line: line)
        }
    }

    /// The eighth red-team pass (F1, HIGH): on another copy of hers, offline, alice makes
    /// vocabulary/cw and relabels vocabulary/puzzle; eddie merges that copy's line as a peer's, and
    /// while alice (on her main copy) demotes him to Viewer, edits both on top of it and syncs. His
    /// edits are left out, and only his: both records keep what alice wrote, on every device.
    package func assertAnEditLeftOutOnTopOfAnHonestSideKeepsTheHonestWrite(_ team: PublishedWorkTeam,
                                                                          file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "on-top-eddie")
        let alicesOther = try team.clone(team.alice, "on-top-alice")
        try concordOK(["put", "vocabulary/cw", "--json", #"{"label":"alice's word"}"#], as: team.alice, in: alicesOther, file: file, line: line)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"alice's relabel"}"#], as: team.alice, in: alicesOther, file: file, line: line)
        let alices = try revParse("HEAD", in: alicesOther, file: file, line: line)
        try gitOK(["fetch", "--quiet", alicesOther.path, "main:refs/peers/alice"], in: eddiesCopy, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)

        try concordOK(["merge", alices], as: team.eddie, in: eddiesCopy, file: file, line: line)
        for record in ["vocabulary/cw", "vocabulary/puzzle"] {
            try concordOK(["put", record, "--json", #"{"label":"eddie's"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        }
        let synced = try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(synced.contains("cw.json: eddie's change") && synced.contains("puzzle.json: eddie's change"), synced, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: alicesOther, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "on-top-fresh")
        for copy in [team.aliceProfile, alicesOther, fresh] {
            for (record, label) in [("vocabulary/cw", "alice's word"), ("vocabulary/puzzle", "alice's relabel")] {
                let read = try concordOK(["get", record], as: team.alice, in: copy, file: file, line: line)
                XCTAssertTrue(read.contains(label) && !read.contains("eddie's"), "\(record) at \(copy.lastPathComponent): \(read)", file: file, line: line)
            }
        }
        try assertVerified(fresh, as: team.alice, file: file, line: line)
    }

    /// The eighth red-team pass (F2, HIGH): on another copy of hers, offline, alice appends a log
    /// entry; eddie, demoted to Viewer meanwhile, commits the very same line acting for her on his
    /// copy from before, merges her copy's line as a peer's and syncs. His commit is left out, but the
    /// entry alice's own commit added stays, on every device.
    package func assertALeftOutCopyOfAnHonestEntryDropsNothing(_ team: PublishedWorkTeam,
                                                               file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "copied-entry-eddie")
        let alicesOther = try team.clone(team.alice, "copied-entry-alice")
        let id = try concordOK(["append", "logs", "--json", #"{"text":"fell at 14:00"}"#], as: team.alice, in: alicesOther, file: file, line: line)
        let alices = try revParse("HEAD", in: alicesOther, file: file, line: line)
        let day = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: alicesOther.appendingPathComponent("logs").path).first,
                                file: file, line: line)
        let entry = try String(contentsOf: alicesOther.appendingPathComponent("logs/\(day)"), encoding: .utf8)
        try gitOK(["fetch", "--quiet", alicesOther.path, "main:refs/peers/alice"], in: eddiesCopy, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)

        try commitWithGit(in: eddiesCopy, signedWith: team.eddie.keyFile, message: "logs: appended\n\nConcord-Actor: alice\nConcord-Device: laptop") { clone in
            try FileManager.default.createDirectory(at: clone.appendingPathComponent("logs"), withIntermediateDirectories: true)
            try Data(entry.utf8).write(to: clone.appendingPathComponent("logs/\(day)"))
        }
        try concordOK(["merge", alices], as: team.eddie, in: eddiesCopy, file: file, line: line)
        let synced = try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(synced.contains("\(day): eddie's change"), synced, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "copied-entry-fresh")
        for copy in [team.aliceProfile, fresh] {
            XCTAssertTrue(try concordOK(["get", "logs/\(id)"], as: team.alice, in: copy, file: file, line: line).contains("fell at 14:00"),
                          "at \(copy.lastPathComponent)", file: file, line: line)
        }
    }

    /// The eighth red-team pass (F3, HIGH): in a delete-wins kind, eddie, demoted to Viewer, writes
    /// tasks/milk on his copy from before and syncs: left out, a placeholder. Alice, offline
    /// meanwhile, made tasks/milk of her own; her sync keeps it (a placeholder deletes nothing,
    /// whatever the policy), on every device, and reports no edit of hers lost.
    package func assertALeftOutWriteInADeleteWinsKindDeletesNothing(_ team: PublishedWorkTeam,
                                                                    file: StaticString = #filePath, line: UInt = #line) throws {
        try concordOK(["kinds", "add", "tasks", "--policy", "delete-wins", "--writers", "editor"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "delete-wins-eddie")
        try aliceSetsRole(of: "eddie", to: "viewer", team, file: file, line: line)
        try concordOK(["put", "tasks/milk", "--json", #"{"title":"alice's task"}"#], as: team.alice, in: team.aliceProfile, file: file, line: line)

        try concordOK(["put", "tasks/milk", "--json", #"{"title":"eddie's"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        let synced = try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(synced.contains("milk.json: eddie's change"), synced, file: file, line: line)
        let alices = try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertFalse(alices.contains("lost"), alices, file: file, line: line)
        let fresh = try team.clone(team.alice, "delete-wins-fresh")
        for copy in [team.aliceProfile, fresh] {
            let milk = try concordOK(["get", "tasks/milk"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertTrue(milk.contains("alice's task"), "at \(copy.lastPathComponent): \(milk)", file: file, line: line)
        }
    }

    /// The eighth red-team pass (F4): eddie, an Admin, adds a kind; alice, on another copy of hers,
    /// merges his line and writes a record of that kind and one of vocabulary, while on her main copy
    /// she demotes eddie. Her other copy's sync leaves the kind out and her record of it with it (no
    /// file of the kinds the merge ends with), publishes a valid merge with her vocabulary record,
    /// and the next sync has nothing to do.
    package func assertARecordOfAFallenKindGoesWithItWhoeverWroteIt(_ team: PublishedWorkTeam,
                                                                    file: StaticString = #filePath, line: UInt = #line) throws {
        try aliceSetsRole(of: "eddie", to: "admin", team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "fallen-kind-eddie")
        let alicesOther = try team.clone(team.alice, "fallen-kind-alice")
        try concordOK(["kinds", "add", "notes", "--policy", "lww", "--writers", "editor"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        let eddies = try revParse("HEAD", in: eddiesCopy, file: file, line: line)
        try gitOK(["fetch", "--quiet", eddiesCopy.path, "main:refs/peers/eddie"], in: alicesOther, file: file, line: line)
        try concordOK(["merge", eddies], as: team.alice, in: alicesOther, file: file, line: line)
        try concordOK(["put", "notes/n1", "--json", #"{"text":"of the new kind"}"#], as: team.alice, in: alicesOther, file: file, line: line)
        try concordOK(["put", "vocabulary/mine", "--json", #"{"label":"alice's"}"#], as: team.alice, in: alicesOther, file: file, line: line)
        try aliceSetsRole(of: "eddie", to: "editor", team, file: file, line: line)

        let synced = try concordOK(["sync"], as: team.alice, in: alicesOther, file: file, line: line)
        XCTAssertTrue(synced.contains("left out: .concord/kinds.json") && synced.contains("n1.json: alice's change"), synced, file: file, line: line)
        XCTAssertTrue(try concordOK(["sync"], as: team.alice, in: alicesOther, file: file, line: line).contains("sent 0"), file: file, line: line)
        let fresh = try team.clone(team.alice, "fallen-kind-fresh")
        XCTAssertTrue(try concordOK(["get", "vocabulary/mine"], as: team.alice, in: fresh, file: file, line: line).contains("alice's"), file: file, line: line)
        try assertVerified(fresh, as: team.alice, file: file, line: line)
    }

    /// Alice gives `member` the role `role` on her copy and syncs.
    private func aliceSetsRole(of member: String, to role: String, _ team: PublishedWorkTeam, file: StaticString, line: UInt) throws {
        try concordOK(["role", member, role], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
    }

    /// Alice makes eddie an Admin and syncs; eddie, on a copy of his own in `directory`, lets Viewers
    /// write vocabulary (not yet synced). Returns his copy.
    private func eddieAsAdminLetsViewersWriteVocabulary(on directory: String, _ team: PublishedWorkTeam,
                                                        file: StaticString, line: UInt) throws -> URL {
        try aliceSetsRole(of: "eddie", to: "admin", team, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, directory)
        try concordOK(["kinds", "set", "vocabulary", "--writers", "viewer"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        return eddiesCopy
    }

    /// `concord verify` passes on `copy`, run as `device`.
    private func assertVerified(_ copy: URL, as device: TestDevice, file: StaticString, line: UInt) throws {
        XCTAssertTrue(try concordOK(["verify"], as: device, in: copy, file: file, line: line).contains("verified"), file: file, line: line)
    }

    /// Eddie's departure committed on `copy` with plain git (his file marked left, as `concord leave`
    /// writes it), signed with his key; returns the commit.
    @discardableResult
    private func eddiesDeparture(in copy: URL, _ team: PublishedWorkTeam) throws -> String {
        try commitWithGit(in: copy, signedWith: team.eddie.keyFile, message: "members/eddie: left") { clone in
            try self.editMember("eddie", in: clone) { member in
                member["status"] = "revoked"
                member["revokedBy"] = "eddie"
                member["revokedAt"] = "2026-01-03T00:00:00.000Z"
                member["keys"] = [[String: Any]]()
            }
        }
    }

    /// Eddie adds a tablet (its proof made on his copy) and syncs; the tablet's own copy.
    private func eddiesTablet(_ team: PublishedWorkTeam, file: StaticString, line: UInt) throws -> (TestDevice, URL) {
        let eddiesCopy = try team.clone(team.eddie, "tablet-eddie-\(UUID().uuidString.prefix(4))")
        let tablet = try makeDevice("eddie", device: "tablet")
        try concordOK(["devices", "add", "--name", "tablet", "--key", tablet.publicKeyLine, "--proof", try keyProof(of: tablet, for: eddiesCopy)],
                      as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        return (tablet, try team.clone(tablet, "tablet-\(UUID().uuidString.prefix(4))"))
    }

    /// The `SHA256:…` fingerprint of the public key in `keyLine`, as ssh-keygen prints it.
    package func fingerprint(_ keyLine: String) throws -> String {
        let words = keyLine.split(separator: " ")
        let keyFile = sandbox.appendingPathComponent("fp-\(UUID().uuidString.prefix(6)).pub")
        try Data("\(words[0]) \(words[1])\n".utf8).write(to: keyFile)
        let printed = try ProcessRunner.run(GitSigning.sshKeygenPath, ["-l", "-f", keyFile.path], environment: environment())
        return try XCTUnwrap(printed.stdout.split(separator: " ").dropFirst().first.map(String.init))
    }

    /// Record `reference` is on neither alice's copy (after a sync) nor a fresh clone.
    private func assertNowhere(_ reference: String, _ team: PublishedWorkTeam, file: StaticString, line: UInt) throws {
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "nowhere-\(UUID().uuidString.prefix(4))")
        for copy in [team.aliceProfile, fresh] {
            XCTAssertNotEqual(try concord(["get", reference], as: team.alice, in: copy).status, 0, "\(reference) at \(copy.lastPathComponent)",
                              file: file, line: line)
        }
        try assertVerified(fresh, as: team.alice, file: file, line: line)
    }
}
#endif
