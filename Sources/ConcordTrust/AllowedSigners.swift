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
        entries
            .map { "\($0.principal) namespaces=\"git\" \($0.key.line(comment: nil))\n" }
            .sorted()
            .joined()
    }
}
