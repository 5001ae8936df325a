import ConcordTestSupport
import Foundation
import XCTest

/// Who may write a profile.
final class RolesTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    func testNonMemberIsRefused() throws {
        let alice = try makeDevice("alice")
        let bob = try makeDevice("bob", device: "phone")
        let profile = try makeProfile(owner: alice)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"word":"puzzle"}"#], as: alice, in: profile)

        for arguments in [["put", "vocabulary/bobs", "--json", "{}"], ["put", "vocabulary/puzzle", "--json", "{}"],
                          ["rm", "vocabulary/puzzle"], ["append", "logs", "--json", "{}"]] {
            try assertRefusedWithoutChange(arguments, as: bob, profile: profile, mentions: ["bob", "not an active member"])
        }
        let dump = try writeFile("dump.json", #"{"records":[{"kind":"vocabulary","id":"fromBob","data":{}}]}"#)
        try assertRefusedWithoutChange(["import", "--file", dump.path], as: bob, profile: profile, mentions: ["bob"])

        // Reading is not writing: bob can still read what is on disk.
        XCTAssertTrue(try concordOKResult(["get", "vocabulary/puzzle"], as: bob, in: profile).stdout.contains("puzzle"))
    }

    func testAddedUserMayAppendButNotEdit() throws {
        let alice = try makeDevice("alice")
        let bob = try makeDevice("bob", device: "phone")
        let profile = try makeProfile(owner: alice)
        let key = try concordOKResult(["identity", "show", "--public-key"], as: bob).stdout.trimmingCharacters(in: .newlines)
        try concordOK(["members", "add", "bob", "--role", "user", "--key", key], as: alice, in: profile)

        // logs need "user": bob may append, and git verifies his commit as bob's.
        try concordOK(["append", "logs", "--json", #"{"tapped":"yes"}"#], as: bob, in: profile)
        let verify = try git(["verify-commit", "-v", "HEAD"], in: profile)
        XCTAssertEqual(verify.status, 0, verify.summary)
        XCTAssertTrue(verify.stderr.contains(#"Good "git" signature for bob"#), verify.stderr)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%an <%ae>"], in: profile), "bob <bob@phone>")

        // vocabulary needs "editor", settings "admin"; adding members is for admins only.
        try assertRefusedWithoutChange(["put", "vocabulary/x", "--json", "{}"], as: bob, profile: profile,
                                       mentions: ["bob", "user", "editor"])
        try assertRefusedWithoutChange(["put", "settings/x", "--json", "{}"], as: bob, profile: profile,
                                       mentions: ["bob", "admin"])
        try assertRefusedWithoutChange(["members", "add", "bob", "--role", "admin", "--key", key], as: bob, profile: profile,
                                       mentions: ["bob", "admin"])
    }

    /// An identity that merely calls itself "alice" (another key) must not write as alice: its
    /// commits would not verify for git (`No principal matched`) and concord's log calls them unknown-key.
    func testSomeoneElsesKeyUnderAMembersNameIsRefused() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let impostor = try makeDevice("alice", device: "evil")
        let profile = try makeProfile(owner: alice)
        let before = try snapshot(profile)
        let result = try concord(["put", "vocabulary/forged", "--json", #"{"x":1}"#], as: impostor, in: profile)
        XCTAssertEqual(result.status, 1, "a key that is not alice's was allowed to write as alice: \(result.summary)")
        if result.status != 0 {
            assertRefusal(result, mentions: ["alice"])
            XCTAssertEqual(try snapshot(profile), before)
        }
        // Whatever happened, every commit on the branch must verify for git.
        for commit in try commits(profile) {
            let verify = try git(["verify-commit", commit], in: profile)
            XCTAssertEqual(verify.status, 0, "commit \(commit) does not verify: \(verify.stderr)")
        }
    }
}
