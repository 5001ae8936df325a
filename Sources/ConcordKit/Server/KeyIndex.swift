import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `<root>/keys.index`: which keys may log in to a concord server, so sshd's
/// `AuthorizedKeysCommand` (`concord serve --lookup`) answers from one small file instead of
/// reading every repository. One line per key and profile:
///
///     SHA256:<fingerprint> <profile> active - <key base64>
///     SHA256:<fingerprint> <profile> invited 2026-01-08T10:00:00.000Z <key base64>
///
/// Active members' keys, and the keys of pending invitations (the invited key, or a link
/// invitation's one-time key, or an open invitation's one-time key while it has places left) with
/// their expiry; revoked members are left out, so their next
/// connection is refused. The post-receive of a push that changes a profile's members rewrites
/// that profile's lines: under an exclusive `flock` on `keys.lock`, written aside and renamed into
/// place, so a lookup reads the old file or the new one, never half of one.
struct KeyIndex {
    let root: URL
    /// The server's admin key (always let in).
    let adminKey: SSHPublicKey
    /// The authorized_keys file concord keeps a block of, rewritten with the index; nil in
    /// AuthorizedKeysCommand mode.
    let authorizedKeys: AuthorizedKeysFile?
    var path: String { root.appendingPathComponent("keys.index").path }
    static let header = "# concord key index 2: <fingerprint> <profile> <active|invited> <expiry|-> <key base64>\n"

    /// The index lines for profile `name` with `membership`.
    static func lines(profile name: String, membership: Membership) -> [String] {
        var lines = [String]()
        for member in membership.members.values.sorted(by: { $0.name < $1.name }) {
            switch member.status {
            case .active:
                lines += member.keys.map { "\($0.publicKey.fingerprint) \(name) active - \($0.publicKey.base64)" }
            case .invited:
                let expiry = member.expiresAt ?? "-"
                lines += member.keys.map { "\($0.publicKey.fingerprint) \(name) invited \(expiry) \($0.publicKey.base64)" }
                if let oneTime = member.invitationKey { lines.append("\(oneTime.fingerprint) \(name) invited \(expiry) \(oneTime.base64)") }
            case .revoked:
                // Let in to read the view of their revocation alone (`RevocationView`); concord serve decides.
                lines += member.keys.map { "\($0.publicKey.fingerprint) \(name) revoked - \($0.publicKey.base64)" }
            }
        }
        for open in membership.openInvitations.sorted(by: { $0.id < $1.id }) where open.used(by: membership.members.values) < open.uses {
            lines.append("\(open.key.fingerprint) \(name) invited \(open.expiresAt) \(open.key.base64)")
        }
        return lines
    }

    /// Replaces profile `name`'s lines with those of `membership`.
    func update(profile name: String, membership: Membership) throws {
        try rewrite { old in
            old.filter { $0.split(separator: " ").dropFirst().first.map(String.init) != name } + Self.lines(profile: name, membership: membership)
        }
    }

    /// Replaces the whole index with the lines of `memberships` (by profile name).
    func replaceAll(_ memberships: [String: Membership]) throws {
        try rewrite { _ in memberships.sorted { $0.key < $1.key }.flatMap { Self.lines(profile: $0.key, membership: $0.value) } }
    }

    /// Whether the key with fingerprint `fingerprint` may log in at `now`: it is an active member's
    /// somewhere, or a pending invitation's that has not expired.
    func admits(_ fingerprint: String, now: Int64) -> Bool {
        guard let data = FileManager.default.contents(atPath: path) else { return false }
        // Lines that start with the fingerprint, found by the C library's strstr rather than a loop
        // over every byte in Swift: a 10,000-key index is ~0.8 MB, and sshd waits for this on every
        // connection. (The index holds no NUL; a terminating one is added.)
        var text = [CChar](repeating: 0, count: data.count + 1)
        text.withUnsafeMutableBytes { _ = data.copyBytes(to: $0) }
        let needle = "\n" + fingerprint + " "
        return text.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            var from = base
            while let found = strstr(from, needle) {
                let line = UnsafePointer(found) + 1
                let end = strchr(line, 0x0A).map { UnsafePointer($0) } ?? base + data.count
                let fields = String(decoding: UnsafeRawBufferPointer(start: line, count: line.distance(to: end)), as: UTF8.self)
                    .split(separator: " ")
                if Self.admits(fields, now: now) { return true }
                from = end
            }
            return false
        }
    }

    /// Whether an index line (split in fields) lets its key in at `now`.
    private static func admits(_ fields: [Substring], now: Int64) -> Bool {
        guard fields.count == 5 else { return false }
        if fields[2] == "active" || fields[2] == "revoked" { return true }
        if fields[2] == "invited", let expiry = HLClock.parseInstant(String(fields[3])), now < expiry { return true }
        return false
    }

    /// Rewrites the index's lines (without the header) with `change`, under the lock; then the
    /// authorized_keys block, if there is one, from the new lines.
    private func rewrite(_ change: ([String]) -> [String]) throws {
        let lockPath = root.appendingPathComponent("keys.lock").path
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ConcordError.io("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw ConcordError.io("cannot lock \(lockPath): \(String(cString: strerror(errno)))") }
        }
        let old = (FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? "")
            .split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        let new = change(old)
        let text = Self.header + new.map { $0 + "\n" }.joined()
        do { try FileIO.write(Array(text.utf8), to: path, durable: true) } catch { throw ConcordError.io(error.description) }
        if let authorizedKeys {
            let now = ConcordEnvironment.systemClock()
            let keys = new.map { $0.split(separator: " ") }.filter { Self.admits($0, now: now) }
                .compactMap { try? SSHPublicKey(line: "\(SSHPublicKey.keyType) \($0[4])") }
            try authorizedKeys.replaceBlock(with: [adminKey] + keys)
        }
    }
}
