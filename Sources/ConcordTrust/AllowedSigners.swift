/// git's and ssh-keygen's allowed-signers file (`gpg.ssh.allowedSignersFile`, `ssh-keygen -Y verify -f`).
///
/// Each line is `<principal> namespaces="git" ssh-ed25519 <base64>`; the `namespaces` option
/// (documented in ssh-keygen(1), ALLOWED SIGNERS) restricts the key to git signatures.
public struct AllowedSigners: Sendable {
    /// Renders one line per entry, sorted, each ending with a newline.
    ///
    /// Principals are written as given: they must not contain whitespace, `,` or the pattern
    /// characters `*`, `?`, `!` (Concord's member names never do).
    public static func render(_ entries: [(principal: String, key: SSHPublicKey)]) -> String {
        render(entries: entries.map { ($0.principal, $0.key, nil) })
    }

    /// `render(_:)`, where an entry with `validBefore` (git's `YYYYMMDDHHMMSSZ`, UTC) is good only for
    /// signatures dated before it: a revoked member's key, so their earlier commits still verify.
    public static func render(entries: [(principal: String, key: SSHPublicKey, validBefore: String?)]) -> String {
        entries
            .map { entry in
                let options = "namespaces=\"git\"" + (entry.validBefore.map { ",valid-before=\"\($0)\"" } ?? "")
                return "\(entry.principal) \(options) \(entry.key.line(comment: nil))\n"
            }
            .sorted()
            .joined()
    }
}
