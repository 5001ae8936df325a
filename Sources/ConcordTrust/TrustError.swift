import Foundation

/// Everything that can go wrong while reading or writing keys, signatures and identities.
///
/// Each case's `errorDescription` is one line that says what went wrong and what to do next.
public enum TrustError: Error, Sendable, Equatable, LocalizedError {
    // MARK: Public keys
    /// An Ed25519 public key must be exactly 32 bytes; the associated value is the length given.
    case invalidPublicKeyLength(Int)
    /// A key of a type other than `ssh-ed25519` (the associated value) was offered.
    case unsupportedKeyType(String)
    /// A public key line or wire blob could not be parsed; the associated value says why.
    case malformedPublicKey(String)

    // MARK: Private keys
    /// An Ed25519 seed must be exactly 32 bytes; the associated value is the length given.
    case invalidSeedLength(Int)
    /// An OpenSSH private key file could not be parsed; the associated value says why.
    case malformedPrivateKey(String)
    /// The private key file is encrypted with a passphrase, which Concord cannot read.
    case passphraseProtectedKey
    /// The two check integers of an unencrypted private key file differ (the file is corrupt).
    case privateKeyCheckMismatch
    /// The public key stored in a private key file does not belong to its seed.
    case privateKeyPublicMismatch

    // MARK: Signatures
    /// An armored SSH signature could not be unwrapped; the associated value says why.
    case malformedSignatureArmor(String)
    /// The SSHSIG blob inside the armor could not be parsed; the associated value says why.
    case malformedSignature(String)
    /// The SSHSIG blob has a version other than 1.
    case unsupportedSignatureVersion(UInt32)
    /// The signature was made for another namespace than the one being verified.
    case namespaceMismatch(expected: String, found: String)
    /// The SSHSIG hash algorithm is neither `sha512` nor `sha256`.
    case unsupportedHashAlgorithm(String)
    /// The signature algorithm is not `ssh-ed25519`.
    case unsupportedSignatureType(String)
    /// The Ed25519 signature does not match the message and key.
    case signatureMismatch

    // MARK: Identity
    /// There is no `identity.json` in the given Concord home.
    case noIdentity(URL)
    /// An identity (or part of one, the associated file) already exists and would be overwritten.
    case identityExists(URL)
    /// A member or device name is not 1–64 characters of `[A-Za-z0-9._-]` or starts with `.` or `-`.
    case invalidName(kind: String, value: String)
    /// The private key file is readable or writable by group or others.
    case insecureKeyFileMode(URL, mode: UInt16)
    /// `identity.json` exists but its private key file is missing.
    case missingPrivateKey(URL)
    /// `identity.json` could not be parsed; the associated value says why.
    case malformedIdentityFile(URL, String)
    /// `identity.json` was written by a newer Concord with a format this version does not know.
    case unsupportedIdentityFormat(URL, version: Int)
    /// A file system operation failed; `operation` names it and `reason` is the system's message.
    case fileSystem(URL, operation: String, reason: String)

    /// One line: what went wrong and what to do about it. The key, signature and identity-file
    /// problems of one family read alike (`malformed`, `unsupported`, `wrongLength`, `corruptPrivateKey`).
    public var errorDescription: String? {
        switch self {
        case .invalidPublicKeyLength(let n):
            return Self.wrongLength("public key", got: n) + "; use an ssh-ed25519 key"
        case .invalidSeedLength(let n):
            return Self.wrongLength("seed", got: n)
        case .unsupportedKeyType(let type):
            return Self.unsupported("key type '\(type)'", "Concord only supports ssh-ed25519 keys; make one with 'ssh-keygen -t ed25519'")
        case .unsupportedSignatureVersion(let v):
            return Self.unsupported("SSH signature version \(v)", "only version 1 is supported")
        case .unsupportedHashAlgorithm(let alg):
            return Self.unsupported("SSH signature hash algorithm '\(alg)'", "only sha512 and sha256 are supported")
        case .unsupportedSignatureType(let type):
            return Self.unsupported("signature type '\(type)'", "only ssh-ed25519 signatures are supported")
        case .malformedPublicKey(let why):
            return Self.malformed("ssh-ed25519 public key", why, "expected 'ssh-ed25519 AAAA… [comment]'")
        case .malformedPrivateKey(let why):
            return Self.malformed("OpenSSH private key file", why, "expected an unencrypted key written by 'ssh-keygen -t ed25519 -N \"\"'")
        case .malformedSignatureArmor(let why):
            return Self.malformed("SSH signature armor", why, "expected '-----BEGIN SSH SIGNATURE-----' … '-----END SSH SIGNATURE-----'")
        case .malformedSignature(let why):
            return Self.malformed("SSH signature", why, "the signature is corrupt or truncated")
        case .malformedIdentityFile(let file, let why):
            return Self.malformed("identity file \(file.path)", why, "fix it or create a new identity")
        case .passphraseProtectedKey:
            return "passphrase-protected private keys are not supported; remove the passphrase with "
                + "'ssh-keygen -p -N \"\" -f FILE' or create a new key"
        case .privateKeyCheckMismatch:
            return Self.corruptPrivateKey("its check integers differ")
        case .privateKeyPublicMismatch:
            return Self.corruptPrivateKey("its public key does not match its seed")
        case .namespaceMismatch(let expected, let found):
            return "signature namespace is '\(found)' but '\(expected)' was expected; "
                + "the signature was made for another purpose"
        case .signatureMismatch:
            return "bad signature: it does not match the signed data and key (data tampered with, "
                + "or signed by another key)"
        case .noIdentity(let home):
            return "no identity in \(home.path): run 'concord identity new --name NAME --device DEVICE' first"
        case .identityExists(let file):
            return "an identity already exists (\(file.path)); refusing to overwrite it: remove it "
                + "first or use another CONCORD_HOME"
        case .invalidName(let kind, let value):
            return "invalid \(kind) name '\(value)': use 1–64 characters of A-Z a-z 0-9 . _ - "
                + "not starting with '.' or '-'"
        case .insecureKeyFileMode(let file, let mode):
            return "private key \(file.path) has mode \(String(mode, radix: 8)), readable by others; "
                + "run 'chmod 600 \(file.path)'"
        case .missingPrivateKey(let file):
            return "private key \(file.path) is missing; restore it from a backup or create a new identity"
        case .unsupportedIdentityFormat(let file, let version):
            return "identity file \(file.path) has formatVersion \(version), newer than this Concord "
                + "understands; upgrade Concord"
        case .fileSystem(let file, let operation, let reason):
            return "cannot \(operation) \(file.path): \(reason)"
        }
    }

    /// "invalid Ed25519 `what`: expected 32 bytes, got `count`".
    private static func wrongLength(_ what: String, got count: Int) -> String {
        "invalid Ed25519 \(what): expected 32 bytes, got \(count)"
    }

    /// "unsupported `what`: `supported`", where `what` names the thing and the value offered.
    private static func unsupported(_ what: String, _ supported: String) -> String {
        "unsupported \(what): \(supported)"
    }

    /// "malformed `what` (`why`); `next`": what could not be parsed, why, and what was expected or what to do.
    private static func malformed(_ what: String, _ why: String, _ next: String) -> String {
        "malformed \(what) (\(why)); \(next)"
    }

    /// A private key file whose parts disagree (`why`): it cannot be repaired, only restored or replaced.
    private static func corruptPrivateKey(_ why: String) -> String {
        "private key file is corrupt (\(why)); restore it from a backup or create a new key"
    }
}
