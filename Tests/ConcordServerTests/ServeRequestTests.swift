import ConcordGit
@testable import ConcordEngine
@testable import ConcordKit
@testable import ConcordServer
import ConcordTestSupport
import XCTest

/// The two pure halves of `concord serve`: reading `SSH_ORIGINAL_COMMAND` (`ServeRequest`) and
/// deciding who may open which profile (`ServerAccess`), with no sshd and no git.
final class ServeRequestTests: XCTestCase {
    func testGitsOwnCommandsAreRead() throws {
        for (command, verb, profile) in [
            ("git-upload-pack '/kid.git'", ServeRequest.Verb.upload, "kid"),
            ("git-receive-pack '/kid.git'", .receive, "kid"),
            ("git-upload-pack 'kid.git'", .upload, "kid"),
            ("git-upload-pack '/kid'", .upload, "kid"),
            ("git-upload-pack '/kid.git/'", .upload, "kid"),
            ("git-receive-pack 'care-team_2'", .receive, "care-team_2"),
            ("concord-notice '/kid.git'", .notice, "kid"),
            ("concord-destroy '/kid.git'", .destroy, "kid"),
        ] {
            XCTAssertEqual(try ServeRequest.parse(command), ServeRequest(verb: verb, profile: profile), command)
        }
    }

    /// `concord-wait '<profile>' <main> <seconds> [pack]`: live updates for watch, read as strictly.
    func testTheWaitVerbIsReadStrictly() throws {
        let tip = String(repeating: "ab", count: 20)
        XCTAssertEqual(try ServeRequest.parse("concord-wait '/kid.git' \(tip) 20"),
                       ServeRequest(verb: .wait, profile: "kid", known: ObjectID(hex: tip), seconds: 20))
        XCTAssertEqual(try ServeRequest.parse("concord-wait '/kid.git' \(String(repeating: "0", count: 40)) 1"),
                       ServeRequest(verb: .wait, profile: "kid", known: nil, seconds: 1))
        XCTAssertEqual(try ServeRequest.parse("concord-wait '/kid.git' \(tip) 20 pack"),
                       ServeRequest(verb: .wait, profile: "kid", known: ObjectID(hex: tip), seconds: 20, withPack: true))
        for command in ["concord-wait '/kid.git'", "concord-wait '/kid.git' \(tip)", "concord-wait '/kid.git' \(tip) 0",
                        "concord-wait '/kid.git' \(tip) 61", "concord-wait '/kid.git' \(tip.dropLast()) 5", "concord-wait '/kid.git' \(tip) 5 x",
                        "concord-wait '/kid.git' \(tip) 5 pack pack", "concord-wait '/kid.git' \(tip) 5 packs", "concord-wait '/kid.git' \(tip) 5 pack ",
                        "concord-wait '/kid.git' zz\(tip.dropFirst(2)) 5", "concord-wait '/../kid.git' \(tip) 5"] {
            XCTAssertThrowsError(try ServeRequest.parse(command), command)
        }
        // Reading is enough to wait; the admin key creates nothing by waiting.
        let noOne = ServerAccess.decide(ServeRequest(verb: .wait, profile: "new", known: nil, seconds: 5), key: "SHA256:x",
                                        isAdminKey: true, profile: .absent, now: 0)
        if case .success = noOne { XCTFail("waiting on a profile that is not there creates nothing") }
    }

    func testAnythingElseIsRefusedWithOneLine() {
        let long = String(repeating: "a", count: 65)
        for (command, mention) in [
            (nil, "no shell"),
            ("", "no shell"),
            ("git-upload-pack '/kid.git'\n", "newline"),
            ("git-upload-pack '/kid.git'\nrm -rf /", "newline"),
            ("git-upload-pack '/kid.git'\r", "newline"),
            ("git-upload-pack '/kid.git'; rm -rf /", "';'"),
            ("git-upload-pack '/kid.git' ; id", "';'"),
            ("git-upload-pack '/../etc.git'", "'..'"),
            ("git-upload-pack '../../root/.ssh'", "'..'"),
            ("git-upload-pack '/kid\u{0}.git'", "control character"),
            ("git-upload-pack '/kid\t.git'", "control character"),
            ("git-upload-archive '/kid.git'", "only git-upload-pack, git-receive-pack, concord-wait, concord-notice and concord-destroy"),
            ("git upload-pack '/kid.git'", "only git-upload-pack, git-receive-pack, concord-wait, concord-notice and concord-destroy"),
            ("scp -t /tmp", "only git-upload-pack, git-receive-pack, concord-wait, concord-notice and concord-destroy"),
            ("sh", "only git-upload-pack, git-receive-pack, concord-wait, concord-notice and concord-destroy"),
            ("git-upload-pack /kid.git", "single quotes"),
            ("git-upload-pack '/kid.git' '/other.git'", "lower-case letters"),
            ("git-upload-pack '/kid.git", "single quotes"),
            ("git-upload-pack ''", "no profile named"),
            ("git-upload-pack '/'", "no profile named"),
            ("git-upload-pack '/\(long).git'", "at most 64"),
            ("git-upload-pack '/" + String(repeating: "a", count: 300) + "'", "at most 256"),
            ("git-upload-pack '/Kid.git'", "lower-case letters"),
            ("git-upload-pack '/srv/git/kid.git'", "lower-case letters"),
            ("git-upload-pack '/-kid.git'", "starting with a letter or digit"),
            ("git-upload-pack '/k$(id).git'", "lower-case letters"),
            ("git-upload-pack '/k`id`.git'", "lower-case letters"),
            ("git-upload-pack '/kid.git' && id", "single quotes"),
            ("git-upload-pack '/kïd.git'", "lower-case letters"),
        ] as [(String?, String)] {
            do {
                let request = try ServeRequest.parse(command)
                XCTFail("\(command.debugDescription) was read as \(request)")
            } catch {
                XCTAssertTrue(error.message.contains(mention), "\(command.debugDescription): \(error.message)")
                XCTAssertFalse(error.message.contains("\n"), "one line: \(error.message.debugDescription)")
            }
        }
    }

