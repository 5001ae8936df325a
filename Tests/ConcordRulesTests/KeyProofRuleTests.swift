import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// Key proofs on their own (no git): what a proof binds (key, profile, member), and the rule's pure
/// half, `KeyProof.unproven`, for every kind of writer and every way a key can come or stay.
final class KeyProofRuleTests: XCTestCase {
    let holder = SigningKey.generate()
    let stranger = SigningKey.generate()
    let profileID = "0f6b2a44-5d1e-4c1f-9a57-3f1c2d6e8b90"

    func member(_ name: String, _ role: Role, _ status: Member.Status = .active, keys: [Member.Key] = []) -> Member {
        Member(name: name, role: role, status: status, keys: keys, addedBy: "alice", addedAt: "2026-01-01T00:00:00.000Z")
    }

    func testAProofBindsTheKeyTheProfileAndTheMember() {
        let proof = KeyProof.sign(profileID: profileID, member: "vera", with: holder)
        XCTAssertNil(KeyProof.problem(proof, profileID: profileID, member: "vera", key: holder.publicKey))
        XCTAssertEqual(KeyProof.problem(nil, profileID: profileID, member: "vera", key: holder.publicKey), "it has no proof of possession")
        XCTAssertEqual(KeyProof.problem("not base64!", profileID: profileID, member: "vera", key: holder.publicKey), "its proof is not base64")
        for (id, name) in [("another-profile", "vera"), (profileID, "alice")] {
            XCTAssertTrue(KeyProof.problem(proof, profileID: id, member: name, key: holder.publicKey)?
                .hasPrefix("its proof does not verify for this profile and member") ?? false, "\(id) \(name)")
        }
        // Signed by another key over the holder's key: the signature verifies, but not by the key it adds.
        let forged = KeyProof.sign(profileID: profileID, member: "vera", with: stranger)
        XCTAssertNotNil(KeyProof.problem(forged, profileID: profileID, member: "vera", key: holder.publicKey))
        let otherKeysMessage = Data(SSHSignature.blob(KeyProof.message(profileID: profileID, member: "vera", key: holder.publicKey),
                                                      key: stranger, namespace: KeyProof.namespace)).base64EncodedString()
        XCTAssertEqual(KeyProof.problem(otherKeysMessage, profileID: profileID, member: "vera", key: holder.publicKey),
                       "its proof was signed by another key (\(stranger.publicKey.fingerprint))")
        // Another namespace (a commit signature's, `git`) is no proof.
        let commitSignature = Data(SSHSignature.blob(KeyProof.message(profileID: profileID, member: "vera", key: holder.publicKey),
                                                     key: holder, namespace: "git")).base64EncodedString()
        XCTAssertNotNil(KeyProof.problem(commitSignature, profileID: profileID, member: "vera", key: holder.publicKey))
    }

    func testOnlyAnActiveAdminWritingAnothersFileAddsAKeyWithoutItsProof() {
        let proven = Member.Key(device: "phone", publicKey: holder.publicKey, proof: KeyProof.sign(profileID: profileID, member: "vera", with: holder))
        let bare = Member.Key(device: "phone", publicKey: holder.publicKey)
        let before = member("vera", .viewer)
        for (keys, writer, fails) in [
            ([bare], member("vera", .viewer), true),               // her own file, no proof
            ([proven], member("vera", .viewer), false),            // her own file, her key's proof
            ([bare], member("vera", .admin), true),                // an Admin's own file needs it too
            ([bare], member("alice", .admin), false),              // an Admin vouches for another member
            ([bare], member("alice", .admin, .revoked), true),     // ...only while active
            ([bare], member("alice", .editor), true),              // a non-Admin vouches for no one
        ] as [([Member.Key], Member, Bool)] {
            let after = member("vera", .viewer, keys: keys)
            XCTAssertEqual(KeyProof.unproven(before: before, after: after, writer: writer, profileID: profileID) != nil, fails,
                           "\(writer.name) (\(writer.role), \(writer.status)) adding \(keys[0].proof == nil ? "no" : "a") proof")
        }
        // A key carried over unchanged is not judged again; a changed proof is.
        let vouched = member("vera", .viewer, keys: [bare])
        XCTAssertNil(KeyProof.unproven(before: vouched, after: vouched, writer: member("vera", .viewer), profileID: profileID))
        let renamed = member("vera", .viewer, keys: [Member.Key(device: "other", publicKey: holder.publicKey)])
        XCTAssertNil(KeyProof.unproven(before: vouched, after: renamed, writer: member("vera", .viewer), profileID: profileID))
        let wrongProof = member("vera", .viewer, keys: [Member.Key(device: "phone", publicKey: holder.publicKey,
                                                                   proof: KeyProof.sign(profileID: profileID, member: "vera", with: stranger))])
        XCTAssertNotNil(KeyProof.unproven(before: vouched, after: wrongProof, writer: member("vera", .viewer), profileID: profileID))
        XCTAssertNil(KeyProof.unproven(before: vouched, after: member("vera", .viewer, keys: [proven]), writer: member("vera", .viewer),
                                       profileID: profileID), "the holder's proof replaces the Admin's word")
    }

    func testAMemberFileKeepsItsProofsInCanonicalJSON() throws {
        let proof = KeyProof.sign(profileID: profileID, member: "vera", with: holder)
        let file = member("vera", .viewer, keys: [Member.Key(device: "phone", publicKey: holder.publicKey, proof: proof),
                                                  Member.Key(device: "tablet", publicKey: stranger.publicKey)])
        let bytes = file.json.canonicalBytes()
        XCTAssertEqual(try Member.decode(bytes, path: ".concord/members/vera.json"), file)
        let text = String(decoding: bytes, as: UTF8.self)
        XCTAssertTrue(text.contains(#""proof": "\#(proof)""#), text)
        XCTAssertEqual(text.components(separatedBy: #""proof""#).count, 2, "a key without a proof has no proof field: \(text)")
    }
}
