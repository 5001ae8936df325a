import ConcordGit
import ConcordKeyIndex
import ConcordKit
import ConcordTrust
import Foundation

/// The other way for sshd to find keys (any sshd config, no AuthorizedKeysCommand): concord keeps
/// one block of an `authorized_keys` file, between `# concord start` and `# concord end`, with one
/// forced-command line per key that may log in (`ConcordServer.forcedCommandLine`), and leaves every
/// other line as it was (what gitolite does).
///
/// - A key that is already on a line outside the block would be used by sshd with THAT line
///   (sshd takes the first line of a key): the rewrite is refused, naming the key and the line.
/// - Never a partial file: the new file is written aside, fsynced and renamed over the old one,
///   under the key index's lock; a file changed by someone else while concord read it is not
///   overwritten (the rewrite fails, and the next one starts from the new file).
/// - Rewritten with the key index, with the keys the lookup would let in (`KeyIndexFormat.admits`):
///   by `concord server init` and by every post-receive that changes a profile's members.
struct AuthorizedKeysFile {
    let path: String
    /// The line for one key, by its fingerprint and base64 (as the key index holds them: no key to
    /// decode and hash again for each of thousands of lines).
    let line: (_ fingerprint: String, _ base64: String) -> String

    static let start = "# concord start: the lines up to '# concord end' are written by concord (docs/server.md); edit outside them"
    static let end = "# concord end"

    /// Replaces concord's block with the lines of `keys` (each once), keeping every other line.
    func replaceBlock(with keys: [(fingerprint: String, base64: String)]) throws {
        let old = FileManager.default.contents(atPath: path)
        var lines = old.map { KeyIndexFormat.split(Substring(String(decoding: $0, as: UTF8.self)), at: 0x0A) } ?? []
        if lines.last == "" { lines.removeLast() }
        let first = lines.firstIndex { $0.utf8.starts(with: "# concord start".utf8) }
        let last = lines.firstIndex { $0.utf8.elementsEqual(Self.end.utf8) }
        let (before, after): ([Substring], [Substring])
        var block = 0..<0
        switch (first, last) {
        case (nil, nil):
            (before, after) = (lines, [])
        case (let first?, let last?) where first < last:
            (before, after) = (Array(lines[..<first]), Array(lines[(last + 1)...]))
            block = first..<(last + 1)
        default:
            throw ConcordError.io(.read, path: path, "\(path) has a '# concord start' line without its '# concord end' after it (or the other way "
                                  + "round): fix the markers by hand, then run 'concord server init' again")
        }
        var seen = Set<String>()
        let unique = keys.filter { seen.insert($0.fingerprint).inserted }.sorted { $0.fingerprint < $1.fingerprint }
        for (index, text) in lines.enumerated() where !block.contains(index) {
            guard let key = Self.key(in: String(text)), seen.contains(key.fingerprint) else { continue }
            throw ConcordError.io(.write, path: path, "the key \(key.fingerprint) is already in \(path) outside concord's block (line \(index + 1)), and sshd "
                                  + "would use that line for it: remove that line, then run 'concord server init' again")
        }
        let concordLines = [Self.start] + unique.map { line($0.fingerprint, $0.base64) } + [Self.end]
        let text = (before.map(String.init) + concordLines + after.map(String.init)).map { $0 + "\n" }.joined()
        var mode: UInt32 = 0o600
        if let attributes = try? FileManager.default.attributesOfItem(atPath: path), let existing = attributes[.posixPermissions] as? Int {
            mode = UInt32(existing)
        }
        guard FileManager.default.contents(atPath: path) == old else {
            throw ConcordError.io(.write, path: path, "\(path) changed while concord rewrote its block: nothing was written; run 'concord server init' again")
        }
        do { try FileIO.write(Array(text.utf8), to: path, mode: mode, durable: true) } catch { throw ConcordError.io(.write, path: path, error.description) }
    }

    /// The ed25519 key on an authorized_keys line (after any options), or nil.
    static func key(in line: String) -> SSHPublicKey? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return nil }
        let words = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let index = words.firstIndex(where: { $0 == SSHPublicKey.keyType || $0.hasSuffix("," + SSHPublicKey.keyType) }),
              index + 1 < words.count else { return nil }
        return try? SSHPublicKey(line: "\(SSHPublicKey.keyType) \(words[index + 1])")
    }
}
