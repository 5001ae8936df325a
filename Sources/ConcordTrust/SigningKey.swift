import Crypto
import Foundation

/// An Ed25519 private key, readable from and writable to OpenSSH's unencrypted private key file.
///
/// File layout (see docs in shared/notes/ssh-formats.md): armor `OPENSSH PRIVATE KEY` around
/// `openssh-key-v1\0` ‖ string "none" ‖ string "none" ‖ string "" ‖ uint32 1 ‖ string(public blob)
/// ‖ string(private section), the private section being check ‖ check ‖ string "ssh-ed25519" ‖
/// string(public key) ‖ string(seed ‖ public key) ‖ string(comment) ‖ padding 1, 2, 3, … to 8 bytes.
public struct SigningKey: Sendable {
    static let armorLabel = "OPENSSH PRIVATE KEY"
    static let magic = Array("openssh-key-v1".utf8) + [0]

    /// The 32-byte seed. Secret: never log it. (Kept as bytes rather than as swift-crypto's
    /// `Curve25519.Signing.PrivateKey`, which is not `Sendable`; the key is rebuilt to sign.)
    let seed: [UInt8]

    /// The matching public key.
    public let publicKey: SSHPublicKey

    private init(privateKey: Curve25519.Signing.PrivateKey) {
        seed = Array(privateKey.rawRepresentation)
        // A swift-crypto Ed25519 public key is always 32 bytes, so this cannot fail.
        guard let key = try? SSHPublicKey(raw: Array(privateKey.publicKey.rawRepresentation)) else {
            preconditionFailure("swift-crypto returned an Ed25519 public key that is not 32 bytes")
        }
        publicKey = key
    }

    /// A new random key.
    public static func generate() -> SigningKey {
        SigningKey(privateKey: Curve25519.Signing.PrivateKey())
    }

    /// The key derived from a 32-byte Ed25519 seed (the RFC 8032 private key).
    /// - Throws: `TrustError.invalidSeedLength` if `seed` is not 32 bytes.
    public init(seed: [UInt8]) throws(TrustError) {
        guard seed.count == 32 else { throw .invalidSeedLength(seed.count) }
        do {
            self.init(privateKey: try Curve25519.Signing.PrivateKey(rawRepresentation: seed))
        } catch {
            throw .invalidSeedLength(seed.count)
        }
    }

    /// The Ed25519 signature (64 bytes) of `data`.
    func signature(for data: [UInt8]) -> [UInt8] {
        do {
            return Array(try Curve25519.Signing.PrivateKey(rawRepresentation: seed).signature(for: data))
        } catch {
            preconditionFailure("Ed25519 signing failed: \(error)")
        }
    }

    /// This key as an unencrypted OpenSSH private key file, byte for byte what
    /// `ssh-keygen -t ed25519 -N '' -C comment` writes (except for the random check integers):
    /// base64 wrapped at 70 columns, trailing newline.
    public func openSSHPrivateKeyFile(comment: String) -> String {
        openSSHPrivateKeyFile(comment: comment, check: UInt32.random(in: .min ... .max))
    }

    /// The private key file with a given check integer (fixed in tests to compare bytes).
    func openSSHPrivateKeyFile(comment: String, check: UInt32) -> String {
        let pub = publicKey
        var secret = SSHWriter()
        secret.uint32(check)
        secret.uint32(check)
        secret.string(SSHPublicKey.keyType)
        secret.string(pub.raw)
        secret.string(seed + pub.raw)
        secret.string(comment)
        var pad: UInt8 = 1
        while secret.bytes.count % 8 != 0 {
            secret.raw([pad])
            pad += 1
        }
        var file = SSHWriter()
        file.raw(Self.magic)
        file.string("none")
        file.string("none")
        file.string("")
        file.uint32(1)
        file.string(pub.wireBlob)
        file.string(secret.bytes)
        return Armor.wrap(file.bytes, label: Self.armorLabel)
    }

    /// Reads an unencrypted Ed25519 OpenSSH private key file (written by ssh-keygen or by us).
    /// - Throws: `TrustError.passphraseProtectedKey` for an encrypted key,
    ///   `TrustError.privateKeyCheckMismatch` / `.privateKeyPublicMismatch` for a corrupt one,
    ///   `TrustError.unsupportedKeyType` for a non-Ed25519 key, `.malformedPrivateKey` otherwise.
    public init(openSSHPrivateKeyFile text: String) throws(TrustError) {
        self = try Self.parseOpenSSHPrivateKeyFile(text).key
    }

    /// Reads an unencrypted Ed25519 OpenSSH private key file and returns the key and its comment.
    /// - Throws: the same errors as `init(openSSHPrivateKeyFile:)`.
    public static func parseOpenSSHPrivateKeyFile(
        _ text: String
    ) throws(TrustError) -> (key: SigningKey, comment: String) {
        let bytes = try Armor.unwrap(text, label: armorLabel) { .malformedPrivateKey($0) }
        let truncated = TrustError.malformedPrivateKey("truncated key data")
        var file = SSHReader(bytes, truncated: truncated)
        guard try file.raw(magic.count) == magic else {
            throw .malformedPrivateKey("missing 'openssh-key-v1' magic")
        }
        let cipher = try file.text()
        let kdf = try file.text()
        _ = try file.string()  // KDF options
        guard cipher == "none", kdf == "none" else { throw .passphraseProtectedKey }
        let count = try file.uint32()
        guard count == 1 else { throw .malformedPrivateKey("\(count) keys in one file, expected 1") }
        let outerPublic = try SSHPublicKey(wireBlob: try file.string())
        let section = try file.string()
        guard file.isAtEnd else { throw .malformedPrivateKey("trailing bytes after the private section") }
        guard section.count % 8 == 0 else {
            throw .malformedPrivateKey("private section length is not a multiple of 8")
        }

        var secret = SSHReader(section, truncated: truncated)
        guard try secret.uint32() == (try secret.uint32()) else { throw .privateKeyCheckMismatch }
        let type = try secret.text()
        guard type == SSHPublicKey.keyType else { throw .unsupportedKeyType(type) }
        let innerPublic = try SSHPublicKey(raw: try secret.string())
        let pair = try secret.string()
        guard pair.count == 64 else {
            throw .malformedPrivateKey("Ed25519 private key is \(pair.count) bytes, expected 64")
        }
        let comment = try secret.text()
        let padding = secret.remaining
        guard padding.count < 8, padding.enumerated().allSatisfy({ $0.element == UInt8($0.offset + 1) }) else {
            throw .malformedPrivateKey("bad padding")
        }

        let key = try SigningKey(seed: Array(pair[0..<32]))
        let derived = key.publicKey
        guard derived.raw == Array(pair[32..<64]), derived == innerPublic, derived == outerPublic else {
            throw .privateKeyPublicMismatch
        }
        return (key, comment)
    }
}