    // MARK: - Who may open which profile

    let admin = SigningKey.generate().publicKey, bob = SigningKey.generate().publicKey
    let dave = SigningKey.generate().publicKey, oneTime = SigningKey.generate().publicKey
    let stranger = SigningKey.generate().publicKey
    let now = HLClock.parseInstant("2026-06-01T10:00:00.000Z")!

    func member(_ name: String, _ role: Role, _ status: Member.Status, keys: [SSHPublicKey], expiresAt: String? = nil,
                invitationKey: SSHPublicKey? = nil) -> Member {
        Member(name: name, role: role, status: status, keys: keys.map { Member.Key(device: "device", publicKey: $0) },
               addedBy: "alice", addedAt: "2026-01-01T10:00:00.000Z", revokedBy: status == .revoked ? "alice" : nil,
               revokedAt: status == .revoked ? "2026-05-01T10:00:00.000Z" : nil, expiresAt: expiresAt, invitationKey: invitationKey)
    }

    func decide(_ verb: ServeRequest.Verb, _ key: SSHPublicKey, _ members: [Member]?, isAdmin: Bool = false) -> Result<ServerAccess.Admission, ServerRefusal> {
        ServerAccess.decide(ServeRequest(verb: verb, profile: "kid"), key: key.fingerprint, isAdminKey: isAdmin,
                            profile: members.map { .present(Membership($0)) } ?? .absent, now: now)
    }

    func testEachStatusReadsAndWritesAsTheRuleSays() throws {
        let alice = member("alice", .admin, .active, keys: [admin])
        for role in [Role.admin, .editor, .user, .viewer] {
            let members = [alice, member("bob", role, .active, keys: [bob])]
            for verb in [ServeRequest.Verb.upload, .receive] {
                XCTAssertEqual(try decide(verb, bob, members).get(), .init(grant: .member, member: "bob"), "\(role) \(verb)")
            }
        }
        let revoked = [alice, member("bob", .editor, .revoked, keys: [bob])]
        // A revoked member reads (and waits on) the view of its revocation, and writes nothing.
        guard case .failure(let refusal) = decide(.receive, bob, revoked) else { return XCTFail("a revoked member may push") }
        XCTAssertTrue(refusal.message.contains("access removed: alice revoked bob's access to \"kid\""), refusal.message)
        XCTAssertEqual(try decide(.upload, bob, revoked).get(), .init(grant: .revoked, member: "bob"))
        XCTAssertEqual(try decide(.wait, bob, revoked).get(), .init(grant: .revoked, member: "bob"))
        for verb in [ServeRequest.Verb.upload, .receive, .wait] {
            guard case .failure(let strangerRefusal) = decide(verb, stranger, revoked) else { return XCTFail("a stranger got in") }
            XCTAssertTrue(strangerRefusal.message.contains("no profile \"kid\" here that the key \(stranger.fingerprint)"), strangerRefusal.message)
        }
    }

    func testPendingInvitationsUntilTheyExpire() throws {
        let alice = member("alice", .admin, .active, keys: [admin])
        let byKey = member("dave", .editor, .invited, keys: [dave], expiresAt: "2026-06-02T10:00:00.000Z")
        let byLink = member("erin", .user, .invited, keys: [], expiresAt: "2026-06-02T10:00:00.000Z", invitationKey: oneTime)
        XCTAssertEqual(try decide(.receive, dave, [alice, byKey, byLink]).get(), .init(grant: .invited, member: "dave"))
        XCTAssertEqual(try decide(.upload, oneTime, [alice, byKey, byLink]).get(), .init(grant: .invited, member: "erin"))
        var expired = byKey
        expired.expiresAt = "2026-06-01T09:59:59.999Z"
        guard case .failure(let refusal) = decide(.upload, dave, [alice, expired]) else { return XCTFail("an expired invitation got in") }
        XCTAssertTrue(refusal.message.contains("the invitation for dave to \"kid\" expired at 2026-06-01T09:59:59.999Z"), refusal.message)
    }

    func testOnlyTheAdminKeyCreatesAndTheAdminKeyIsNoMember() throws {
        XCTAssertEqual(try decide(.receive, admin, nil, isAdmin: true).get(), .init(grant: .creator, member: nil))
        XCTAssertEqual(try decide(.upload, admin, nil, isAdmin: true).get(), .init(grant: .creator, member: nil))
        XCTAssertThrowsError(try decide(.receive, bob, nil).get())
        // Once the profile exists, the server's admin key is judged by the profile's membership like any other.
        let members = [member("bob", .admin, .active, keys: [bob])]
        XCTAssertThrowsError(try decide(.upload, admin, members, isAdmin: true).get())
        XCTAssertThrowsError(try decide(.receive, admin, members, isAdmin: true).get())
    }

    func testAKeyHeldByAnActiveAndARevokedMemberIsJudgedByTheActiveOne() throws {
        let members = [member("a-old", .editor, .revoked, keys: [bob]), member("bob", .viewer, .active, keys: [bob])]
        XCTAssertEqual(try decide(.receive, bob, members).get(), .init(grant: .member, member: "bob"))
    }
}
