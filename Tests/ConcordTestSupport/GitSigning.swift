import Foundation

/// Signing commits without Concord, as a member with plain git (or an attacker holding a key)
/// would: git's own SSH signing (`gpg.format=ssh`) and `ssh-keygen -Y sign`, both of which write
/// the SSHSIG (namespace `git`) Concord checks every fetched commit for.
public enum GitSigning {
    public static let sshKeygenPath = "/usr/bin/ssh-keygen"

    /// The `-c` options (before git's subcommand) that make `git commit -S` and
    /// `git commit-tree -S` sign with the OpenSSH private key in `keyFile`.
    public static func options(keyFile: String) -> [String] {
        ["-c", "gpg.format=ssh", "-c", "user.signingkey=\(keyFile)"]
    }

    /// A new Ed25519 key pair made by `ssh-keygen` at `path` (mode 0600) and `path.pub`; returns
    /// the public key line (`ssh-ed25519 AAAA… comment`).
    public static func makeKey(at path: URL, comment: String, environment: [String: String]) throws -> String {
        let result = try ProcessRunner.run(sshKeygenPath, ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", path.path],
                                           environment: environment)
        guard result.status == 0 else {
            throw CommandFailure(command: "ssh-keygen -t ed25519", status: result.status, stderr: result.stderr)
        }
        return try String(contentsOf: path.appendingPathExtension("pub"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The commit object text `unsigned` (headers, blank line, message) with a `gpgsig` header
    /// holding `ssh-keygen -Y sign -n git`'s signature over it, as `git commit -S` writes it.
    public static func sign(commit unsigned: [UInt8], keyFile: String, environment: [String: String]) throws -> [UInt8] {
        let result = try ProcessRunner.run(sshKeygenPath, ["-q", "-Y", "sign", "-n", "git", "-f", keyFile],
                                           environment: environment, input: Data(unsigned))
        guard result.status == 0, result.stdout.hasPrefix("-----BEGIN SSH SIGNATURE-----") else {
            throw CommandFailure(command: "ssh-keygen -Y sign", status: result.status, stderr: result.stderr)
        }
        return inserting(signature: result.stdout, into: unsigned)
    }

    /// The commit object text `unsigned` with the armored SSHSIG `signature` as its `gpgsig`
    /// header (after the other headers, continuation lines indented by one space), as git writes it.
    public static func inserting(signature: String, into unsigned: [UInt8]) -> [UInt8] {
        let armor = signature.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").joined(separator: "\n ")
        guard let blank = unsigned.firstRange(of: [0x0A, 0x0A]) else { return unsigned }
        return Array(unsigned[..<blank.lowerBound]) + Array("\ngpgsig \(armor)".utf8) + Array(unsigned[blank.lowerBound...])
    }
}
