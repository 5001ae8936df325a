import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Records and log entries speak only for their signer (issue 42, data format 7): a member with
/// plain git and their own key writes a record stamped with another member's name, directly or in
/// a merge, and pushes it to a path remote; Alice's sync refuses it with one line naming the commit,
/// the signer, the record and what to do. History from before `concord upgrade` keeps its stamps.
/// (ServeMemberAttackTests makes the record forgery through `concord serve`; MemberAttackTests and
/// SyncAccessTests the log entry in another's name.)
final class StampAttackTests: ConcordTestCase {
    func testARecordStampedWithAnotherMembersNameIsRefusedAndOneInTheSignersStands() throws {
        let team = try makeAccessTeam()
        let edited = try pushWithGit(team, signedWith: team.eddie.keyFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "said by eddie""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertRefused(team, commit: edited, mentions: ["by eddie@laptop changes vocabulary/puzzle", #"field "label""#,
                                                           "in alice's name, but eddie signed it", "concord put"])
        try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: team.aliceProfile)], in: team.remote.bare)
        let stampedAsUma = try pushWithGit(team, signedWith: team.eddie.keyFile) { clone in
            try self.restampPuzzle(in: clone, label: "ball", by: "uma")
        }
        try assertRefused(team, commit: stampedAsUma, mentions: ["by eddie@laptop changes vocabulary/puzzle", "its updatedBy", "in uma's name"])
        try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: team.aliceProfile)], in: team.remote.bare)
        let own = try pushWithGit(team, signedWith: team.eddie.keyFile) { clone in
            try self.restampPuzzle(in: clone, label: "ball", by: "eddie")
        }
        try assertAccepted(team, commit: own)
    }

    /// A merge whose record is stamped as neither parent has it is refused; one whose difference
    /// from the policy merge is in its signer's own name stands.
    func testAMergeWithAStampOfNeitherParentIsRefused() throws {
        let team = try makeAccessTeam()
        let fork = try eddiesFork(team)
        let start = try gitOK(["rev-parse", "HEAD"], in: fork)
        try concordOK(["put", "settings/theme", "--json", #"{"color":"red"}"#], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let main = try revParse("HEAD", in: team.aliceProfile)
        try gitOK(["fetch", "--quiet", "origin"], in: fork)

        let forged = try mergeWithGit(in: fork, "origin/main", signedWith: team.eddie.keyFile, mainFirst: true) { fork in
            try self.restampPuzzle(in: fork, label: "merged", by: "uma")
        }
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        try assertRefused(team, commit: forged, mentions: ["by eddie@laptop changes vocabulary/puzzle", "in uma's name, but eddie signed it"])

        try gitOK(["update-ref", "refs/heads/main", main], in: team.remote.bare)
        try gitOK(["reset", "--quiet", "--hard", start], in: fork)
        let own = try mergeWithGit(in: fork, main, signedWith: team.eddie.keyFile, mainFirst: true) { fork in
            try self.restampPuzzle(in: fork, label: "merged", by: "eddie")
        }
        try gitOK(["push", "--quiet", "--force", "origin", "HEAD:main"], in: fork)
        try assertAccepted(team, commit: own)
    }

    /// A merge whose second parent is an ancestor of its first (a red-team finding, issue 42): each of
    /// Eddie's merges holds files exactly as one parent has them, which the rule used to accept — the
    /// ancestor's older version of Alice's record (her later write silently undone, still stamped as
    /// hers), her record from before her delete (revived), and none of her tombstone (the delete
    /// gone). A merge that differs from merging its parents now writes in its signer's name only, and
    /// removes no record; the same merge written as Eddie's own stands.
    func testAMergeWithAnAncestorCannotTakeBackAnotherMembersWrites() throws {
        let team = try makeAccessTeam()
        let fork = try eddiesFork(team)
        let old = try gitOK(["rev-parse", "HEAD"], in: fork)
        let puzzle = try recordFile("vocabulary", "puzzle", in: fork).path.dropFirst(fork.path.count + 1)
        /// Alice's `command` synced; Eddie's fork at the remote's main, then his merge of `old` with `edit`, pushed.
        func afterAlice(_ command: [String], _ edit: @escaping (URL) throws -> Void) throws -> String {
            try concordOK(command, as: team.alice, in: team.aliceProfile)
            try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
            try gitOK(["fetch", "--quiet", "origin"], in: fork)
            try gitOK(["reset", "--quiet", "--hard", "origin/main"], in: fork)
            let merge = try ancestorMergeWithGit(in: fork, with: old, signedWith: team.eddie.keyFile, edit)
            try gitOK(["push", "--quiet", "--force", "origin", "HEAD:main"], in: fork)
            return merge
        }
        func putBack() throws { try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: team.aliceProfile)], in: team.remote.bare) }

        let older = try afterAlice(["put", "vocabulary/puzzle", "--json", #"{"label":"ball"}"#]) { fork in
            try self.gitOK(["checkout", old, "--", String(puzzle)], in: fork)
        }
        try assertRefused(team, commit: older, mentions: ["by eddie@laptop changes vocabulary/puzzle", "in alice's name, but eddie signed it"])
        try putBack()
        let revived = try afterAlice(["rm", "vocabulary/puzzle"]) { fork in try self.gitOK(["checkout", old, "--", String(puzzle)], in: fork) }
        try assertRefused(team, commit: revived, mentions: ["by eddie@laptop changes vocabulary/puzzle", "in alice's name, but eddie signed it"])
        try putBack()
        let gone = try afterAlice(["put", "vocabulary/cup", "--json", #"{"label":"cup"}"#]) { fork in
            try self.gitOK(["rm", "--quiet", String(puzzle)], in: fork)
        }
        try assertRefused(team, commit: gone, mentions: ["by eddie@laptop changes vocabulary/puzzle", "the merge removes it", "concord rm"])
        try putBack()
        XCTAssertTrue(try gitOK(["show", "HEAD:\(puzzle)"], in: team.aliceProfile).contains(#""deletedBy": "alice""#), "Alice's delete stands")

        let own = try afterAlice(["put", "vocabulary/bowl", "--json", #"{"label":"bowl"}"#]) { fork in
            try self.gitOK(["checkout", old, "--", String(puzzle)], in: fork)
            try self.replace(#""updatedBy": "alice""#, with: #""updatedBy": "eddie""#, in: fork.appendingPathComponent(String(puzzle)))
        }
        try assertAccepted(team, commit: own)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: team.alice, in: team.aliceProfile).contains(#""updatedBy": "eddie""#))
    }

    /// A format 6 profile: a record stamped in another's name stands there (format 6 had no such
    /// rule), and `concord verify` keeps accepting that history after an Admin's `concord upgrade`
    /// moves the profile to format 7 in one commit; from then on the same forgery is refused.
    func testFormat6StampsStayValidUpToTheUpgradeAndAreRefusedAfterIt() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let eddie = try makeDevice("eddie", device: "laptop")
        let remote = try makeRemote(.path)
        let profile = try publishOldFormatProfile(6, owner: alice, remote: remote, members: [(eddie, "editor")],
                                                  records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)], currentFormat: concordFormatVersion)
        let team = AccessTeam(alice: alice, eddie: eddie, uma: alice, vera: alice, remote: remote, aliceProfile: profile)

        let old = try pushWithGit(team, signedWith: eddie.keyFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "said by eddie""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertAccepted(team, commit: old)

        let upgraded = try concordOK(["upgrade", "--json"], as: alice, in: profile)
        XCTAssertTrue(upgraded.contains(#""from": 6"#) && upgraded.contains(#""to": \#(concordFormatVersion)"#), upgraded)
        XCTAssertEqual(try gitOK(["diff", "--name-only", old, "HEAD"], in: profile), ".concord/profile.json")
        try concordOK(["sync"], as: alice, in: profile)
        XCTAssertTrue(try concordOK(["verify"], as: alice, in: profile).contains("verified"))
        let eddieCopy = try cloneProfile(eddie, from: remote, into: "eddie")
        XCTAssertTrue(try concordOK(["verify"], as: eddie, in: eddieCopy).contains("verified"), "a new device takes the format 6 history")

        let after = try pushWithGit(team, signedWith: eddie.keyFile) { clone in
            try self.replace(#""label": "said by eddie""#, with: #""label": "again""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertRefused(team, commit: after, mentions: ["by eddie@laptop changes vocabulary/puzzle", "in alice's name, but eddie signed it"])
    }

    /// `concord get logs/<id>` with an id two authors used shows both, each with its author, in the
    /// order they reached main: Uma reusing Alice's id with an earlier time does not come first.
    func testGetOfALogIdTwoAuthorsUsedShowsBothTheFirstToArriveFirst() throws {
        let team = try makeAccessTeam()
        let first = try pushWithGit(team, signedWith: team.alice.keyFile, appendLogEntry(by: "alice", id: "q1", at: "10:00:00", text: "question"))
        try assertAccepted(team, commit: first)
        let second = try pushWithGit(team, signedWith: team.uma.keyFile, appendLogEntry(by: "uma", id: "q1", at: "09:00:00", text: "forged"))
        try assertAccepted(team, commit: second)
        let shown = try concordOK(["get", "logs/q1"], as: team.alice, in: team.aliceProfile).split(separator: "\n")
        XCTAssertEqual(shown.count, 2, "\(shown)")
        XCTAssertTrue(shown.first?.contains(#""by":"alice""#) == true && shown.first?.contains("question") == true, "\(shown)")
        XCTAssertTrue(shown.last?.contains(#""by":"uma""#) == true && shown.last?.contains("forged") == true, "\(shown)")
    }

    /// Alice's vocabulary/puzzle in `clone` relabelled `label`, its updatedBy changed to `member`.
    private func restampPuzzle(in clone: URL, label: String, by member: String) throws {
        let file = try recordFile("vocabulary", "puzzle", in: clone)
        try replace(#""label": "puzzle""#, with: #""label": "\#(label)""#, in: file)
        try replace(#""updatedBy": "alice""#, with: #""updatedBy": "\#(member)""#, in: file)
    }
}
