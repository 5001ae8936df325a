import ConcordTestSupport
import Foundation
import XCTest

/// A device never publishes what it would refuse, and `concord doctor` is the way out: it lists
/// the unsent commits the rule refuses, and `--fix` keeps them under `refs/concord/set-aside/…`,
/// moves main back to the newest commit the rule accepts and makes their content again as one
/// signed commit, where this device's member may write it (docs/sync.md, "A commit this device would refuse").
final class SetAsideTests: ConcordTestCase {
    /// An unsigned `git commit` in Alice's copy: sync exits 5 naming it; doctor explains; doctor
    /// --fix sets it aside; the next sync goes through with its content, and Eddie receives it.
    func testDoctorFixSetsAsideAnUnsignedCommitAndTheNextSyncPublishesItsContent() throws {
        let team = try makeAccessTeam()
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        let unsigned = try commitWithGit(in: team.aliceProfile, signedWith: nil) { profile in
            try replace(#""label": "puzzle""#, with: #""label": "by hand""#, in: try recordFile("vocabulary", "puzzle", in: profile))
        }
        let short = String(unsigned.prefix(7))
        let refused = try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(refused.status, 5, refused.summary)
        XCTAssertTrue(refused.stderr.contains("this device's commit \(short) would be refused"), refused.stderr)

        let explained = try concord(["doctor"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(explained.status, 1, explained.summary)
        for words in ["1 unsent commit(s) of this device would be refused", "\(short) by", "not signed", "concord doctor --fix"] {
            XCTAssertTrue(explained.stdout.contains(words), "\(words): \(explained.stdout)")
        }
        let report = try doctorItem(try concord(["doctor", "--json"], as: team.alice, in: team.aliceProfile).stdout)
        XCTAssertEqual(report["fixed"] as? Bool, false)
        XCTAssertEqual((report["commits"] as? [[String: Any]])?.map { $0["commit"] as? String }, [short])
        XCTAssertEqual(report["lastPublishable"] as? String, String(try revParse("origin/main", in: team.aliceProfile).prefix(7)))

        let fixed = try concord(["doctor", "--fix", "--json"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(fixed.status, 0, fixed.summary)
        let setAside = try XCTUnwrap(try doctorItem(fixed.stdout)["setAside"] as? [String: Any], fixed.stdout)
        let ref = try XCTUnwrap(setAside["ref"] as? String)
        XCTAssertTrue(ref.hasPrefix("refs/concord/set-aside/"), ref)
        XCTAssertEqual(try revParse(ref, in: team.aliceProfile), unsigned, "the refused commit is kept")
        XCTAssertEqual(setAside["reapplied"] as? [String], ["vocabulary/puzzle"])
        XCTAssertEqual((setAside["keptAside"] as? [Any])?.count, 0)
        XCTAssertNotEqual(try gitOK(["log", "-1", "--format=%G?"], in: team.aliceProfile), "N", "the new commit is signed")
        XCTAssertTrue(try concordOK(["doctor"], as: team.alice, in: team.aliceProfile).hasPrefix("all good"))

        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(try remoteMain(team.remote), try revParse("HEAD", in: team.aliceProfile))
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: team.alice, in: team.aliceProfile).contains(#""label": "by hand""#))
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: team.eddie, in: eddiesCopy).contains(#""label": "by hand""#))
    }

    /// Uma (a User) appends a log entry with concord, then amends it with plain git, unsigned, adding
    /// a vocabulary change Users may not write. --fix makes her log entry again and keeps the
    /// vocabulary change only in the set-aside ref, saying so; her sync then goes through.
    func testWhatThisMemberMayNotWriteStaysOnlyInTheSetAsideRef() throws {
        let team = try makeAccessTeam()
        let umasCopy = try cloneProfile(team.uma, from: team.remote, into: "uma")
        let entry = try concordOK(["append", "logs", "--json", #"{"text":"hello"}"#], as: team.uma, in: umasCopy)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try replace(#""label": "puzzle""#, with: #""label": "user edit""#, in: try recordFile("vocabulary", "puzzle", in: umasCopy))
        try gitOK(["add", "-A"], in: umasCopy)
        try gitOK(["commit", "--quiet", "--amend", "--no-gpg-sign", "-m", "by hand"], in: umasCopy)
        let unsigned = try revParse("HEAD", in: umasCopy)
        XCTAssertEqual(try concordWithDeadline(["sync"], as: team.uma, in: umasCopy).status, 5)

        let fixed = try concord(["doctor", "--fix"], as: team.uma, in: umasCopy)
        XCTAssertEqual(fixed.status, 0, fixed.summary)
        let vocabulary = try gitOK(["diff", "--name-only", "origin/main", unsigned, "--", "vocabulary"], in: umasCopy)
        XCTAssertTrue(fixed.stdout.contains("only in refs/concord/set-aside/"), fixed.stdout)
        XCTAssertTrue(fixed.stdout.contains("\(vocabulary): uma is user"), fixed.stdout)
        XCTAssertTrue(fixed.stdout.contains("made again in"), fixed.stdout)
        XCTAssertTrue(fixed.stdout.contains("logs/\(entry)"), fixed.stdout)

        try concordOK(["sync"], as: team.uma, in: umasCopy)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(try concordOK(["get", "logs/\(entry)"], as: team.alice, in: team.aliceProfile).contains("hello"))
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: team.alice, in: team.aliceProfile).contains(#""label": "puzzle""#))
        let kept = try gitOK(["for-each-ref", "--format=%(objectname)", "refs/concord/set-aside/"], in: umasCopy)
        XCTAssertEqual(kept, unsigned, "the refused commit, vocabulary change included, is kept")
    }

    /// An unsigned commit, then a merge of the remote's main made with plain git (unsigned too, and
    /// merged again by the refused sync, main first): --fix makes again only Alice's change; Eddie's record, which came through the merge exactly
    /// as the remote has it, is not rewritten by Alice's device but arrives with the next sync.
    func testAMergeMadeWithPlainGitIsSetAsideWithoutRewritingWhatCameFromTheRemote() throws {
        let team = try makeAccessTeam()
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        try commitWithGit(in: team.aliceProfile, signedWith: nil) { profile in
            try replace(#""label": "puzzle""#, with: #""label": "by hand""#, in: try recordFile("vocabulary", "puzzle", in: profile))
        }
        try concordOK(["put", "vocabulary/ball", "--json", #"{"label":"ball"}"#], as: team.eddie, in: eddiesCopy)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        try gitOK(["fetch", "--quiet", "origin"], in: team.aliceProfile)
        try gitOK(["merge", "--quiet", "--no-edit", "--no-gpg-sign", "origin/main"], in: team.aliceProfile)
        XCTAssertEqual(try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile).status, 5)

        let fixed = try concord(["doctor", "--fix", "--json"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(fixed.status, 0, fixed.summary)
        let item = try doctorItem(fixed.stdout)
        // The commit, the plain merge (this device's line first), and the merge the refused sync made
        // of it with the remote's main first (the mainline rule, issue 42).
        XCTAssertEqual((item["commits"] as? [Any])?.count, 3, "the commit and the two merges: \(fixed.stdout)")
        let setAside = try XCTUnwrap(item["setAside"] as? [String: Any], fixed.stdout)
        XCTAssertEqual(setAside["reapplied"] as? [String], ["vocabulary/puzzle"], fixed.stdout)

        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        for (device, copy) in [(team.alice, team.aliceProfile), (team.eddie, eddiesCopy)] {
            XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: device, in: copy).contains(#""label": "by hand""#))
            let ball = try concordOK(["get", "vocabulary/ball"], as: device, in: copy)
            XCTAssertTrue(ball.contains(#""updatedBy": "eddie""#), "Eddie's record stays his: \(ball)")
        }
    }

    /// A file the move back would rewrite holds an edit no commit has: --fix refuses in one line,
    /// changing nothing (no set-aside ref, main where it was, the edit kept).
    func testDoctorFixRefusesOverAnUncommittedEdit() throws {
        let team = try makeAccessTeam()
        let file = try recordFile("vocabulary", "puzzle", in: team.aliceProfile)
        let unsigned = try commitWithGit(in: team.aliceProfile, signedWith: nil) { _ in
            try replace(#""label": "puzzle""#, with: #""label": "by hand""#, in: file)
        }
        try replace(#""label": "by hand""#, with: #""label": "not committed""#, in: file)
        let refused = try concord(["doctor", "--fix"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(refused, status: 1, mentions: [file.lastPathComponent])
        XCTAssertEqual(try revParse("HEAD", in: team.aliceProfile), unsigned)
        XCTAssertEqual(try gitOK(["for-each-ref", "refs/concord/set-aside/"], in: team.aliceProfile), "")
        XCTAssertTrue(try String(contentsOf: file, encoding: .utf8).contains("not committed"))
    }

    /// The doctor item that describes unsent commits, from `concord doctor --json`.
    private func doctorItem(_ json: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let items = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]], json, file: file, line: line)
        return try XCTUnwrap(items.first { $0["commits"] != nil }, json, file: file, line: line)
    }
}
