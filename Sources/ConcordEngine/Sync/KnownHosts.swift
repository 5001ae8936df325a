import ConcordGit
import Foundation

/// `$CONCORD_HOME/known_hosts`: the ssh host keys this identity trusts, shared by all its
/// profiles, in OpenSSH's format (`[host]:port ssh-ed25519 AAAA…`).
///
/// Not cached: the file is read again at every host-key check (once per ssh connection, so once
/// per `watch` poll), and nothing read is kept, so a long-running watch holds none of it between
/// polls and sees `concord remote trust` run elsewhere at once.
package struct KnownHosts {
    /// The file, `known_hosts` in the identity's home.
    public let file: URL

    /// The known hosts of the identity whose home is `home`.
    public init(home: URL) {
        file = home.appendingPathComponent("known_hosts")
    }

    /// What we know about `host`: nil if nothing, else whether `key` is one of its trusted keys.
    public func verdict(host: String, key: HostKey) -> Bool? {
        let lines = entries().filter { $0.host == host }
        guard !lines.isEmpty else { return nil }
        return lines.contains { $0.sha256 == key.sha256 }
    }

    /// The file's lines for `host`, as written (given to libgit2 in place of ~/.ssh/known_hosts).
    public func lines(for host: String) -> [String] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").filter { $0.split(separator: " ").first.map(String.init) == host }.map(String.init)
    }

    /// Records `key` as trusted for `host` (replacing older keys of that host).
    public func trust(host: String, key: HostKey) throws {
        guard !key.blob.isEmpty else {
            throw ConcordError.io(.read, path: nil, "the server did not send its raw host key, so it cannot be recorded")
        }
        var lines = (try? String(contentsOf: file, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
        lines.removeAll { $0.split(separator: " ").first.map(String.init) == host }
        lines.append("\(host) \(key.keyType) \(Data(key.blob).base64EncodedString())")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file, options: .atomic)
    }

    private func entries() -> [(host: String, sha256: [UInt8])] {
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 3, !line.hasPrefix("#"), let blob = Data(base64Encoded: String(fields[2])) else { return nil }
            return (String(fields[0]), SHA256Digest.of(Array(blob)))
        }
    }
}

import Crypto

enum SHA256Digest {
    static func of(_ bytes: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: bytes)) }
}
