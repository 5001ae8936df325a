import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// The access rule on its own (no git): every role against every file of the aac and screenplay
/// kinds, the Admin-only files, own and other member files, and who may sign.
final class AccessRuleTests: XCTestCase {
    let key = SigningKey.generate().publicKey
    let otherKey = SigningKey.generate().publicKey

    func member(_ name: String, _ role: Role, _ status: Member.Status = .active, keys: [SSHPublicKey]? = nil) -> Member {
        Member(name: name, role: role, status: status, keys: (keys ?? [key]).map { Member.Key(device: "tablet", publicKey: $0) },
               addedBy: "alice", addedAt: "2026-01-01T00:00:00.000Z")
    }

    func testEachRoleWritesExactlyTheKindsWhoseWritersItReaches() throws {
        for template in [Template.aac, .screenplay, .sessions] {
            let kinds = template.kinds
            for kind in kinds.kinds {
                let path = kind.policy == .append ? "\(kind.directory)/2026-01-01.jsonl" : kind.recordPath(try RecordID("x1"))
                for role in Role.allCases {
                    let verdict = AccessRule.mayChange(path, by: member("m", role), kinds: kinds)
                    if role >= kind.writers {
                        XCTAssertNil(verdict, "\(role) writing \(kind.name)")
                    } else {
                        XCTAssertEqual(verdict, "\(role.title)s may not write \(kind.name)", "\(role) writing \(kind.name)")
                    }
                }
            }
        }
    }

    func testProfileDocumentsAndOtherMembersAreAdminOnly() {
        let kinds = Template.aac.kinds
        for path in [KindsTable.path, ".concord/profile.json", ".gitattributes", ".concord/members/bob.json",
                     ".concord/invitations/0123456789abcdef.json", "unknown/x1.json"] {
            for role in Role.allCases {
                let verdict = AccessRule.mayChange(path, by: member("m", role), kinds: kinds)
                XCTAssertEqual(verdict == nil, role == .admin, "\(role) changing \(path): \(verdict ?? "allowed")")
            }
        }
    }

    func testAMemberMayChangeOnlyTheKeysInTheirOwnFile() {
        let kinds = Template.aac.kinds
        let before = member("vera", .viewer)
        let withKey = member("vera", .viewer, keys: [key, otherKey])
        let promoted = member("vera", .admin)
        let revived = member("vera", .viewer, .invited)
        func verdict(_ after: [UInt8]?, before old: [UInt8]? = before.json.canonicalBytes()) -> String? {
            AccessRule.mayChange(".concord/members/vera.json", by: before, kinds: kinds, ownMemberFile: (old, after))
        }
        XCTAssertNil(verdict(withKey.json.canonicalBytes()), "adding a device key")
        XCTAssertNil(verdict(before.json.canonicalBytes(), before: withKey.json.canonicalBytes()), "removing a device key")
        XCTAssertNotNil(verdict(promoted.json.canonicalBytes()), "a new role")
        XCTAssertNotNil(verdict(revived.json.canonicalBytes()), "a new status")
        XCTAssertNotNil(verdict(nil), "removing the file")
        XCTAssertNotNil(verdict(withKey.json.canonicalBytes(), before: nil), "creating one's own file")
        var extra = withKey.json
        if case .object(var fields) = extra { fields["expiresAt"] = .string("2099-01-01"); extra = .object(fields) }
        XCTAssertNotNil(verdict(extra.canonicalBytes()), "a new field riding along with a key")
    }

    /// `concord leave`: a member may revoke themselves, dropping every key, and nothing else.
    func testAMemberMayLeaveButNotOtherwiseChangeTheirStatus() {
        let kinds = Template.aac.kinds
        let before = member("vera", .viewer)
        func left(by: String = "vera", keys: [SSHPublicKey] = [], at: String? = "2026-05-01T10:00:00.000Z", role: Role = .viewer) -> [UInt8] {
            var gone = member("vera", role, .revoked, keys: keys)
            gone.revokedBy = by
            gone.revokedAt = at
            return gone.json.canonicalBytes()
        }
        func verdict(_ after: [UInt8]) -> String? {
            AccessRule.mayChange(".concord/members/vera.json", by: before, kinds: kinds, ownMemberFile: (before.json.canonicalBytes(), after))
        }
        XCTAssertNil(verdict(left()), "leaving")
        XCTAssertNotNil(verdict(left(keys: [key])), "leaving but keeping a key")
        XCTAssertNotNil(verdict(left(by: "alice")), "a revocation in an Admin's name")
        XCTAssertNotNil(verdict(left(at: nil)), "no time")
        XCTAssertNotNil(verdict(left(role: .admin)), "leaving as an Admin")
    }

    /// A conflict copy the policy merge writes is not a change of the merge's signer (rule 3 compares
    /// the merge with the recomputed policy merge); one written by hand is an Admin's to write.
    /// A record file in another bucket than its id's is named as that, not as a new kind (the second
    /// red-team pass's repro-S: it read "only Admins may add kinds").
    func testARecordInTheWrongBucketIsNamedAsSuch() throws {
        let kinds = Template.aac.kinds
        let right = try XCTUnwrap(kinds.kinds.first { $0.policy != .append }).recordPath(try RecordID("pie"))
        let wrong = right.split(separator: "/").enumerated().map { $0.offset == 1 ? ($0.element == "00" ? "01" : "00") : String($0.element) }
            .joined(separator: "/")
        XCTAssertNotEqual(wrong, right)
        let verdict = AccessRule.mayChange(wrong, by: member("m", .editor), kinds: kinds)
        XCTAssertEqual(verdict, "it is a record in the wrong bucket directory, where no record lives (each record's bucket is set by its id)")
        XCTAssertEqual(AccessRule.mayChange("notakind/x.json", by: member("m", .editor), kinds: kinds)?
            .hasPrefix("it is not a file of the kinds in the parent's .concord/kinds.json (only Admins may add kinds)"), true)
    }

    func testConflictCopiesByHandAreAdminOnly() {
        let path = ".concord/conflicts/vocabulary/ab/x1.0123456.json"
        XCTAssertNil(AccessRule.mayChange(path, by: member("m", .admin), kinds: Template.aac.kinds))
        XCTAssertNotNil(AccessRule.mayChange(path, by: member("m", .editor), kinds: Template.aac.kinds))
    }

    func testOnlyActiveMembersSignAndARootNeedsAnAdmin() {
        let membership = Membership([member("alice", .admin), member("eddie", .editor, .revoked, keys: [otherKey])])
        guard case .success(let signer) = AccessRule.signer(key, in: membership) else { return XCTFail("alice is active") }
        XCTAssertEqual(signer.label, "alice@tablet")
        guard case .failure(let revoked) = AccessRule.signer(otherKey, in: membership) else { return XCTFail("eddie is revoked") }
        XCTAssertEqual(revoked.signer, "eddie@tablet")
        XCTAssertEqual(revoked.reason, "eddie is revoked, not an active member")
        guard case .failure(let unknown) = AccessRule.signer(SigningKey.generate().publicKey, in: membership) else { return XCTFail("unknown key") }
        XCTAssertTrue(unknown.signer.hasPrefix("an unknown key (SHA256:"), unknown.signer)
        let editorRoot = Membership([member("eddie", .editor)])
        guard case .failure = AccessRule.rootSigner(key, in: editorRoot) else { return XCTFail("a root needs an Admin") }
    }
}
