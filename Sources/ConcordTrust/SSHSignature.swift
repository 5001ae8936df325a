import Crypto
import Foundation

/// SSHSIG signatures, as made by `ssh-keygen -Y sign` and checked by `ssh-keygen -Y verify` and git.
///
/// Blob: `SSHSIG` ‖ uint32 1 ‖ string(public key blob) ‖ string(namespace) ‖ string("") ‖
/// string(hash algorithm) ‖ string(string("ssh-ed25519") ‖ string(64-byte signature)).
/// The Ed25519 signature covers `SSHSIG` ‖ string(namespace) ‖ string("") ‖ string(hash algorithm)
/// ‖ string(hash of the message), not the message itself.
public enum SSHSignature {
    static let armorLabel = "SSH SIGNATURE"
    static let magic = Array("SSHSIG".utf8)

    /// Signs `message` and returns the armored signature.
    ///
    /// The text is byte-identical to the file `ssh-keygen -Y sign -n <namespace>` writes for the same
    /// key and message: `-----BEGIN SSH SIGNATURE-----`, base64 wrapped at 70 columns,
    /// `-----END SSH SIGNATURE-----`, and a trailing newline after the END line. Git keeps that
    /// newline (the `gpgsig` header ends with the END line), and libgit2's
    /// `git_commit_create_with_signature` accepts it. (Byte identity relies on Ed25519 being
    /// deterministic, which holds for swift-crypto's BoringSSL backend; Apple's CryptoKit randomizes
    /// signatures, so on Apple platforms the text differs from ssh-keygen's but still verifies.)
    public static func sign(_ message: some Collection<UInt8>, with key: SigningKey, namespace: String = "git") -> String {
        armor(blob(Array(message), key: key, namespace: namespace))
    }

    /// Wraps an SSHSIG blob in `SSH SIGNATURE` armor exactly as ssh-keygen does (70 columns,
    /// trailing newline).
    public static func armor(_ blob: [UInt8]) -> String {
        Armor.wrap(blob, label: armorLabel)
    }

    /// The SSHSIG blob (unarmored) for `message`, hashed with SHA-512: what a document stores when
    /// it keeps a signature on one line (base64) rather than armored.
    public static func blob(_ message: [UInt8], key: SigningKey, namespace: String) -> [UInt8] {
        let digest = Array(SHA512.hash(data: message))
        let signature = key.signature(for: signedData(namespace: namespace, hashAlgorithm: "sha512", digest: digest))
        var inner = SSHWriter()
        inner.string(SSHPublicKey.keyType)
        inner.string(signature)
        var blob = SSHWriter()
        blob.raw(magic)
        blob.uint32(1)
        blob.string(key.publicKey.wireBlob)
        blob.string(namespace)
        blob.string("")
        blob.string("sha512")
        blob.string(inner.bytes)
        return blob.bytes
    }

    /// What the Ed25519 signature is computed over.
    static func signedData(namespace: String, hashAlgorithm: String, digest: [UInt8]) -> [UInt8] {
        var data = SSHWriter()
        data.raw(magic)
        data.string(namespace)
        data.string("")
        data.string(hashAlgorithm)
        data.string(digest)
        return data.bytes
    }

    /// Verifies an armored SSHSIG signature over `message` and returns the key that made it.
    ///
    /// The armor may have a leading space on each line (as in a git commit's `gpgsig` header) and
    /// CRLF line ends. This checks the signature is cryptographically valid for the embedded key;
    /// whether that key is trusted is the caller's decision.
    /// - Throws: `TrustError.malformedSignatureArmor`, `.malformedSignature`,
    ///   `.unsupportedSignatureVersion`, `.namespaceMismatch`, `.unsupportedHashAlgorithm`,
    ///   `.unsupportedKeyType`, `.unsupportedSignatureType` or `.signatureMismatch`.
    public static func verify(
        _ armored: String, message: some Collection<UInt8>, namespace: String = "git"
    ) throws(TrustError) -> SSHPublicKey {
        let bytes = try Armor.unwrap(armored, label: armorLabel) { .malformedSignatureArmor($0) }
        return try verify(blob: bytes, message: message, namespace: namespace)
    }

    /// Verifies an unarmored SSHSIG blob over `message` and returns the key that made it; throws
    /// as `verify(_:message:namespace:)` does.
    public static func verify(
        blob bytes: [UInt8], message: some Collection<UInt8>, namespace: String
    ) throws(TrustError) -> SSHPublicKey {
        var blob = SSHReader(bytes, truncated: .malformedSignature("truncated signature blob"))
        guard try blob.raw(magic.count) == magic else { throw .malformedSignature("missing 'SSHSIG' magic") }
        let version = try blob.uint32()
        guard version == 1 else { throw .unsupportedSignatureVersion(version) }
        let key = try SSHPublicKey(wireBlob: try blob.string())
        let signedNamespace = try blob.text()
        _ = try blob.string()  // reserved
        let hashAlgorithm = try blob.text()
        let inner = try blob.string()
        guard blob.isAtEnd else { throw .malformedSignature("trailing bytes after the signature") }

        guard signedNamespace == namespace else {
            throw .namespaceMismatch(expected: namespace, found: signedNamespace)
        }
        let digest: [UInt8]
        switch hashAlgorithm {
        case "sha512": digest = Array(SHA512.hash(data: Array(message)))
        case "sha256": digest = Array(SHA256.hash(data: Array(message)))
        default: throw .unsupportedHashAlgorithm(hashAlgorithm)
        }

        var signature = SSHReader(inner, truncated: .malformedSignature("truncated Ed25519 signature"))
        let type = try signature.text()
        guard type == SSHPublicKey.keyType else { throw .unsupportedSignatureType(type) }
        let raw = try signature.string()
        guard raw.count == 64, signature.isAtEnd else {
            throw .malformedSignature("Ed25519 signature is not exactly 64 bytes")
        }
        let data = signedData(namespace: signedNamespace, hashAlgorithm: hashAlgorithm, digest: digest)
        guard try key.cryptoKey.isValidSignature(raw, for: data) else { throw .signatureMismatch }
        return key
    }
}
