import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// Who may open which profile on a concord server (`ServerAccess.decide`), from values alone: each
/// line of the rule its documentation lists, for every verb it names.
final class ServerAccessTests: XCTestCase {
    let aliceKey = SigningKey.generate().publicKey, bobKey = SigningKey.generate().publicKey
    let daveKey = SigningKey.generate().publicKey, oneTime = SigningKey.generate().publicKey
    let openKey = SigningKey.generate().publicKey, serverAdmin = SigningKey.generate().publicKey
    let stranger = SigningKey.generate().publicKey
    let now = HLClock.parseInstant("2026-06-01T10:00:00.000Z")!
    let later = "2026-06-02T10:00:00.000Z", earlier = "2026-06-01T09:59:59.999Z"
    let verbs: [ServerAccess.Verb] = [.upload, .receive, .wait, .destroy]

    func member(_ name: String, _ role: Role = .editor, _ status: Member.Status = .active, keys: [SSHPublicKey] = [],
                expiresAt: String? = nil, invitationKey: SSHPublicKey? = nil, invitation: String? = nil) -> Member {
        Member(name: name, role: role, status: status, keys: keys.map { Member.Key(device: "tablet", publicKey: $0) },
               addedBy: "alice", addedAt: "2026-01-01T10:00:00.000Z", revokedBy: status == .revoked ? "alice" : nil,
               revokedAt: status == .revoked ? "2026-05-01T10:00:00.000Z" : nil, expiresAt: expiresAt,
               invitationKey: invitationKey, invitation: invitation)
    }

    func open(uses: Int = 2, expiresAt: String? = nil) -> OpenInvitation {
        OpenInvitation(id: "0123456789abcdef", role: .user, uses: uses, expiresAt: expiresAt ?? later, invitedBy: "alice",
                       invitedAt: "2026-05-30T10:00:00.000Z", key: openKey)
    }

    var alice: Member { member("alice", .admin, keys: [aliceKey]) }

    func decide(_ verb: ServerAccess.Verb, _ key: SSHPublicKey, _ members: [Member]?, open invitations: [OpenInvitation] = [],
                isAdminKey: Bool = false) -> Result<ServerAccess.Admission, ServerAccess.Refusal> {
        let state = members.map { members -> ServerAccess.ProfileState in
            var membership = Membership(members)
            membership.openInvitations = invitations
            return .present(membership)
        } ?? .absent
        return ServerAccess.decide(ServerAccess.Request(verb: verb, profile: "kid"), key: key.fingerprint, isAdminKey: isAdminKey,
                                   profile: state, now: now)
    }

    func noAccess(_ verb: ServerAccess.Verb, _ key: SSHPublicKey) -> Result<ServerAccess.Admission, ServerAccess.Refusal> {
        .failure(.noAccess(profile: "kid", key: key.fingerprint, verb: verb))
    }

    /// An active member: every verb, whatever their role (the hook judges what they push).
    func testAnActiveMemberOfAnyRoleReadsWritesWaitsAndMayAskToDelete() {
        for role in Role.allCases {
            for verb in verbs {
                XCTAssertEqual(decide(verb, bobKey, [alice, member("bob", role, keys: [bobKey])]),
                               .success(.init(grant: .member, member: "bob")), "\(role) \(verb)")
            }
        }
    }

    /// The server's admin key creates a profile that is not there (reads nothing, pushes its first
    /// history) and nothing else: no wait, no delete, and no way into a profile that exists.
    func testTheServersAdminKeyCreatesAnAbsentProfileOnly() {
        XCTAssertEqual(decide(.upload, serverAdmin, nil, isAdminKey: true), .success(.init(grant: .creator, member: nil)))
        XCTAssertEqual(decide(.receive, serverAdmin, nil, isAdminKey: true), .success(.init(grant: .creator, member: nil)))
        for verb in [ServerAccess.Verb.wait, .destroy, .notice] {
            XCTAssertEqual(decide(verb, serverAdmin, nil, isAdminKey: true), noAccess(verb, serverAdmin), "\(verb)")
        }
        for verb in verbs {
            XCTAssertEqual(decide(verb, serverAdmin, [alice], isAdminKey: true), noAccess(verb, serverAdmin), "\(verb)")
        }
    }

    /// A stranger is refused alike whether the profile exists or not, so it learns no names.
    func testAStrangerIsRefusedTheSameWhetherTheProfileExistsOrNot() {
        for verb in verbs {
            XCTAssertEqual(decide(verb, stranger, nil), noAccess(verb, stranger), "\(verb)")
            XCTAssertEqual(decide(verb, stranger, [alice]), noAccess(verb, stranger), "\(verb)")
        }
        let key = stranger.fingerprint
        XCTAssertEqual(ServerAccess.Refusal.noAccess(profile: "kid", key: key, verb: .receive).message,
                       "no profile \"kid\" here that the key \(key) may write: ask the profile's admin to add this device")
        XCTAssertEqual(ServerAccess.Refusal.noAccess(profile: "kid", key: key, verb: .upload).message,
                       "no profile \"kid\" here that the key \(key) may read: ask the profile's admin to add this device")
    }

