import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Sharing through `ConcordStore`, as an app calls it: the three kinds of invitation as typed values
/// whose text round-trips, accepting one (and a used or expired one refused with
/// `invitationRefused`), and every call a non-Admin may not make refused with exactly
/// `notAllowed(member:role:action:needs:…)`, blocking and `async`, destroy included. A bare path remote.
final class StoreSharingAPITests: ConcordTestCase {
    /// An identity in a home of its own under the sandbox.
    private func identity(_ member: String, device: String) throws -> Identity {
        try Identity.create(member: member, device: device, in: sandbox.appendingPathComponent("home-\(member)-\(device)"))
    }

    /// `identity`'s environment, its wall clock `ahead` milliseconds past the system's.
    private func environment(_ identity: Identity, ahead: Int64 = 0) -> ConcordEnvironment {
        ConcordEnvironment(home: identity.home, wallClock: { ConcordEnvironment.systemClock() + ahead })
    }

    /// Alice's store of "Care team", with a bare path remote as origin and Bob (an editor) added and pushed.
    private func careTeam() throws -> (remote: URL, alice: ConcordStore, other: Identity) {
        try publishedCareTeam(other: "bob", otherDevice: "phone")
    }

    func testNamedLinkAndOpenInvitationsAreTypedValuesAnInviteeAccepts() async throws {
        let (remote, store, _) = try careTeam()
        let carol = try identity("carol", device: "tablet")
        let named = try await store.share("carol", role: .user, key: carol.key.publicKey, device: "tablet", expiresIn: 3600)
        XCTAssertEqual(named.invitation.form, .named)
        XCTAssertEqual(named.member.status, .invited)
        XCTAssertNotNil(named.commit)
        let link = try await store.shareLink("dana", role: .viewer, expiresIn: 3600)
        XCTAssertEqual(link.invitation.form, .link)
        XCTAssertEqual(link.invitation.member, "dana")
        XCTAssertEqual(link.invitation.role, .viewer)
        XCTAssertEqual(link.invitation.profileName, "Care team")
        XCTAssertEqual(try Invitation(text: link.invitation.text), link.invitation, "the text an app sends parses back to the same value")
        let open = try await store.shareOpen(role: .user, uses: 2, expiresIn: 3600)
        XCTAssertEqual(open.text.form, .open(id: open.invitation.id, uses: 2))
        let listed = try await store.openInvitations()
        XCTAssertEqual(listed.map(\.invitation.id), [open.invitation.id])
        XCTAssertEqual(listed.map(\.used), [0])
        _ = try await store.sync()

        let dana = try identity("dana", device: "ipad")
        let (danaStore, report) = try await ConcordStore.accept(try Invitation(text: link.invitation.text),
                                                                 into: sandbox.appendingPathComponent("dana"),
                                                                 identity: dana, environment: environment(dana))
        XCTAssertEqual(report.sent, 1)
        let members = try await danaStore.read { try $0.members().map { "\($0.name) \($0.role.rawValue) \($0.status.rawValue)" } }
        XCTAssertEqual(members, ["alice admin active", "bob editor active", "carol user invited", "dana viewer active"])
        let (carolStore, _) = try await ConcordStore.accept(named.invitation, into: sandbox.appendingPathComponent("carol"),
                                                            identity: carol, environment: environment(carol))
        let carolsStatus = try await carolStore.read { try $0.members().first { $0.name == "carol" }?.status }
        XCTAssertEqual(carolsStatus, .active)

        // The link once more, from another device of Dana's: used, refused, nothing left behind.
        let replay = try identity("dana", device: "phone")
        let used = concordError {
            try ConcordStore.accept(link.invitation, into: self.sandbox.appendingPathComponent("replay"), identity: replay,
                                    environment: self.environment(replay))
        }
        guard case .invitationRefused(let member, let reason)? = used else { return XCTFail("not invitationRefused: \(String(describing: used))") }
        XCTAssertEqual(member, "dana")
        XCTAssertTrue(reason.contains("already used"), reason)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("replay").path))

        // A link accepted after it expired: refused before anything is cloned.
        let late = try await store.shareLink("erin", role: .viewer, expiresIn: 60)
        _ = try await store.sync()
        let erin = try identity("erin", device: "phone")
        let expired = concordError {
            try ConcordStore.accept(late.invitation, into: self.sandbox.appendingPathComponent("erin"), identity: erin,
                                    environment: self.environment(erin, ahead: 120_000))
        }
        guard case .invitationRefused("erin", let why)? = expired else { return XCTFail("not invitationRefused: \(String(describing: expired))") }
        XCTAssertTrue(why.contains("expired"), why)
        XCTAssertEqual(try git(["rev-parse", "main"], in: remote).status, 0)
    }

    func testANonAdminsSharingCallsAreRefusedWithNotAllowed() async throws {
        let (remote, aliceStore, bob) = try careTeam()
        let store = try await ConcordStore.clone(url: remote.path, into: sandbox.appendingPathComponent("bob"), identity: bob,
                                           environment: environment(bob))
        let head = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        func refused(_ action: String) -> ConcordError {
            .notAllowed(member: "bob", role: .editor, action: action, needs: .admin, profile: "Care team", actingOn: nil)
        }
        XCTAssertEqual(concordError { try store.share("erin", role: .viewer, key: nil, expiresIn: 3600) }, refused("changing its members"))
        XCTAssertEqual(concordError { try store.shareLink("erin", role: .viewer, expiresIn: 3600) }, refused("changing its members"))
        XCTAssertEqual(concordError { try store.shareOpen(role: .user, uses: 3, expiresIn: 3600) }, refused("opening an invitation"))
        XCTAssertEqual(concordError { try store.revoke("alice") }, refused("revoking members"))
        XCTAssertEqual(concordError { try store.setRole("alice", to: .viewer) }, refused("changing roles"))
        XCTAssertEqual(concordError { try store.setRole("bob", to: .admin) }, refused("changing roles"), "no one promotes themselves")
        XCTAssertEqual(concordError { try store.destroy() }, refused("deleting the profile"))
        // The async variants refuse the same way.
        var errors = [ConcordError?]()
        for call in [{ _ = try await store.share("erin", role: .viewer, key: nil, expiresIn: 3600) },
                     { _ = try await store.shareLink("erin", role: .viewer, expiresIn: 3600) },
                     { try await store.revoke("alice") }, { try await store.setRole("alice", to: .viewer) },
                     { _ = try await store.destroy() }] as [@Sendable () async throws -> Void] {
            do { try await call(); errors.append(nil) } catch { errors.append(error as? ConcordError) }
        }
        XCTAssertEqual(errors, [refused("changing its members"), refused("changing its members"), refused("revoking members"),
                                refused("changing roles"), refused("deleting the profile")])
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: store.directory), head, "a refusal commits nothing")
        XCTAssertTrue(FileManager.default.fileExists(atPath: store.directory.path), "a refused destroy deletes nothing")
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: remote), head)

        // What a member may do: leave. Then the Admin destroys the profile: the remote keeps only the notice.
        let left = try await store.leave()
        XCTAssertEqual(left.value.status, .revoked)
        _ = try await store.sync()
        _ = try await aliceStore.sync()
        let report = try await aliceStore.destroy()
        XCTAssertTrue(report.copyDeleted)
        XCTAssertEqual(report.deleted.map(\.remote), ["origin"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: aliceStore.directory.path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: remote.path), [DeletionNotice.fileName])
        // The store ended with its copy: a call throws the deletion and re-creates nothing.
        guard case .profileDeleted(_, let by, _)? = concordError({ try aliceStore.read { try $0.list().items.count } }) else {
            return XCTFail("a read after destroy did not throw profileDeleted")
        }
        XCTAssertEqual(by, "alice")
        XCTAssertFalse(aliceStore.isOpen)
        XCTAssertFalse(FileManager.default.fileExists(atPath: aliceStore.directory.path), "a call after destroy re-created the folder")
    }

    /// The `ConcordError` `body` threw, nil if it threw none or another error.
    private func concordError(_ body: () throws -> Any) -> ConcordError? {
        do { _ = try body() } catch { return error as? ConcordError }
        return nil
    }
}
