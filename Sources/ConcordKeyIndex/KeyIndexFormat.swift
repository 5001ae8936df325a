/// `<root>/keys.index`, the file sshd's key lookup reads on every connection: its header, its lines
/// and the rule that lets a line's key in. Kept free of Foundation and libgit2 so that
/// `concord-lookup`, which sshd starts once per connection, is a small program that starts in a
/// couple of milliseconds; ConcordKit's `KeyIndex` writes the file with these same types, so the
/// format and the rule exist once.
///
/// Format history: 2 — one line per key and profile, `active` and `invited` keys only;
/// 3 — a header that carries what the lookup prints besides the key (the served account's user,
/// the concord executable, the server directory, the admin key), and `revoked` lines (a revoked
/// key logs in, and `concord serve` decides what it may still read).
///
///     # concord key index 3: <fingerprint> <profile> <active|invited|revoked> <expiry|-> <key base64>
///     # user: git
///     # executable: /usr/local/bin/concord
///     # root: /srv/concord
///     # admin: SHA256:<fingerprint> <key base64>
///     SHA256:<fingerprint> <profile> active - <key base64>
///     SHA256:<fingerprint> <profile> invited 2026-01-08T10:00:00.000Z <key base64>
///     SHA256:<fingerprint> <profile> revoked - <key base64>
public enum KeyIndexFormat {
    public static let currentVersion = 3
    /// The oldest version whose lines a rewrite still reads (and rewrites as the current version).
    public static let oldestReadableLines = 2
    static let prefix = "# concord key index "

    /// The header's first line.
    public static var firstLine: String {
        "\(prefix)\(currentVersion): <fingerprint> <profile> <active|invited|revoked> <expiry|-> <key base64>"
    }

    /// The version on a first line that starts like an index's, or nil.
    public static func version(ofFirstLine line: Substring) -> Int? {
        guard line.hasPrefix(prefix) else { return nil }
        return Int(line.dropFirst(prefix.utf8.count).prefix { $0 != ":" })
    }

    /// Whether a key whose line has `status` and `expiry` may log in at `now` (Unix milliseconds):
    /// an active member's, a revoked member's (so its device can learn it was revoked), or a
    /// pending invitation's before its expiry.
    public static func admits(status: Substring, expiry: Substring, now: Int64) -> Bool {
        switch status {
        case "active", "revoked": return true
        case "invited": return IndexInstant.parse(expiry).map { now < $0 } ?? false
        default: return false
        }
    }

    /// `text` cut at every `byte` (an ASCII separator), empty pieces kept. Byte by byte rather than
    /// `split(separator:)`, which walks Characters: a post-receive splits a 10,000-line index and
    /// authorized_keys file, and sshd's lookup waits on none of this, but the pushing device does.
    public static func split(_ text: Substring, at byte: UInt8) -> [Substring] {
        var pieces = [Substring]()
        let bytes = text.utf8
        var start = bytes.startIndex, index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index] == byte {
                pieces.append(text[start..<index])
                start = bytes.index(after: index)
            }
            index = bytes.index(after: index)
        }
        pieces.append(text[start...])
        return pieces
    }

    /// The authorized_keys line that lets a key in to run only `concord serve` as itself.
    public static func authorizedKeysLine(executable: String, root: String, fingerprint: Substring, base64: Substring) -> String {
        "command=\"'\(executable)' serve --root '\(root)' --key \(fingerprint)\",restrict ssh-ed25519 \(base64)"
    }
}

/// What the header carries besides the format: all the lookup needs beyond the key's own line.
public struct KeyIndexSettings: Equatable, Sendable {
    /// The account sshd serves concord through; the lookup answers for no other user.
    public var user: String
    /// The concord executable the authorized_keys lines run.
    public var executable: String
    /// The server directory.
    public var root: String
    /// The admin key, always let in.
    public var adminFingerprint: String
    public var adminBase64: String

    public init(user: String, executable: String, root: String, adminFingerprint: String, adminBase64: String) {
        self.user = user
        self.executable = executable
        self.root = root
        self.adminFingerprint = adminFingerprint
        self.adminBase64 = adminBase64
    }

    /// The whole header, each line ending in a newline.
    public var header: String {
        KeyIndexFormat.firstLine + "\n# user: \(user)\n# executable: \(executable)\n# root: \(root)\n"
            + "# admin: \(adminFingerprint) \(adminBase64)\n"
    }

    /// The settings in the header lines `lines` (the `# name: value` lines after the first).
    init?(headerLines lines: [Substring]) {
        var values = [Substring: Substring]()
        for line in lines {
            guard line.hasPrefix("# "), let colon = line.firstIndex(of: ":") else { continue }
            values[line[line.index(line.startIndex, offsetBy: 2)..<colon]] = line[line.index(after: colon)...].drop { $0 == " " }
        }
        guard let user = values["user"], let executable = values["executable"], let root = values["root"],
              let admin = values["admin"]?.split(separator: " "), admin.count == 2 else { return nil }
        self.init(user: String(user), executable: String(executable), root: String(root),
                  adminFingerprint: String(admin[0]), adminBase64: String(admin[1]))
    }
}

/// One line of the index, split in its five fields.
public struct KeyIndexLine: Equatable, Sendable {
    public var fingerprint: Substring
    public var profile: Substring
    public var status: Substring
    public var expiry: Substring
    public var base64: Substring

    public init(fingerprint: Substring, profile: Substring, status: Substring, expiry: Substring, base64: Substring) {
        (self.fingerprint, self.profile, self.status, self.expiry, self.base64) = (fingerprint, profile, status, expiry, base64)
    }

    /// The line `text` (without its newline), or nil when it does not have five fields.
    public init?(_ text: Substring) {
        let fields = KeyIndexFormat.split(text, at: 0x20)
        guard fields.count == 5, !fields.contains(where: \.isEmpty) else { return nil }
        self.init(fingerprint: fields[0], profile: fields[1], status: fields[2], expiry: fields[3], base64: fields[4])
    }

    public var text: String { "\(fingerprint) \(profile) \(status) \(expiry) \(base64)" }

    public func admits(now: Int64) -> Bool { KeyIndexFormat.admits(status: status, expiry: expiry, now: now) }
}
