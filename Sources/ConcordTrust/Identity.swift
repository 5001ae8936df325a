import Foundation

/// This device's identity: a member name, a device name and an Ed25519 key, stored in a Concord
/// home directory (`CONCORD_HOME`).
///
/// Files:
/// - `identity.json`: `{"device": …, "formatVersion": 1, "member": …}`, keys sorted, 2-space
///   indent, trailing newline.
/// - `id_ed25519`: the OpenSSH private key file, mode 0600, comment `member@device`.
/// - `id_ed25519.pub`: the public key line and a newline, mode 0644.
public struct Identity: Sendable {
    /// Version history of `identity.json`:
    /// - 1: `member`, `device`, `formatVersion`.
    public static let formatVersion = 1

    /// The member this identity writes as: the device's owner, or the member acting on this
    /// device after `concord switch` (`acting(as:)`).
    public let member: String
    /// The member whose key this is (the device's owner), who signs whatever `member` writes.
    public var owner: String { actingFor ?? member }
    private var actingFor: String? = nil
    /// This device's name, unique among the member's devices.
    public let device: String
    /// The device's signing key.
    public let key: SigningKey
    /// The directory the identity is stored in.
    public let home: URL

    /// This identity writing as `member` (a caregiver switched to on a shared device): its commits
    /// and records name `member`, and this device's key (its owner's) still signs them.
    public func acting(as member: String) -> Identity {
        guard member != owner else { return Identity(member: owner, device: device, key: key, home: home) }
        var acting = Identity(member: member, device: device, key: key, home: home)
        acting.actingFor = owner
        return acting
    }

    /// `identity.json` in `home`.
    public var identityFilePath: URL { home.appendingPathComponent("identity.json") }
    /// The OpenSSH private key file, `id_ed25519` in `home`.
    public var privateKeyPath: URL { home.appendingPathComponent("id_ed25519") }
    /// The public key file, `id_ed25519.pub` in `home`.
    public var publicKeyPath: URL { home.appendingPathComponent("id_ed25519.pub") }

    /// The principal and key comment, `member@device`.
    public var principal: String { "\(member)@\(device)" }

    /// `ssh-ed25519 AAAA… member@device`, no trailing newline.
    public var publicKeyLine: String { key.publicKey.line(comment: principal) }

    /// Signs `message` in the `git` namespace; see `SSHSignature.sign`.
    public func sign(_ message: some Collection<UInt8>) -> String {
        SSHSignature.sign(message, with: key)
    }

    /// Creates a new identity with a fresh key in `home` (made with mode 0700 if missing).
    /// - Throws: `TrustError.invalidName` for a bad member or device name,
    ///   `TrustError.identityExists` if `home` already holds an identity or key file,
    ///   `TrustError.fileSystem` if writing fails.
    public static func create(member: String, device: String, in home: URL) throws(TrustError) -> Identity {
        try validateName(member, kind: "member")
        try validateName(device, kind: "device")
        let identity = Identity(member: member, device: device, key: .generate(), home: home)
        for file in [identity.identityFilePath, identity.privateKeyPath, identity.publicKeyPath]
        where SecureFile.exists(file) {
            throw .identityExists(file)
        }
        try SecureFile.createPrivateDirectory(home)
        // identity.json last: until it exists, there is no identity to load.
        try SecureFile.write(identity.key.openSSHPrivateKeyFile(comment: identity.principal),
                             to: identity.privateKeyPath, mode: 0o600)
        // Its owner's alone, as everything in CONCORD_HOME (which names who they are and where).
        try SecureFile.write(identity.publicKeyLine + "\n", to: identity.publicKeyPath, mode: 0o600)
        try SecureFile.write(identity.json, to: identity.identityFilePath, mode: 0o600)
        return identity
    }

    /// Loads the identity stored in `home`.
    /// - Throws: `TrustError.noIdentity` if there is none, `.insecureKeyFileMode` if the private
    ///   key is readable by group or others, `.unsupportedIdentityFormat` for a newer format,
    ///   `.malformedIdentityFile`, `.missingPrivateKey` or a private key parsing error.
    public static func load(from home: URL) throws(TrustError) -> Identity {
        let jsonPath = home.appendingPathComponent("identity.json")
        guard SecureFile.exists(jsonPath) else { throw .noIdentity(home) }
        let (member, device) = try parseJSON(try SecureFile.read(jsonPath), path: jsonPath)
        let keyPath = home.appendingPathComponent("id_ed25519")
        guard let mode = try SecureFile.mode(of: keyPath) else { throw .missingPrivateKey(keyPath) }
        guard mode & 0o077 == 0 else { throw .insecureKeyFileMode(keyPath, mode: mode) }
        let key = try SigningKey(openSSHPrivateKeyFile: try SecureFile.read(keyPath))
        return Identity(member: member, device: device, key: key, home: home)
    }

    /// Checks a member or device name: 1–64 characters of `[A-Za-z0-9._-]`, not starting with
    /// `.` or `-`.
    /// - Throws: `TrustError.invalidName` naming the bad value.
    public static func validateName(_ name: String, kind: String) throws(TrustError) {
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || $0 == "." || $0 == "_" || $0 == "-"
        }
        guard (1...64).contains(name.unicodeScalars.count), allowed,
              let first = name.first, first != ".", first != "-"
        else { throw .invalidName(kind: kind, value: name) }
    }

    /// `identity.json`'s text. Names are validated, so they need no JSON escaping.
    var json: String {
        """
        {
          "device": "\(device)",
          "formatVersion": \(Self.formatVersion),
          "member": "\(member)"
        }

        """
    }

    private static func parseJSON(_ text: String, path: URL) throws(TrustError) -> (String, String) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        } catch {
            throw .malformedIdentityFile(path, "not valid JSON")
        }
        guard let fields = object as? [String: Any] else {
            throw .malformedIdentityFile(path, "not a JSON object")
        }
        guard let version = fields["formatVersion"] as? Int else {
            throw .malformedIdentityFile(path, "no integer formatVersion")
        }
        guard version <= formatVersion else { throw .unsupportedIdentityFormat(path, version: version) }
        guard version >= 1 else { throw .malformedIdentityFile(path, "formatVersion \(version)") }
        guard let member = fields["member"] as? String, let device = fields["device"] as? String else {
            throw .malformedIdentityFile(path, "member and device must be strings")
        }
        try validateName(member, kind: "member")
        try validateName(device, kind: "device")
        return (member, device)
    }
}
