import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// The acceptance rule on its own: every way an acceptance can differ from what was invited is
/// refused, and the two real acceptances (known key, link with a one-time key) pass.
final class AcceptanceTests: XCTestCase {
    private let root = String(repeating: "ab", count: 20)
    private let device = SigningKey.generate()
    private let oneTime = SigningKey.generate()

    private func invited(key: SSHPublicKey?) -> Member {
        Member(name: "dana", role: .editor, status: .invited, keys: key.map { [Member.Key(device: "device", publicKey: $0)] } ?? [],
               addedBy: "alice", addedAt: "2026-01-01T10:00:00.000Z", expiresAt: "2026-01-03T10:00:00.000Z",
               invitationKey: key == nil ? oneTime.publicKey : nil)
    }

    private func accepted(_ before: Member, signedBy link: SigningKey?) -> Member {
        var after = before
        after.status = .active
        after.expiresAt = nil
        after.invitationKey = nil
        after.keys = [Member.Key(device: "ipad", publicKey: device.publicKey)]
        after.acceptance = link.map {
            SSHSignature.sign(Acceptance.message(root: root, member: "dana", key: device.publicKey), with: $0,
                              namespace: Acceptance.namespace)
        }
        return after
    }

    func testAKnownKeyInvitationIsAcceptedByThatKeyOnly() {
        let before = invited(key: device.publicKey)
        XCTAssertNil(Acceptance.problem(before: before, after: accepted(before, signedBy: nil), signer: device.publicKey, root: root))
        let other = SigningKey.generate()
        var stolen = accepted(before, signedBy: nil)
        stolen.keys = [Member.Key(device: "x", publicKey: other.publicKey)]
        XCTAssertEqual(Acceptance.problem(before: before, after: stolen, signer: other.publicKey, root: root),
                       "the invitation is for another key")
    }

    func testALinkInvitationNeedsTheOneTimeKeysSignatureOverThisRootAndKey() {
        let before = invited(key: nil)
        XCTAssertNil(Acceptance.problem(before: before, after: accepted(before, signedBy: oneTime), signer: device.publicKey, root: root))
        let unsigned = accepted(before, signedBy: nil)
        let wrongKey = accepted(before, signedBy: SigningKey.generate())
        for after in [unsigned, wrongKey] {
            XCTAssertEqual(Acceptance.problem(before: before, after: after, signer: device.publicKey, root: root),
                           "the invitation's one-time key did not sign the accepting key")
        }
        // The same acceptance replayed into another profile (another root).
        XCTAssertNotNil(Acceptance.problem(before: before, after: accepted(before, signedBy: oneTime), signer: device.publicKey,
                                           root: String(repeating: "cd", count: 20)))
    }

    func testAnAcceptanceMayChangeNothingButStatusAndKey() {
        let before = invited(key: nil)
        var raised = accepted(before, signedBy: oneTime)
        raised.role = .admin
        var twoKeys = accepted(before, signedBy: oneTime)
        twoKeys.keys.append(Member.Key(device: "spare", publicKey: SigningKey.generate().publicKey))
        var stillPending = accepted(before, signedBy: oneTime)
        stillPending.status = .invited
        for after in [raised, stillPending] {
            XCTAssertEqual(Acceptance.problem(before: before, after: after, signer: device.publicKey, root: root),
                           "an acceptance may only make dana active, as invited")
        }
        XCTAssertEqual(Acceptance.problem(before: before, after: twoKeys, signer: device.publicKey, root: root),
                       "an acceptance must hold exactly the key that signs it")
        // Signed by a key other than the one it adds.
        XCTAssertNotNil(Acceptance.problem(before: before, after: accepted(before, signedBy: oneTime),
                                           signer: SigningKey.generate().publicKey, root: root))
        // A member who is already active cannot "accept" again.
        let active = accepted(before, signedBy: oneTime)
        XCTAssertEqual(Acceptance.problem(before: active, after: active, signer: device.publicKey, root: root),
                       "dana has no pending invitation")
    }

    // MARK: Open invitations

    private func openInvitation(role: Role = .user, uses: Int = 2) -> OpenInvitation {
        OpenInvitation(id: "0123456789abcdef", role: role, uses: uses, expiresAt: "2026-01-02T10:00:00.000Z", invitedBy: "alice",
                       invitedAt: "2026-01-01T10:00:00.000Z", key: oneTime.publicKey)
    }

    private func joined(_ invitation: OpenInvitation, as name: String = "erin", signedBy link: SigningKey) -> Member {
        Member(name: name, role: invitation.role, status: .active, keys: [Member.Key(device: "phone", publicKey: device.publicKey)],
               addedBy: invitation.invitedBy, addedAt: "2026-01-01T11:00:00.000Z",
               acceptance: SSHSignature.sign(Acceptance.message(root: root, member: name, key: device.publicKey), with: link,
                                             namespace: Acceptance.namespace),
               invitation: invitation.id)
    }

    func testJoiningByAnOpenInvitationNeedsAPlaceItsRoleAndItsOneTimeKey() {
        let invitation = openInvitation()
        XCTAssertNil(Acceptance.openProblem(invitation: invitation, used: 1, member: joined(invitation, signedBy: oneTime),
                                            signer: device.publicKey, root: root))
        XCTAssertEqual(Acceptance.openProblem(invitation: invitation, used: 2, member: joined(invitation, signedBy: oneTime),
                                              signer: device.publicKey, root: root),
                       "all 2 places of open invitation 0123456789abcdef were taken")
        XCTAssertEqual(Acceptance.openProblem(invitation: invitation, used: 0, member: joined(invitation, signedBy: SigningKey.generate()),
                                              signer: device.publicKey, root: root),
                       "the open invitation's one-time key did not sign the accepting key")
        var raised = joined(invitation, signedBy: oneTime)
        raised.role = .editor
        var otherInvitation = joined(invitation, signedBy: oneTime)
        otherInvitation.invitation = "fedcba9876543210"
        var pending = joined(invitation, signedBy: oneTime)
        pending.status = .invited
        for member in [raised, otherInvitation, pending] {
            XCTAssertEqual(Acceptance.openProblem(invitation: invitation, used: 0, member: member, signer: device.publicKey, root: root),
                           "joining by open invitation 0123456789abcdef may only add an active user, as it invites")
        }
        var twoKeys = joined(invitation, signedBy: oneTime)
        twoKeys.keys.append(Member.Key(device: "laptop", publicKey: SigningKey.generate().publicKey))
        XCTAssertEqual(Acceptance.openProblem(invitation: invitation, used: 0, member: twoKeys, signer: device.publicKey, root: root),
                       "an acceptance must hold exactly the key that signs it")
        let admins = openInvitation(role: .admin)
        XCTAssertEqual(Acceptance.openProblem(invitation: admins, used: 0, member: joined(admins, signedBy: oneTime),
                                              signer: device.publicKey, root: root),
                       "an open invitation cannot make Admins")
    }

    func testAnOpenInvitationFileRoundTripsAndRefusesWhatItCannotBe() throws {
        let invitation = openInvitation(uses: 5)
        let path = ".concord/invitations/0123456789abcdef.json"
        XCTAssertEqual(try OpenInvitation.decode(invitation.json.canonicalBytes(), path: path), invitation)
        var noUses = invitation.json.objectValue ?? [:]
        noUses["uses"] = .number("0")
        for broken in [#"{"id":"x"}"#, "not json", String(decoding: JSONValue.object(noUses).canonicalBytes(), as: UTF8.self)] {
            XCTAssertThrowsError(try OpenInvitation.decode(Array(broken.utf8), path: path), broken)
        }
    }
}
