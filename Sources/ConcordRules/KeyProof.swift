import ConcordModel
import ConcordTrust
import Foundation

/// A key's proof of possession (docs/security.md, "A key belongs to one member"): an SSHSIG by the
/// key itself, namespace `concord-key`, over a fixed message naming the profile id, the member and
/// the key. It is stored in the member file's key entry as `"proof"`, the base64 of the SSHSIG blob
/// (one line, as canonical JSON keeps every other field).
///
/// Only the key's holder can make one, so a member cannot list someone else's key as their own, and
/// a proof made for one profile or member is worth nothing for another. From data format 5 on, a key
/// that enters a member file needs one (`CommitRule.unprovenKey`), except a key an active
/// Admin adds to ANOTHER member's file: that is the Admin's vouching, recorded by the absence of a
/// proof and the commit's Admin signer.
public enum KeyProof {
    /// The SSHSIG namespace of key proofs: a proof is never a commit signature, an invitation's or an
    /// acceptance's, nor any of those a proof.
    public static let namespace = "concord-key"
    /// The first data format whose commits must carry proofs for the keys they add.
    public static let firstFormat = 5

    /// The message a proof signs, version 1:
    /// `concord key proof v1\nprofile <id>\nmember <name>\nkey ssh-ed25519 <base64>\n`.
    public static func message(profileID: String, member: String, key: SSHPublicKey) -> [UInt8] {
        Array("concord key proof v1\nprofile \(profileID)\nmember \(member)\nkey \(key.line(comment: nil))\n".utf8)
    }

    /// The proof that `key`'s holder means it to be `member`'s in profile `profileID`.
    public static func sign(profileID: String, member: String, with key: SigningKey) -> String {
        Data(SSHSignature.blob(message(profileID: profileID, member: member, key: key.publicKey), key: key, namespace: namespace))
            .base64EncodedString()
    }

    /// Why `proof` does not prove that `key` is `member`'s in profile `profileID`; nil when it does.
    public static func problem(_ proof: String?, profileID: String, member: String, key: SSHPublicKey) -> String? {
        guard let proof else { return "it has no proof of possession" }
        guard let blob = Data(base64Encoded: proof) else { return "its proof is not base64" }
        let signer: SSHPublicKey
        do { signer = try SSHSignature.verify(blob: Array(blob), message: message(profileID: profileID, member: member, key: key), namespace: namespace) }
        catch { return "its proof does not verify for this profile and member (\(error.localizedDescription))" }
        return signer == key ? nil : "its proof was signed by another key (\(signer.fingerprint))"
    }

    /// `key` for `member` with its proof, signed by `identity` when the key is the identity's own.
    package static func key(device: String, _ key: SSHPublicKey, member: String, profileID: String, signedBy identity: Identity) -> Member.Key {
        let proof = key == identity.key.publicKey ? sign(profileID: profileID, member: member, with: identity.key) : nil
        return Member.Key(device: device, publicKey: key, proof: proof)
    }
}

extension KeyProof {
    /// The validity rule's half of "only its holder can add it", as a pure function: the first key
    /// member file `after` holds that `before` (the same file at the parent, or at the policy merge for
    /// a merge; nil when absent) did not hold with the same proof, and whose proof does not prove it
    /// `after.name`'s in profile `profileID`, with why; nil when there is none. Keys carried over
    /// unchanged are not checked again (they were judged when they came), and an active Admin
    /// writing ANOTHER member's file (`writer`, as the commit is judged) vouches for what they add.
    package static func unproven(before: Member?, after: Member, writer: Member, profileID: String) -> (key: Member.Key, problem: String)? {
        if writer.role == .admin, writer.status == .active, writer.name != after.name { return nil }
        for key in after.keys {
            if let old = before?.keys.first(where: { $0.publicKey == key.publicKey }), old.proof == key.proof { continue }
            if let problem = problem(key.proof, profileID: profileID, member: after.name, key: key.publicKey) { return (key, problem) }
        }
        return nil
    }
}