    /// A pending invitation's key (a device key, or a link's one-time key) reads and pushes its
    /// acceptance until the invitation expires; one with no expiry does not lapse.
    func testAPendingInvitationUntilItExpires() {
        let byKey = member("dave", .editor, .invited, keys: [daveKey], expiresAt: later)
        let byLink = member("erin", .user, .invited, expiresAt: later, invitationKey: oneTime)
        for verb in verbs {
            XCTAssertEqual(decide(verb, daveKey, [alice, byKey, byLink]), .success(.init(grant: .invited, member: "dave")), "\(verb)")
            XCTAssertEqual(decide(verb, oneTime, [alice, byKey, byLink]), .success(.init(grant: .invited, member: "erin")), "\(verb)")
        }
        XCTAssertEqual(decide(.upload, daveKey, [alice, member("dave", .editor, .invited, keys: [daveKey])]),
                       .success(.init(grant: .invited, member: "dave")))
        var expired = byKey
        expired.expiresAt = earlier
        XCTAssertEqual(decide(.upload, daveKey, [alice, expired]), .failure(.invitationExpired(profile: "kid", expired)))
        XCTAssertEqual(ServerAccess.Refusal.invitationExpired(profile: "kid", expired).message,
                       "the invitation for dave to \"kid\" expired at \(earlier): ask alice for a new one")
        // Expiring at this very instant counts as expired.
        expired.expiresAt = later
        XCTAssertEqual(ServerAccess.decide(.init(verb: .upload, profile: "kid"), key: daveKey.fingerprint, isAdminKey: false,
                                           profile: .present(Membership([alice, expired])), now: HLClock.parseInstant(later)!),
                       .failure(.invitationExpired(profile: "kid", expired)))
        // A link invitation whose one-time key was used (an accepted member) no longer lets the key in.
        XCTAssertEqual(decide(.upload, oneTime, [alice, member("erin", .user, .active, keys: [daveKey])]), noAccess(.upload, oneTime))
    }

    /// An open invitation's one-time key: in while it has places left and has not expired.
    func testAnOpenInvitationsKeyWhileItHasPlacesAndTime() {
        let invitation = open(uses: 2)
        let joined = member("fay", .user, keys: [daveKey], invitation: invitation.id)
        for verb in verbs {
            XCTAssertEqual(decide(verb, openKey, [alice, joined], open: [invitation]), .success(.init(grant: .invited, member: nil)), "\(verb)")
        }
        let full = [alice, joined, member("gus", .user, keys: [bobKey], invitation: invitation.id)]
        XCTAssertEqual(decide(.receive, openKey, full, open: [invitation]), .failure(.openInvitationFull(profile: "kid", invitation)))
        XCTAssertEqual(ServerAccess.Refusal.openInvitationFull(profile: "kid", invitation).message,
                       "all 2 places of open invitation 0123456789abcdef to \"kid\" are taken: ask alice for a new one")
        let lapsed = open(uses: 2, expiresAt: earlier)
        XCTAssertEqual(decide(.upload, openKey, [alice], open: [lapsed]), .failure(.openInvitationExpired(profile: "kid", lapsed)))
        XCTAssertEqual(ServerAccess.Refusal.openInvitationExpired(profile: "kid", lapsed).message,
                       "open invitation 0123456789abcdef to \"kid\" expired at \(earlier): ask alice for a new one")
        // Expiry is judged before places: an expired, full invitation says it expired.
        XCTAssertEqual(decide(.upload, openKey, full, open: [lapsed]), .failure(.openInvitationExpired(profile: "kid", lapsed)))
    }

    /// A revoked member reads and waits on the view of its revocation; it neither pushes nor deletes.
    func testARevokedMemberReadsAndWaitsButNeitherWritesNorDeletes() {
        let bob = member("bob", .editor, .revoked, keys: [bobKey])
        XCTAssertEqual(decide(.upload, bobKey, [alice, bob]), .success(.init(grant: .revoked, member: "bob")))
        XCTAssertEqual(decide(.wait, bobKey, [alice, bob]), .success(.init(grant: .revoked, member: "bob")))
        XCTAssertEqual(decide(.receive, bobKey, [alice, bob]), .failure(.removed(profile: "kid", bob)))
        XCTAssertEqual(decide(.destroy, bobKey, [alice, bob]), .failure(.removed(profile: "kid", bob)))
        XCTAssertEqual(ServerAccess.Refusal.removed(profile: "kid", bob).message, "access removed: alice revoked bob's access to \"kid\"")
        var unsigned = bob
        unsigned.revokedBy = nil
        XCTAssertEqual(ServerAccess.Refusal.removed(profile: "kid", unsigned).message, "access removed: an admin revoked bob's access to \"kid\"")
    }

    /// A key listed by several members is judged by its active holder first, then a pending one.
    func testAKeyListedTwiceIsJudgedByItsActiveHolderThenItsPendingOne() {
        let old = member("a-old", .editor, .revoked, keys: [bobKey])
        XCTAssertEqual(decide(.receive, bobKey, [old, member("bob", .viewer, keys: [bobKey])]), .success(.init(grant: .member, member: "bob")))
        XCTAssertEqual(decide(.receive, bobKey, [old, member("bob", .viewer, .invited, keys: [bobKey], expiresAt: later)]),
                       .success(.init(grant: .invited, member: "bob")))
        // A member's device key beats a link invitation's one-time key that happens to be the same.
        XCTAssertEqual(decide(.upload, oneTime, [member("bob", .viewer, keys: [oneTime]), member("erin", .user, .invited, invitationKey: oneTime)]),
                       .success(.init(grant: .member, member: "bob")))
    }

    /// The verbs are sshd's forced-command names.
    func testTheVerbsAreTheCommandsNames() {
        XCTAssertEqual([ServerAccess.Verb.upload, .receive, .wait, .notice, .destroy].map(\.rawValue),
                       ["git-upload-pack", "git-receive-pack", "concord-wait", "concord-notice", "concord-destroy"])
    }
}
