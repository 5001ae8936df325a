import ArgumentParser
import ConcordKit
import ConcordServer
import Foundation

/// `concord server init`: prepares a directory for an sshd account to serve profiles from.
struct ServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server", abstract: "Set up a concord server (profiles served over ssh by 'concord serve'; docs/server.md).",
        subcommands: [Init.self]
    )

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Prepare DIR: the state file, repositories/ with hooks, the key index sshd's AuthorizedKeysCommand reads.")

        @Option(help: ArgumentHelp("The server directory (created when missing).", valueName: "dir")) var root: String
        @Option(name: .customLong("admin-key"), help: "The public key (ssh-ed25519 AAAA...) allowed to create profiles by pushing them.")
        var adminKey: String
        @Option(help: "The account sshd serves concord through (default: the user running this).") var user: String?
        @Option(name: .customLong("authorized-keys"),
                help: ArgumentHelp("Also keep concord's block of this authorized_keys file (for an sshd without AuthorizedKeysCommand).",
                                   valueName: "file"))
        var authorizedKeys: String?
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            guard let executable = currentExecutable() else { throw ConcordError.io(.read, path: nil, "cannot find the running concord executable's path") }
            let key = try SSHPublicKey(line: adminKey)
            let server = try ConcordServer.initialize(root: URL(fileURLWithPath: root), adminKey: key,
                                                      user: user ?? ProcessInfo.processInfo.userName, executable: executable,
                                                      authorizedKeys: authorizedKeys.map { URL(fileURLWithPath: $0).standardizedFileURL.path })
            // concord-lookup (installed beside concord) starts in ~2 ms where concord takes ~25, and sshd
            // runs the command once per connection; `concord serve --lookup` gives the same answers.
            let lookup = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("concord-lookup").path
            let hasLookup = FileManager.default.isExecutableFile(atPath: lookup)
            let command = hasLookup ? "\(lookup) \(server.root.path) %u %k" : "\(executable) serve --root \(server.root.path) --lookup %u %k"
            let file = server.configuration.authorizedKeys
            if json {
                try printJSON(["root": server.root.path, "user": server.configuration.user, "adminKey": key.fingerprint,
                               "authorizedKeysCommand": command, "authorizedKeys": file] as [String: String?])
            } else {
                print("concord server ready in \(server.root.path) for user \(server.configuration.user); admin key \(key.fingerprint)")
                if let file {
                    print("concord keeps its block of \(file) (rewritten after every membership change)")
                } else {
                    if !hasLookup { print("no concord-lookup beside \(executable): sshd would start the whole concord for every connection; install it there for faster logins") }
                    print("in sshd_config: AuthorizedKeysCommand \(command)")
                }
            }
        }
    }
}
