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
}
