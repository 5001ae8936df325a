import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// What a merge leaves out of a side where a member lost their rights concurrently
/// (`RightsTakenAwayRule`), from values alone: who has less in the merge, who answers for a
/// commit, which of its changes are left out, which version a file keeps, what a log keeps.
final class RightsTakenAwayRuleTests: XCTestCase {
    let aliceKey = SigningKey.generate().publicKey, bobKey = SigningKey.generate().publicKey
    let carolKey = SigningKey.generate().publicKey, sharedKey = SigningKey.generate().publicKey
    let kinds = Template.aac.kinds   // vocabulary: Editors, settings: Admins, logs: Users
    let word = RecordPaths.file(directory: "vocabulary", id: "x1"), setting = RecordPaths.file(directory: "settings", id: "x1")

    func member(_ name: String, _ role: Role, _ status: Member.Status = .active, keys: [SSHPublicKey] = []) -> Member {
        Member(name: name, role: role, status: status, keys: keys.map { Member.Key(device: "tablet", publicKey: $0) },
               addedBy: "alice", addedAt: "2026-01-01T10:00:00.000Z")
    }

    // MARK: - Who has less in the merge (the first pass)

    func testRevokedDemotedAndDroppedMembersHaveLessAndOthersDoNot() {
        let there = Membership([member("alice", .admin), member("bob", .editor), member("carol", .editor), member("dan", .user),
                                member("erin", .viewer), member("fay", .user, .invited), member("gus", .user, .revoked)])
        let merged = Membership([member("alice", .admin), member("bob", .editor, .revoked), member("carol", .user), member("erin", .editor),
                                 member("fay", .user), member("gus", .user)])
        let lowered = RightsTakenAwayRule.lowered(there: there, merged: merged)
        XCTAssertEqual(Set(lowered.keys), ["bob", "carol", "dan"])
        // Revoked in the merge: as the merge has them.
        XCTAssertEqual(lowered["bob"], member("bob", .editor, .revoked))
        // Demoted: their merged rights.
        XCTAssertEqual(lowered["carol"], member("carol", .user))
        // Not in the merge at all: as they were on the side, revoked.
        XCTAssertEqual(lowered["dan"], member("dan", .user, .revoked))
        // Promoted (erin), unchanged (alice), and members not active on the side (fay, gus) have no less.
        XCTAssertTrue(RightsTakenAwayRule.lowered(there: merged, merged: merged).isEmpty)
    }

    func testAMemberPendingInTheMergeCountsAsRevoked() {
        let lowered = RightsTakenAwayRule.lowered(there: Membership([member("bob", .editor)]), merged: Membership([member("bob", .admin, .invited)]))
        XCTAssertEqual(lowered["bob"], member("bob", .admin, .revoked))
    }

    // MARK: - Everyone under the kinds the merge ends with (the second pass)

    func testEveryActiveMemberIsCappedAtTheLesserOfTheirRights() {
        let there = Membership([member("alice", .admin), member("bob", .editor), member("carol", .user), member("dan", .user),
                                member("fay", .user, .invited)])
        let merged = Membership([member("alice", .admin), member("bob", .user), member("carol", .editor), member("dan", .admin, .invited)])
        let capped = RightsTakenAwayRule.capped(there: there, merged: merged)
        XCTAssertEqual(capped, ["alice": member("alice", .admin), "bob": member("bob", .user), "carol": member("carol", .user),
                                "dan": member("dan", .user, .revoked)])
        // One the merge does not have keeps their rights on the side (the first pass judges those who have less).
        let absent = RightsTakenAwayRule.capped(there: Membership([member("erin", .editor)]), merged: Membership([]))
        XCTAssertEqual(absent, ["erin": member("erin", .editor)])
    }

    // MARK: - Who answers for a commit

