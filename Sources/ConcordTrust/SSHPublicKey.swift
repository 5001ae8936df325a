import Crypto
import Foundation

/// An Ed25519 public key in OpenSSH's encodings: wire blob, `ssh-ed25519 AAAA…` line, fingerprint.
public struct SSHPublicKey: Sendable, Hashable {
    /// The OpenSSH name of the only key type Concord uses.
    public static let keyType = "ssh-ed25519"

    /// The 32-byte Ed25519 public key.
    public let raw: [UInt8]

    /// Wraps a raw 32-byte Ed25519 public key.
    /// - Throws: `TrustError.invalidPublicKeyLength` if `raw` is not 32 bytes.
    public init(raw: [UInt8]) throws(TrustError) {
        guard raw.count == 32 else { throw .invalidPublicKeyLength(raw.count) }
        self.raw = raw
    }

    /// Parses an OpenSSH public key line, `ssh-ed25519 AAAA… [comment]`; the comment is ignored.
    /// - Throws: `TrustError.unsupportedKeyType` for any other key type,
    ///   `TrustError.malformedPublicKey` if the line or its base64 blob is damaged.
    public init(line: String) throws(TrustError) {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" })
        guard let type = fields.first else { throw .malformedPublicKey("empty line") }
        guard type == Self.keyType else { throw .unsupportedKeyType(String(type)) }
        guard fields.count >= 2 else { throw .malformedPublicKey("no base64 key after '\(type)'") }
        guard let blob = Data(base64Encoded: String(fields[1])) else {
            throw .malformedPublicKey("invalid base64")
        }
        try self.init(wireBlob: Array(blob))
    }

    /// Parses a wire blob: `string "ssh-ed25519"` ‖ `string <32-byte key>`, nothing after.
    init(wireBlob: [UInt8]) throws(TrustError) {
        var reader = SSHReader(wireBlob, truncated: .malformedPublicKey("truncated key blob"))
        let type = try reader.text()
        guard type == Self.keyType else { throw .unsupportedKeyType(type) }
        let key = try reader.string()
        guard reader.isAtEnd else { throw .malformedPublicKey("trailing bytes after the key") }
        try self.init(raw: key)
    }

    /// The SSH wire encoding: `string "ssh-ed25519"` ‖ `string <32-byte key>` (51 bytes).
    public var wireBlob: [UInt8] {
        var writer = SSHWriter()
        writer.string(Self.keyType)
        writer.string(raw)
        return writer.bytes
    }

    /// Base64 of the wire blob, the second field of a public key line.
    public var base64: String {
        Data(wireBlob).base64EncodedString()
    }

    /// The OpenSSH public key line, `ssh-ed25519 <base64>` followed by ` <comment>` if one is given
    /// (and not empty). No trailing newline.
    public func line(comment: String?) -> String {
        let head = "\(Self.keyType) \(base64)"
        guard let comment, !comment.isEmpty else { return head }
        return "\(head) \(comment)"
    }

    /// `SHA256:` + unpadded base64 of SHA-256(wire blob), exactly as `ssh-keygen -l` prints it.
    public var fingerprint: String {
        let digest = Data(SHA256.hash(data: wireBlob)).base64EncodedString()
        return "SHA256:" + digest.replacingOccurrences(of: "=", with: "")
    }

    /// The same key as a swift-crypto verifying key.
    var cryptoKey: Curve25519.Signing.PublicKey {
        get throws(TrustError) {
            do {
                return try Curve25519.Signing.PublicKey(rawRepresentation: raw)
            } catch {
                throw .malformedPublicKey("not a valid Ed25519 point")
            }
        }
    }
}

extension SSHPublicKey: CustomStringConvertible {
    /// The key line without a comment.
    public var description: String { line(comment: nil) }
}
