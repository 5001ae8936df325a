import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Issue 42, the second red-team pass's HIGH 2 and 3 (repros A, M, A2, L): a fork from a commit of
/// an older data format is judged, where it joins the main line, by the format there. A member on a
/// copy from before format 5 (no key proofs) lists a key in their own file without its holder's
/// proof, another member's key or one nobody holds, and merges that fork in as a side: the decision
/// does not count, on every device, and the key's owner keeps their key and their rights. A member
/// on a copy from before format 7 (no stamp rule) writes in another's name: the merge that brings
/// it in is refused.
final class OldFormatForkTests: ConcordTestCase {
    /// Mallory (Viewer), on her format 4 copy, lists zed's public key (zed: an Admin added after the
    /// upgrade; she holds no private key of his) as her device and merges it into main with `concord
    /// merge`. Her decision does not count (a key belongs to one member), so zed's commits stay his:
    /// his revocation of mallory stands.
    func testAFormat4ForkCannotListAnAdminsKeyAddedAfterTheUpgrade() throws {
        let scene = try upgradedAfterMalloryCopied()
        let zed = try makeDevice("zed", device: "desk")
        try concordOK(["members", "add", "zed", "--role", "admin", "--key", zed.publicKeyLine, "--device", "desk"], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let zedsCopy = try cloneProfile(zed, from: scene.remote, into: "zed")
        try concordOK(["sync"], as: scene.member, in: scene.membersCopy)

        let fork = try forkFromTheOldCopy(scene) { try self.addKey(zed.publicKeyLine, device: "desk2", proof: nil, to: "mallory", in: $0) }
        let merged = try concordOK(["merge", fork], as: scene.member, in: scene.membersCopy)
        XCTAssertTrue(merged.contains("does not count") && merged.contains("zed holds the key it gives mallory"), merged)
        try concordOK(["sync"], as: scene.member, in: scene.membersCopy)

        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        XCTAssertFalse(try memberFileText("mallory", in: scene.aliceProfile).contains(zed.publicKeyLine.split(separator: " ")[1]),
                       "zed's key stays zed's alone")
        try concordOK(["sync"], as: zed, in: zedsCopy)
        try concordOK(["revoke", "mallory"], as: zed, in: zedsCopy)
        try concordOK(["sync"], as: zed, in: zedsCopy)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let members = try concordOK(["members", "list"], as: scene.alice, in: scene.aliceProfile)
        XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("mallory") && $0.contains("revoked") }, members)
        XCTAssertTrue(try concordOK(["verify"], as: scene.alice, in: scene.aliceProfile).contains("verified"))
    }

    /// The same fork listing a key of mallory's own that nobody holds, with no proof (format 4 did
    /// not ask for one): where it joins the main line, at format 5 and after, it needs its proof, so
    /// it does not count and the key opens nothing.
    func testAFormat4ForksUnprovenKeyDoesNotCountWhereItJoinsALaterFormat() throws {
        let scene = try upgradedAfterMalloryCopied()
        let spareFile = sandbox.appendingPathComponent("mallory_spare")
        let spare = try GitSigning.makeKey(at: spareFile, comment: "mallory@spare", environment: environment())
        let fork = try forkFromTheOldCopy(scene) { try self.addKey(spare, device: "spare", proof: nil, to: "mallory", in: $0) }
        let merged = try concordOK(["merge", fork], as: scene.member, in: scene.membersCopy)
        XCTAssertTrue(merged.contains("does not count") && merged.contains("requires a key's proof of possession"), merged)
        try concordOK(["sync"], as: scene.member, in: scene.membersCopy)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        XCTAssertFalse(try memberFileText("mallory", in: scene.aliceProfile).contains(spare.split(separator: " ")[1]), "the unproven key is not hers")

        // A commit signed by that key is no member's.
        try gitOK(["fetch", "--quiet", "origin"], in: scene.membersCopy)
        try gitOK(["checkout", "--quiet", "-B", "spare", "origin/main"], in: scene.membersCopy)
        try commitWithGit(in: scene.membersCopy, signedWith: spareFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "by the spare key""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: scene.membersCopy)
        let refused = try concord(["sync"], as: scene.alice, in: scene.aliceProfile)
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: scene.alice, in: scene.aliceProfile).contains(#""label": "puzzle""#))
    }

    /// HIGH 2 (repro A): eddie (Editor), on his format 6 copy (no stamp rule), rewrites alice's
    /// record keeping her name on it, merges that fork in with `concord merge` after the upgrade to
    /// format 7 and pushes it with plain git. Where it joins main the format is 7: his own sync
    /// refuses to send it, and alice's refuses the pushed main, naming the commit; her record is hers.
    func testAFormat6ForkCannotWriteInAnothersNameWhereItJoinsFormat7() throws {
        let (alice, eddie, profile, eddiesCopy, old) = try format6UpgradedAfterEddieCopied()
        let fork = try commitOnABranch(from: old, in: eddiesCopy, signedWith: eddie.keyFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "poison, says alice""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try concordOK(["merge", fork], as: eddie, in: eddiesCopy)
        assertOneLineRefusal(try concord(["sync"], as: eddie, in: eddiesCopy), status: 5,
                             mentions: ["made on a format 6 copy", "in alice's name, but eddie signed it", "the format where it joins the main line (7"])
        try pushAnyway(from: eddiesCopy)
        assertOneLineRefusal(try concord(["sync"], as: alice, in: profile), status: 5,
                             mentions: ["it brings in commit \(fork.prefix(7))", "in alice's name, but eddie signed it"])
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: alice, in: profile).contains(#""label": "puzzle""#))
        XCTAssertTrue(try concordOK(["verify"], as: alice, in: profile).contains("verified"))
    }

    /// The third red-team pass (repro 5): the same forgery in a side MERGE signed by a key of
    /// eddie's that only the fork adds (its first parent lists no holder of it). The merge onto the
    /// format 7 line is refused all the same: the side commit is judged as its own check named its
    /// signer (the merged membership of its parents), never skipped.
    func testAFormat6SideMergeSignedByAKeyOnlyTheForkAddsIsJudgedToo() throws {
        let (alice, eddie, profile, eddiesCopy, old) = try format6UpgradedAfterEddieCopied()
        let tablet = try makeDevice("eddie", device: "tablet")
        try gitOK(["checkout", "--quiet", "-b", "fork", old], in: eddiesCopy)
        try concordOK(["devices", "add", "--name", "tablet", "--key", tablet.publicKeyLine, "--proof", try keyProof(of: tablet, for: eddiesCopy)],
                      as: eddie, in: eddiesCopy)
        let withTablet = try revParse("HEAD", in: eddiesCopy)
        try gitOK(["checkout", "--quiet", "-b", "x", old], in: eddiesCopy)
        _ = try git(["merge", "--quiet", "--no-ff", "--no-commit", withTablet], in: eddiesCopy)
        let forged = try commitWithGit(in: eddiesCopy, signedWith: tablet.keyFile, message: "merge") { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "poison, says alice""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%P"], in: eddiesCopy), "\(old) \(withTablet)")
        try gitOK(["checkout", "--quiet", "main"], in: eddiesCopy)
        try concordOK(["merge", forged], as: eddie, in: eddiesCopy)
        try pushAnyway(from: eddiesCopy)
        assertOneLineRefusal(try concord(["sync"], as: alice, in: profile), status: 5,
                             mentions: ["it brings in commit \(forged.prefix(7)), made on a format 6 copy", "in alice's name, but eddie signed it"])
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: alice, in: profile).contains(#""label": "puzzle""#))
    }

    // MARK: - Scene

    private struct Scene {
        let alice: TestDevice
        let member: TestDevice
        let remote: SyncRemote
        let aliceProfile: URL
        let membersCopy: URL
        /// The member's main before the upgrade.
        let old: String
    }

    /// Alice's format 4 profile with mallory (Viewer); mallory clones it; alice upgrades it to this
    /// build's format and syncs; mallory syncs.
    private func upgradedAfterMalloryCopied() throws -> Scene {
        try upgraded(fromFormat: 4, afterCopying: "mallory", device: "phone", role: "viewer")
    }

    /// Alice's format `format` profile with alice's record vocabulary/puzzle and `member` (`role`, on
    /// `device`); the member clones it (`old`: their main then); alice upgrades it to this build's
    /// format; both sync.
    private func upgraded(fromFormat format: Int, afterCopying member: String, device: String, role: String) throws -> Scene {
        let alice = try makeDevice("alice", device: "laptop")
        let other = try makeDevice(member, device: device)
        let remote = try makeRemote(.path)
        let profile = try publishOldFormatProfile(format, owner: alice, remote: remote, members: [(other, role)],
                                                  records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)], currentFormat: concordFormatVersion)
        let copy = try cloneProfile(other, from: remote, into: member)
        let old = try revParse("HEAD", in: copy)
        try upgradeAndSync(alice, profile, then: [(other, copy)])
        return Scene(alice: alice, member: other, remote: remote, aliceProfile: profile, membersCopy: copy, old: old)
    }

    /// A commit by mallory (plain git, her key) on a branch from her format 4 main, `edit` changing
    /// files there; her copy is back on main after it.
    private func forkFromTheOldCopy(_ scene: Scene, _ edit: (URL) throws -> Void) throws -> String {
        XCTAssertTrue(try gitOK(["show", "\(scene.old):.concord/profile.json"], in: scene.membersCopy).contains(#""formatVersion": 4"#))
        return try commitOnABranch(from: scene.old, in: scene.membersCopy, signedWith: scene.member.keyFile, message: "members/mallory: devices", edit)
    }

    /// Alice's format 6 profile with eddie (Editor), upgraded after eddie copied it (see `upgraded`).
    private func format6UpgradedAfterEddieCopied() throws -> (alice: TestDevice, eddie: TestDevice, profile: URL, eddiesCopy: URL, old: String) {
        let scene = try upgraded(fromFormat: 6, afterCopying: "eddie", device: "laptop", role: "editor")
        return (scene.alice, scene.member, scene.aliceProfile, scene.membersCopy, scene.old)
    }

    private func memberFileText(_ name: String, in profile: URL) throws -> String {
        try gitOK(["show", "HEAD:.concord/members/\(name).json"], in: profile)
    }
}