    func testTheHoldersOfTheSigningKeyOnEitherSideAndTheActorAnswer() {
        let there = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, keys: [bobKey, sharedKey])])
        let merged = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, .revoked, keys: [bobKey]),
                                 member("carol", .editor, keys: [carolKey, sharedKey])])
        let candidates = ["bob": member("bob", .editor, .revoked), "carol": member("carol", .user)]
        func names(_ key: SSHPublicKey, actor: String? = nil) -> [String] {
            RightsTakenAwayRule.responsible(signer: key, actor: actor, there: there, merged: merged, candidates: candidates).map(\.name)
        }
        XCTAssertEqual(names(bobKey), ["bob"])
        XCTAssertEqual(names(carolKey), ["carol"], "a key the merge has")
        XCTAssertEqual(names(sharedKey), ["bob", "carol"], "one key on each side: both, by name")
        XCTAssertEqual(names(aliceKey), [], "alice has no less")
        XCTAssertEqual(names(aliceKey, actor: "bob"), ["bob"], "the actor a commit names")
        XCTAssertEqual(names(SigningKey.generate().publicKey, actor: "zed"), [], "an actor who is no candidate")
        XCTAssertEqual(RightsTakenAwayRule.responsible(signer: bobKey, actor: nil, there: there, merged: merged, candidates: [:]), [])
        XCTAssertEqual(RightsTakenAwayRule.responsible(signer: carolKey, actor: nil, there: there, merged: merged, candidates: candidates),
                       [member("carol", .user)], "with the rights the merge leaves them")
    }

    // MARK: - Which changes are left out

    func testARevokedMembersChangesAreLeftOutButMembershipFilesAreNot() {
        let paths = [word, "logs/2026-01-01.jsonl", ".concord/members/bob.json",
                     ".concord/invitations/0123456789abcdef.json", ".concord/profile.json"]
        let leftOut = RightsTakenAwayRule.leftOut(paths, by: [member("bob", .editor, .revoked)], kinds: kinds)
        XCTAssertEqual(leftOut.map(\.path), [word, "logs/2026-01-01.jsonl", ".concord/profile.json"])
        XCTAssertEqual(Set(leftOut.map(\.member)), ["bob"])
        // Even an Admin's member and invitation files stay the membership resolution's.
        XCTAssertTrue(RightsTakenAwayRule.leftOut([".concord/members/alice.json"], by: [member("alice", .admin, .revoked)], kinds: kinds).isEmpty)
    }

    func testADemotedMembersChangesBeyondTheirNewRoleAreLeftOut() {
        let paths = [word, setting, "logs/2026-01-01.jsonl"]
        func leftOut(_ role: Role) -> [String] { RightsTakenAwayRule.leftOut(paths, by: [member("carol", role)], kinds: kinds).map(\.path) }
        XCTAssertEqual(leftOut(.admin), [])
        XCTAssertEqual(leftOut(.editor), [setting])
        XCTAssertEqual(leftOut(.user), [word, setting])
        XCTAssertEqual(leftOut(.viewer), paths)
    }

    func testEachResponsibleMemberIsJudgedOnTheirOwnInOrder() {
        let both = [member("bob", .editor, .revoked), member("carol", .editor)]
        let leftOut = RightsTakenAwayRule.leftOut([word, setting], by: both, kinds: kinds)
        XCTAssertEqual(leftOut.map { "\($0.path) \($0.member)" }, ["\(word) bob", "\(setting) bob", "\(setting) carol"])
    }

    // MARK: - What a file left out keeps

    func testALogKeepsEveryEntryButThoseOfMembersWhoLostRightsThatTheKeptVersionLacks() throws {
        func entry(_ id: String, by: String, at millis: Int64) throws -> LogEntry {
            LogEntry(id: try RecordID(id), at: HLC(wallMillis: millis), by: by, device: "tablet", data: ["text": .string(id)])
        }
        let kept = [try entry("e1", by: "bob", at: 1), try entry("e2", by: "alice", at: 2)]
        let merged = kept + [try entry("e3", by: "bob", at: 3), try entry("e4", by: "alice", at: 4), try entry("e5", by: "carol", at: 5)]
        let entries = RightsTakenAwayRule.logEntries(merged, keeping: kept, droppingThoseBy: ["bob", "carol"])
        XCTAssertEqual(entries.map(\.id.rawValue), ["e1", "e2", "e4"])
        XCTAssertEqual(RightsTakenAwayRule.logEntries(merged, keeping: [], droppingThoseBy: ["bob"]).map(\.id.rawValue), ["e2", "e4", "e5"])
        XCTAssertEqual(RightsTakenAwayRule.logEntries(merged, keeping: [], droppingThoseBy: []), merged)
    }

    func testARecordTheKeptVersionLacksStaysAsItsWritersTombstone() throws {
        let record = Record(id: try RecordID("x1"), kind: "vocabulary", device: "phone", member: "bob", stamp: HLC(wallMillis: 7),
                            state: .live(data: ["word": .string("hi")]), fieldStamps: [:])
        let tombstone = RightsTakenAwayRule.tombstone(of: record)
        XCTAssertEqual(tombstone, Record(id: try RecordID("x1"), kind: "vocabulary", device: "phone", member: "bob",
                                         stamp: HLC(wallMillis: 7), state: .deleted))
        XCTAssertTrue(tombstone.isDeleted)
    }
}
