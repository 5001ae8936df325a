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

    // MARK: - Who answers for a side commit, where it lands

    func testTheKeysActiveHolderWhereItLandsAnswersWithTheRightsThere() {
        let madeUnder = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, keys: [bobKey])])
        let landing = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .viewer, keys: [bobKey])])
        func answer(_ key: SSHPublicKey, actor: String? = nil, on landing: Membership) -> RightsTakenAwayRule.Answer {
            RightsTakenAwayRule.answering(signer: key, actor: actor, landing: landing, madeUnder: madeUnder)
        }
        // Demoted on the main line before it landed: the rights there, not where it was made.
        XCTAssertEqual(answer(bobKey, on: landing), .members([member("bob", .viewer, keys: [bobKey])]))
        // The side's own later decision is not where it lands: a promotion there counts too.
        let promoted = Membership([member("bob", .admin, keys: [bobKey])])
        XCTAssertEqual(answer(bobKey, on: promoted), .members([member("bob", .admin, keys: [bobKey])]))
        // Revoked where it lands: the key is gone, its holder named.
        let revoked = Membership([member("bob", .editor, .revoked, keys: [bobKey])])
        XCTAssertEqual(answer(bobKey, on: revoked), .keyGone(member: "bob", removed: false))
        // The key removed where it lands (the member still there): named from where it was made.
        let removed = Membership([member("bob", .editor, keys: [carolKey])])
        XCTAssertEqual(answer(bobKey, on: removed), .keyGone(member: "bob", removed: true))
        // A key nobody ever held: named by its fingerprint.
        XCTAssertEqual(answer(sharedKey, on: landing), .keyGone(member: sharedKey.fingerprint, removed: true))
    }

    func testTheActorAnswersBesideTheSignerAndCountsAsRevokedWhereNotActive() {
        let madeUnder = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, keys: [bobKey])])
        let landing = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, .revoked, keys: [bobKey])])
        XCTAssertEqual(RightsTakenAwayRule.answering(signer: aliceKey, actor: "bob", landing: landing, madeUnder: madeUnder),
                       .members([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, .revoked, keys: [bobKey])]))
        XCTAssertEqual(RightsTakenAwayRule.answering(signer: aliceKey, actor: "bob", landing: madeUnder, madeUnder: madeUnder),
                       .members([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, keys: [bobKey])]))
        XCTAssertEqual(RightsTakenAwayRule.answering(signer: aliceKey, actor: "alice", landing: madeUnder, madeUnder: madeUnder),
                       .members([member("alice", .admin, keys: [aliceKey])]), "acting as oneself is oneself")
        guard case .members(let members) = RightsTakenAwayRule.answering(signer: aliceKey, actor: "zed", landing: landing, madeUnder: madeUnder)
        else { return XCTFail("alice holds her key") }
        XCTAssertEqual(members.map { "\($0.name) \($0.status)" }, ["alice active", "zed revoked"], "an actor nobody knows has no rights")
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

    func testALogKeepsEveryEntryButThoseTheCommitsLeftOutAddedThatTheKeptVersionLacks() throws {
        func entry(_ id: String, by: String, at millis: Int64) throws -> LogEntry {
            LogEntry(id: try RecordID(id), at: HLC(wallMillis: millis), by: by, device: "tablet", data: ["text": .string(id)])
        }
        let kept = [try entry("e1", by: "bob", at: 1), try entry("e2", by: "alice", at: 2)]
        let e3 = try entry("e3", by: "bob", at: 3), e4 = try entry("e4", by: "alice", at: 4), e5 = try entry("e5", by: "carol", at: 5)
        let merged = kept + [e3, e4, e5]
        // What the left-out commits added goes, whoever an entry names (e4 says alice, written acting for her).
        let entries = RightsTakenAwayRule.logEntries(merged, keeping: kept, dropping: [e3.identity, e4.identity, kept[0].identity])
        XCTAssertEqual(entries.map(\.id.rawValue), ["e1", "e2", "e5"], "e1 is the kept version's")
        XCTAssertEqual(RightsTakenAwayRule.logEntries(merged, keeping: [], dropping: [e5.identity]).map(\.id.rawValue), ["e1", "e2", "e3", "e4"])
        XCTAssertEqual(RightsTakenAwayRule.logEntries(merged, keeping: [], dropping: []), merged)
    }

    /// A record the kept version lacks stays as its writer's placeholder: a tombstone at the earliest
    /// stamp, never the one they chose, which every merge gives way to, under either policy: a
    /// concurrent live version of the id, or a real delete, is what the merge keeps, unchanged.
    func testARecordTheKeptVersionLacksStaysAsItsWritersPlaceholder() throws {
        let record = Record(id: try RecordID("x1"), kind: "vocabulary", device: "phone", member: "bob", stamp: HLC(wallMillis: 4_102_444_800_000),
                            state: .live(data: ["word": .string("hi")]), fieldStamps: [:])
        let tombstone = RightsTakenAwayRule.tombstone(of: record)
        XCTAssertEqual(tombstone, Record(id: try RecordID("x1"), kind: "vocabulary", device: "phone", member: "bob",
                                         stamp: Record.placeholderStamp, state: .deleted))
        XCTAssertTrue(tombstone.isPlaceholder)
        let alices = Record(id: try RecordID("x1"), kind: "vocabulary", device: "laptop", member: "alice", stamp: HLC(wallMillis: 9),
                            state: .live(data: ["word": .string("alice's")]), fieldStamps: [:]).encoded()
        let deleted = Record(id: try RecordID("x1"), kind: "vocabulary", device: "laptop", member: "alice", stamp: HLC(wallMillis: 9),
                             state: .deleted).encoded()
        for policy in [MergePolicy.lww, .deleteWins] {
            for other in [alices, deleted] {
                XCTAssertEqual(RecordMerge.merge(policy: policy, base: nil, ours: tombstone.encoded(), theirs: other), .merged(bytes: other, conflicts: []))
                XCTAssertEqual(RecordMerge.merge(policy: policy, base: nil, ours: other, theirs: tombstone.encoded()), .merged(bytes: other, conflicts: []))
            }
        }
        XCTAssertFalse(try Record.decode(deleted).isPlaceholder)
    }
}
