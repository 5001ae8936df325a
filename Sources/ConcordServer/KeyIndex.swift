import ConcordGit
import ConcordKeyIndex
import ConcordKit
import ConcordModel
import ConcordTrust
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `<root>/keys.index`: which keys may log in to a concord server, so sshd's
/// `AuthorizedKeysCommand` (`concord-lookup`, or `concord serve --lookup`) answers from one small
/// file instead of reading every repository. Its format, and the rule for which lines let their key
/// in, are ConcordKeyIndex's (`KeyIndexFormat`), shared with the lookup; this writes it.
///
/// One line per key and profile: active members' keys, revoked members' keys (a revoked device
/// still connects, and `concord serve` decides what it may read), and the keys of pending
/// invitations (the invited key, or a link invitation's one-time key, or an open invitation's
/// one-time key while it has places left) with their expiry. The header carries what the lookup
/// prints besides the key: the account's user, the concord executable, the root, the admin key.
///
/// The post-receive of a push that changes a profile's members rewrites that profile's lines:
/// under an exclusive `flock` on `keys.lock`, written aside and renamed into place, so a lookup
/// reads the old file or the new one, never half of one.
struct KeyIndex {
    let root: URL
    /// The header's settings (the admin key among them, always let in).
    let settings: KeyIndexSettings
    /// The authorized_keys file concord keeps a block of, rewritten with the index; nil in
    /// AuthorizedKeysCommand mode.
    let authorizedKeys: AuthorizedKeysFile?
    var path: String { KeyIndexLookup.path(root: root.path) }

    /// The index lines for profile `name` with `membership`.
    static func lines(profile name: String, membership: Membership) -> [String] {
        func line(_ key: SSHPublicKey, _ status: Substring, _ expiry: String?) -> String {
            // Written in HLClock's one form (or "-"), the only one the lookup parses.
            let expiry = expiry.flatMap(HLClock.parseInstant).map(HLClock.formatInstant) ?? "-"
            return KeyIndexLine(fingerprint: Substring(key.fingerprint), profile: Substring(name), status: status,
                                expiry: Substring(expiry), base64: Substring(key.base64)).text
        }
        var lines = [String]()
        for member in membership.members.values.sorted(by: { $0.name < $1.name }) {
            switch member.status {
            case .active:
                lines += member.keys.map { line($0.publicKey, "active", nil) }
            case .invited:
                lines += member.keys.map { line($0.publicKey, "invited", member.expiresAt) }
                if let oneTime = member.invitationKey { lines.append(line(oneTime, "invited", member.expiresAt)) }
            case .revoked:
                lines += member.keys.map { line($0.publicKey, "revoked", nil) }
            }
        }
        for open in membership.openInvitations.sorted(by: { $0.id < $1.id }) where open.used(by: membership.members.values) < open.uses {
            lines.append(line(open.key, "invited", open.expiresAt))
        }
        return lines
    }

    /// Replaces profile `name`'s lines with those of `membership`.
    func update(profile name: String, membership: Membership) throws {
        try rewrite { old in
            old.filter { line in
                let fields = KeyIndexFormat.split(Substring(line), at: 0x20)
                return fields.count < 2 || !fields[1].utf8.elementsEqual(name.utf8)
            } + Self.lines(profile: name, membership: membership)
        }
    }

    /// Replaces the whole index with the lines of `memberships` (by profile name).
    func replaceAll(_ memberships: [String: Membership]) throws {
        try rewrite { _ in memberships.sorted { $0.key < $1.key }.flatMap { Self.lines(profile: $0.key, membership: $0.value) } }
    }

    /// Rewrites the index's lines (below a fresh header) with `change`, under the lock; then the
    /// authorized_keys block, if there is one, from the new lines. The lines of an index written by
    /// an older concord (version 2 has the same lines, without revoked keys) are kept and rewritten
    /// in the current version; a newer index is refused, not overwritten.
    private func rewrite(_ change: ([String]) -> [String]) throws {
        let lockPath = root.appendingPathComponent("keys.lock").path
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ConcordError.io(.open, path: lockPath, "cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw ConcordError.io(.lock, path: lockPath, "cannot lock \(lockPath): \(String(cString: strerror(errno)))") }
        }
        let oldText = FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let oldLines = KeyIndexFormat.split(Substring(oldText), at: 0x0A)
        if let first = oldLines.first, let version = KeyIndexFormat.version(ofFirstLine: first), version > KeyIndexFormat.currentVersion {
            throw ConcordError.io(.read, path: path, "\(path) is key index version \(version), newer than this concord understands "
                                  + "(\(KeyIndexFormat.currentVersion)): upgrade concord")
        }
        let new = change(oldLines.filter { !$0.isEmpty && $0.utf8.first != 0x23 }.map(String.init))   // not the header's '#' lines
        let text = settings.header + new.map { $0 + "\n" }.joined()
        do { try FileIO.write(Array(text.utf8), to: path, durable: true) } catch { throw ConcordError.io(.write, path: path, error.description) }
        if let authorizedKeys {
            let now = ConcordEnvironment.systemClock()
            let keys = new.compactMap { KeyIndexLine(Substring($0)) }.filter { $0.admits(now: now) }
                .map { (fingerprint: String($0.fingerprint), base64: String($0.base64)) }
            try authorizedKeys.replaceBlock(with: [(settings.adminFingerprint, settings.adminBase64)] + keys)
        }
    }
}
