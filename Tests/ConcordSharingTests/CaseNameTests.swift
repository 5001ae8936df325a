import ConcordTestSupport
import Foundation
import XCTest

/// Issue 42, the second red-team pass's finding 6 (repros C, G): a name is one member whatever its
/// case — `Alice` beside `alice` would read as the creator in every listing and log, and a
/// case-insensitive file system holds one of the two files. Concord refuses to make such a name,
/// and every device refuses a commit that adds one.
final class CaseNameTests: ConcordTestCase {
    func testNoCommandMakesANameThatDiffersOnlyInCase() throws {
        let team = try makeAccessTeam()
        let other = try makeDevice("Alice", device: "laptop")
        assertOneLineRefusal(try concord(["members", "add", "ALICE", "--role", "viewer", "--key", other.publicKeyLine], as: team.alice, in: team.aliceProfile),
                             mentions: ["already has a member named alice, which differs from ALICE only in case"])
        assertOneLineRefusal(try concord(["share", "Eddie", "--role", "viewer"], as: team.alice, in: team.aliceProfile),
                             mentions: ["already has a member named eddie, which differs from Eddie only in case"])
        let link = try shareAndSync(["--open", "--role", "user", "--uses", "3"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(try acceptResult(link, as: other, remote: team.remote, into: "other"),
                             mentions: ["already has a member named alice (a name is one member whatever its case)"])
    }

    /// Someone holding the open link joins as `Alice` with plain git and pushes it: every device
    /// refuses the commit, naming the rule.
    func testACommitAddingANameThatDiffersOnlyInCaseIsRefused() throws {
        let team = try makeAccessTeam()
        let link = try shareAndSync(["--open", "--role", "user", "--uses", "3"], as: team.alice, in: team.aliceProfile)
        let clone = sandbox.appendingPathComponent("squat")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, clone.path])
        fsckAtEnd.append(clone)
        let squat = try joinWithAnOpenLink(link, as: "Alice", in: clone, profileID: try profileID(of: team.aliceProfile))
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        try assertRefused(team, commit: squat.commit, mentions: ["Alice differs only in case from alice", "a name is one member whatever its case"])
    }
}
