import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// The whole-commit checks of the validity rule on their own (no git): memberships, kinds and changed
/// paths given as values, as ConcordKit reads them from a repository.
final class CommitRuleTests: XCTestCase {
    let aliceKey = SigningKey.generate().publicKey
    let bobKey = SigningKey.generate().publicKey
    let veraKey = SigningKey.generate().publicKey

    func member(_ name: String, _ role: Role, _ status: Member.Status = .active, keys: [SSHPublicKey], invitation: String? = nil) -> Member {
        Member(name: name, role: role, status: status, keys: keys.map { Member.Key(device: "tablet", publicKey: $0) },
               addedBy: "alice", addedAt: "2026-01-01T00:00:00.000Z", invitation: invitation)
    }

    func path(_ text: String) -> [UInt8] { Array(text.utf8) }

    func testAKeyStaysWithItsHolderInTheCommitAndInEveryParent() {
        let before = Membership([member("alice", .admin, keys: [aliceKey]), member("vera", .viewer, keys: [veraKey])])
        let veraPath = path(ProfilePaths.member("vera"))
        // Vera adds a fresh device key: nobody else holds it.
        let fresh = SigningKey.generate().publicKey
        let added = Membership([member("alice", .admin, keys: [aliceKey]), member("vera", .viewer, keys: [veraKey, fresh])])
        XCTAssertNil(CommitRule.keyGivenAway(written: [veraPath], after: added, parents: [before]))
        // Vera lists Alice's key as her own device.
        let stolen = Membership([member("alice", .admin, keys: [aliceKey]), member("vera", .viewer, keys: [veraKey, aliceKey])])
        let violation = CommitRule.keyGivenAway(written: [veraPath], after: stolen, parents: [before])
        XCTAssertEqual(violation?.change, ProfilePaths.member("vera"))
        XCTAssertEqual(violation?.reason, "it gives vera the key of alice's device tablet (\(aliceKey.fingerprint)); a key belongs to one member")
        // A key a revoked member held in a parent is theirs still, though the commit removes them.
        let revokedBob = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, .revoked, keys: [bobKey])])
        let taken = Membership([member("alice", .admin, keys: [aliceKey]), member("vera", .viewer, keys: [veraKey, bobKey])])
        XCTAssertNotNil(CommitRule.keyGivenAway(written: [veraPath], after: taken, parents: [revokedBob]))
    }

    func testAProfileNeverEndsWithNoActiveAdmin() {
        let two = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .admin, keys: [bobKey])])
        let one = Membership([member("alice", .admin, keys: [aliceKey]), member("bob", .editor, keys: [bobKey])])
        let none = Membership([member("alice", .admin, .revoked, keys: []), member("bob", .editor, keys: [bobKey])])
        XCTAssertNil(CommitRule.noAdminLeft(after: one, parent: two))
        XCTAssertEqual(CommitRule.noAdminLeft(after: none, parent: one),
                       Violation(ProfilePaths.membersDirectory, "it leaves the profile with no active Admin; make another member an Admin first"))
        // A parent that had none already is not this commit's doing.
        XCTAssertNil(CommitRule.noAdminLeft(after: none, parent: none))
    }

    func testAnActingMemberWritesRecordsAndLogsOnlyWithTheLowerRole() throws {
        let kinds = Template.aac.kinds
        let parent = Membership([member("alice", .admin, keys: [aliceKey]), member("kid", .user, keys: [])])
        let signer = CommitSigner(member: member("alice", .admin, keys: [aliceKey]), device: "tablet")
        let record = path(try XCTUnwrap(kinds.kinds.first { $0.policy != .append }).recordPath(try RecordID("x1")))
        func acting(_ actor: String?, count: Int = 1, parents: Int = 1, changes: [[UInt8]]) -> Result<Member, Violation> {
            CommitRule.actingMember(actor: actor, actorCount: actor == nil ? 0 : count, signer: signer, parentCount: parents,
                                    parent: parent, kinds: kinds, changes: changes)
        }
        XCTAssertEqual(try acting(nil, changes: [record]).get().name, "alice")
        XCTAssertEqual(try acting("alice", changes: [record]).get().role, .admin)
        let kid = try acting("kid", changes: [record]).get()
        XCTAssertEqual(kid.name, "kid")
        XCTAssertEqual(kid.role, .user)
        XCTAssertThrowsError(try acting("kid", changes: [path(KindsTable.path)]).get()) { error in
            XCTAssertEqual((error as? Violation)?.reason, "acting for kid on alice's device, a commit writes records and logs only; "
                           + "membership and settings documents are changed by a member as themselves")
        }
        XCTAssertThrowsError(try acting("kid", parents: 2, changes: [record]).get())
        XCTAssertThrowsError(try acting("nobody", changes: [record]).get())
        XCTAssertThrowsError(try acting("kid", count: 2, changes: [record]).get()) { error in
            XCTAssertEqual((error as? Violation)?.reason, "it has 2 Concord-Actor trailers: a commit names one acting member")
        }
    }

    func testAMergeThatDiffersFromThePolicyMergeIsJudgedByTheLowestRoleActiveInEveryParent() throws {
        let merged = member("bob", .admin, keys: [bobKey])
        let admin = Membership([merged])
        let demoted = Membership([member("bob", .editor, keys: [bobKey])])
        let revoked = Membership([member("bob", .admin, .revoked, keys: [bobKey])])
        XCTAssertEqual(try CommitRule.judgedInMerge(merged, parents: [admin, admin]).get().role, .admin)
        XCTAssertEqual(try CommitRule.judgedInMerge(merged, parents: [admin, demoted]).get().role, .editor)
        XCTAssertThrowsError(try CommitRule.judgedInMerge(merged, parents: [admin, revoked]).get())
        XCTAssertNil(CommitRule.mergeAuthorityProblem([path("notes/ab/x1.json")]))
        XCTAssertEqual(CommitRule.mergeAuthorityProblem([path(ProfilePaths.member("bob"))])?.change, ProfilePaths.member("bob"))
        XCTAssertNotNil(CommitRule.mergeAuthorityProblem([path(ProfilePaths.invitation("0123456789abcdef"))]))
    }

    func testOpenInvitationsAreBoundedByTheirUses() {
        let invitation = OpenInvitation(id: "0123456789abcdef", role: .user, uses: 1, expiresAt: "2026-02-01T00:00:00.000Z",
                                        invitedBy: "alice", invitedAt: "2026-01-01T00:00:00.000Z", key: SigningKey.generate().publicKey)
        let one = Membership([member("alice", .admin, keys: [aliceKey]), member("kai", .user, keys: [veraKey], invitation: invitation.id)])
        let two = Membership(one.members.values.map { $0 } + [member("lea", .user, keys: [bobKey], invitation: invitation.id)])
        XCTAssertNil(CommitRule.invitationUseProblem(joined: CommitRule.invitationsJoined(one), invitations: [invitation.id: invitation]))
        XCTAssertEqual(CommitRule.invitationUseProblem(joined: CommitRule.invitationsJoined(two), invitations: [invitation.id: invitation]),
                       Violation(ProfilePaths.invitation(invitation.id), "open invitation \(invitation.id) admits 1 members and this commit makes it 2"))
        XCTAssertEqual(CommitRule.invitationUseProblem(joined: CommitRule.invitationsJoined(one), invitations: [:])?.reason,
                       "members name open invitation \(invitation.id), which the profile does not hold")
    }

    func testALogOnlyGrowsUnderEveryKindsTableAndReadsItsBytes() throws {
        let kinds = Template.aac.kinds
        let log = try XCTUnwrap(kinds.kinds.first { $0.policy == .append && $0.writers <= .user })
        let file = path("\(log.directory)/2026-01-01.jsonl")
        let user = member("kid", .user, keys: [veraKey])
        XCTAssertTrue(CommitRule.readsBytes(of: file, judged: user, kinds: kinds))
        XCTAssertTrue(CommitRule.readsBytes(of: path(ProfilePaths.member("kid")), judged: user, kinds: kinds))
        XCTAssertFalse(CommitRule.readsBytes(of: path(ProfilePaths.member("alice")), judged: user, kinds: kinds))
        XCTAssertEqual(CommitRule.changeProblem(file, by: user, kinds: [kinds], files: (before: nil, after: nil))?.reason,
                       "a log file is never removed")
        XCTAssertEqual(CommitRule.changeProblem(path(KindsTable.path), by: user, kinds: [kinds], files: nil)?.reason,
                       "only Admins may change it; kid is User")
        // Writable under the parent's kinds but not under an empty table (a kind the other parent lacks).
        XCTAssertNotNil(CommitRule.changeProblem(file, by: user, kinds: [kinds, .empty], files: (before: [], after: [])))
    }
}
