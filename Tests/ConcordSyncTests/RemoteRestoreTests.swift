import ConcordTestSupport
import Foundation
import XCTest

/// A path remote takes whatever is pushed to it: a member who pushes an unsigned commit with plain
/// git stops every device's sync (exit 5). `concord remote restore` is the Admin's way back
/// (docs/sync.md, "A remote someone damaged").
final class RemoteRestoreTests: ConcordTestCase {
    /// Uma syncs a valid edit; Eddie then pushes an unsigned commit on top with plain git. Alice's and
    /// Uma's syncs exit 5; Eddie may not restore (the line names Alice); Alice restores: the damaged
    /// tip is kept on the remote, Uma's valid edit (which Alice had not fetched) is merged in, and
    /// every device syncs again.
    func testAnAdminRestoresARemoteAMemberDamagedWithPlainGit() throws {
        let team = try makeAccessTeam()
        let umasCopy = try cloneProfile(team.uma, from: team.remote, into: "uma")
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        let entry = try concordOK(["append", "logs", "--json", #"{"text":"before the damage"}"#], as: team.uma, in: umasCopy)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try concordOK(["sync"], as: team.uma, in: umasCopy)
        let damaged = try pushWithGit(team, signedWith: nil) { clone in
            try replace(#""label": "puzzle""#, with: #""label": "damaged""#, in: try recordFile("vocabulary", "puzzle", in: clone))
        }
        for (device, copy) in [(team.alice, team.aliceProfile), (team.uma, umasCopy)] {
            let refused = try concordWithDeadline(["sync"], as: device, in: copy)
            XCTAssertEqual(refused.status, 5, refused.summary)
            XCTAssertTrue(refused.stderr.contains(String(damaged.prefix(7))), refused.stderr)
        }

        let notAdmin = try concordWithDeadline(["remote", "restore", "origin"], as: team.eddie, in: eddiesCopy)
        assertOneLineRefusal(notAdmin, status: 1, mentions: ["eddie is editor", "restoring origin's main (ask an Admin: alice)"])
        XCTAssertEqual(try remoteMain(team.remote), damaged, "nothing changed on the remote")

        // An Admin whose own copy holds a commit the rule refuses restores nothing with it.
        let own = try commitWithGit(in: team.aliceProfile, signedWith: nil) { profile in
            try replace(#""color": "blue""#, with: #""color": "red""#, in: try recordFile("settings", "theme", in: profile))
        }
        assertOneLineRefusal(try concordWithDeadline(["remote", "restore"], as: team.alice, in: team.aliceProfile), status: 5,
                             mentions: ["this device's commit \(own.prefix(7)) would be refused", "concord doctor --fix"])
        XCTAssertEqual(try remoteMain(team.remote), damaged, "nothing changed on the remote")
        try concordOK(["doctor", "--fix"], as: team.alice, in: team.aliceProfile)

        let restored = try concordWithDeadline(["remote", "restore", "origin", "--json"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(restored.status, 0, restored.summary)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(restored.stdout.utf8)) as? [String: Any], restored.stdout)
        XCTAssertEqual(report["restored"] as? Bool, true)
        XCTAssertEqual(report["damagedTip"] as? String, String(damaged.prefix(7)))
        XCTAssertNotNil(report["merged"] as? String, "Uma's valid commit is merged in: \(restored.stdout)")
        let kept = try XCTUnwrap(report["keptAs"] as? String)
        XCTAssertTrue(kept.hasPrefix("refs/concord/damaged/"), kept)
        XCTAssertEqual(try gitOK(["rev-parse", kept], in: team.remote.bare), damaged, "the damaged tip is kept on the remote")
        XCTAssertEqual(try remoteMain(team.remote), try revParse("HEAD", in: team.aliceProfile))
        XCTAssertTrue(try concordOK(["get", "logs/\(entry)"], as: team.alice, in: team.aliceProfile).contains("before the damage"))

        for (device, copy) in [(team.alice, team.aliceProfile), (team.uma, umasCopy), (team.eddie, eddiesCopy)] {
            try concordOK(["sync"], as: device, in: copy)
            XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: device, in: copy).contains(#""label": "puzzle""#))
        }
        XCTAssertTrue(try concordOK(["remote", "restore"], as: team.alice, in: team.aliceProfile).contains("nothing to restore"))
    }

    /// Anyone who can write the folder moves the remote's main back to before Alice's revocation of
    /// Eddie (a red-team finding, issue 42). Eddie, who never fetched it, keeps writing, and Uma builds
    /// on the rolled-back line. Alice's sync refuses the main that dropped her revocation (exit 5),
    /// and `concord remote restore` used to say "nothing to restore" (every commit of it passes the
    /// rule on its own line). Now it restores: the rolled-back line is merged in as a side of Alice's,
    /// so Eddie's writes after his revocation fall and Uma's stand, and the damaged tip is kept. Uma's
    /// device, which took the rolled-back line, refuses the restored main (the limit of a path remote,
    /// docs/security.md); a fresh clone gets Alice's line with Uma's record.
    func testAnAdminRestoresAMainRolledBackPastARevocation() throws {
        let (team, umasCopy, entry) = try rollBackPastEddiesRevocation()
        let damaged = try XCTUnwrap(try remoteMain(team.remote))
        let alicesLine = try revParse("HEAD", in: team.aliceProfile)
        assertOneLineRefusal(try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile), status: 5,
                             mentions: ["was rewritten", "concord remote restore origin"])

        let restored = try concordWithDeadline(["remote", "restore", "origin", "--json"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(restored.status, 0, restored.summary)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(restored.stdout.utf8)) as? [String: Any], restored.stdout)
        XCTAssertEqual(report["damagedTip"] as? String, String(damaged.prefix(7)))
        XCTAssertEqual(report["merged"] as? String, String(damaged.prefix(7)), "the rolled-back line is merged in as a side")
        XCTAssertTrue((report["refusal"] as? String)?.contains("its first-parent line does not hold") == true, restored.stdout)
        XCTAssertEqual(try gitOK(["rev-parse", try XCTUnwrap(report["keptAs"] as? String)], in: team.remote.bare), damaged)
        let main = try revParse("HEAD", in: team.aliceProfile)
        XCTAssertEqual(try remoteMain(team.remote), main)
        XCTAssertEqual(try gitOK(["rev-parse", "\(main)^1", "\(main)^2"], in: team.aliceProfile), "\(alicesLine)\n\(damaged)",
                       "Alice's line first, the rolled-back line as a side")
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(try concordOK(["remote", "restore"], as: team.alice, in: team.aliceProfile).contains("nothing to restore"))

        try assertEddiesWriteFellAndUmasEntryStands(team, entry: entry)
        assertOneLineRefusal(try concordWithDeadline(["sync"], as: team.uma, in: umasCopy), status: 5,
                             mentions: ["first-parent line does not hold", "concord remote restore origin"])
    }

    /// The main is rolled back past Alice's revocation of Eddie, Uma builds on it, and then someone
    /// pushes an unsigned commit on top. The newest accepted commit (Uma's) goes in as a side of
    /// Alice's line, not first: otherwise the restored main's first-parent line would drop Alice's
    /// revocation, and Eddie's write after it would stand (found on review, issue 42).
    func testARolledBackMainWithARefusedCommitOnTopGoesInAsASide() throws {
        let (team, _, entry) = try rollBackPastEddiesRevocation()
        let umasMain = try XCTUnwrap(try remoteMain(team.remote))
        let damaged = try pushWithGit(team, signedWith: nil) { clone in
            try replace(#""label": "puzzle""#, with: #""label": "damaged""#, in: try recordFile("vocabulary", "puzzle", in: clone))
        }
        let alicesLine = try revParse("HEAD", in: team.aliceProfile)

        let restored = try concordWithDeadline(["remote", "restore", "origin", "--json"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(restored.status, 0, restored.summary)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(restored.stdout.utf8)) as? [String: Any], restored.stdout)
        XCTAssertEqual(report["damagedTip"] as? String, String(damaged.prefix(7)))
        XCTAssertEqual(report["merged"] as? String, String(umasMain.prefix(7)), "the newest accepted commit is merged in")
        let main = try revParse("HEAD", in: team.aliceProfile)
        XCTAssertEqual(try remoteMain(team.remote), main)
        XCTAssertEqual(try gitOK(["rev-parse", "\(main)^1", "\(main)^2"], in: team.aliceProfile), "\(alicesLine)\n\(umasMain)",
                       "Alice's line first, the rolled-back line as a side")

        try assertEddiesWriteFellAndUmasEntryStands(team, entry: entry) { device, copy in
            XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: device, in: copy).contains(#""label": "puzzle""#), "the unsigned edit is not in")
        }
    }

    /// An Admin's own rewrite is not restored (the second red-team pass's repro-P, issue 42): Eddie's
    /// record reaches main and Alice fetches it; then, on her copy moved back to before it, she revokes
    /// Eddie and pushes that line over main with plain git. Her `remote restore` used to publish it
    /// (every commit of it passes the rule), dropping Eddie's record for everyone; now it refuses with
    /// what to do, changing nothing. Done that way — main back on the line she fetched, her revocation
    /// merged in — the restore keeps both: Eddie's record stands and he is revoked, on a fresh clone too.
    func testRestoreRefusesToPublishThisDevicesOwnRewrite() throws {
        let team = try makeAccessTeam()
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        let before = try XCTUnwrap(try remoteMain(team.remote))
        try concordOK(["put", "vocabulary/eddies", "--json", #"{"label":"by eddie"}"#], as: team.eddie, in: eddiesCopy)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let fetched = try revParse("refs/remotes/origin/main", in: team.aliceProfile)
        try gitOK(["reset", "--quiet", "--hard", before], in: team.aliceProfile)
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile)
        let revocation = try revParse("HEAD", in: team.aliceProfile)
        // Over main with plain git (the folder refuses a non-fast-forward push; its main is moved directly).
        try gitOK(["push", "--quiet", "origin", "HEAD:refs/heads/rewrite"], in: team.aliceProfile)
        try gitOK(["update-ref", "refs/heads/main", revocation], in: team.remote.bare)
        try gitOK(["update-ref", "-d", "refs/heads/rewrite"], in: team.remote.bare)

        assertOneLineRefusal(try concordWithDeadline(["remote", "restore", "origin"], as: team.alice, in: team.aliceProfile),
                             mentions: ["does not hold \(fetched.prefix(7))", "would publish a rewrite", "git reset --keep \(fetched.prefix(7))"])
        XCTAssertEqual(try remoteMain(team.remote), revocation, "nothing changed on the remote")
        XCTAssertEqual(try gitOK(["for-each-ref", "refs/concord/damaged/"], in: team.remote.bare), "", "nothing kept as damaged")

        try gitOK(["reset", "--quiet", "--keep", fetched], in: team.aliceProfile)
        try concordOK(["merge", revocation], as: team.alice, in: team.aliceProfile)
        try concordOK(["remote", "restore", "origin"], as: team.alice, in: team.aliceProfile)
        let fresh = try cloneProfile(team.vera, from: team.remote, into: "vera")
        XCTAssertTrue(try concordOK(["get", "vocabulary/eddies"], as: team.vera, in: fresh).contains("by eddie"), "Eddie's published record stands")
        let members = try concordOK(["members", "list"], as: team.vera, in: fresh)
        XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("revoked") }, members)
    }

    /// Alice revokes Eddie and syncs; the remote's main is then moved back to before it with plain
    /// git; Eddie writes on that line (he never fetched his revocation) and Uma appends to it. Returns
    /// the team, Uma's copy and her entry's id.
    private func rollBackPastEddiesRevocation() throws -> (team: AccessTeam, umasCopy: URL, entry: String) {
        let team = try makeAccessTeam()
        let umasCopy = try cloneProfile(team.uma, from: team.remote, into: "uma")
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        let beforeRevocation = try XCTUnwrap(try remoteMain(team.remote))
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try gitOK(["update-ref", "refs/heads/main", beforeRevocation], in: team.remote.bare)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"evil"}"#], as: team.eddie, in: eddiesCopy)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        let entry = try concordOK(["append", "logs", "--json", #"{"text":"on the rolled-back line"}"#], as: team.uma, in: umasCopy)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try concordOK(["sync"], as: team.uma, in: umasCopy)
        return (team, umasCopy, entry)
    }

    /// On Alice's copy and on a fresh clone after a restore: Eddie is revoked, his write after it fell,
    /// Uma's entry stands; then `more` on each.
    private func assertEddiesWriteFellAndUmasEntryStands(_ team: AccessTeam, entry: String,
                                                         more: (TestDevice, URL) throws -> Void = { _, _ in }) throws {
        let fresh = try cloneProfile(team.vera, from: team.remote, into: "vera")
        for (device, copy) in [(team.alice, team.aliceProfile), (team.vera, fresh)] {
            let members = try concordOK(["members", "list"], as: device, in: copy)
            XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("revoked") }, members)
            XCTAssertFalse(try concordOK(["ls"], as: device, in: copy).contains("vocabulary/evil"), "Eddie's write after his revocation fell")
            XCTAssertTrue(try concordOK(["get", "logs/\(entry)"], as: device, in: copy).contains("on the rolled-back line"), "Uma's entry stands")
            try more(device, copy)
        }
    }
}
