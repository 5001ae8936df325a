import ArgumentParser
import ConcordKit
import ConcordServer
import Foundation

/// `concord serve`: what sshd runs. As the forced command (`--key`), it serves one git request;
/// with `--lookup` it is sshd's AuthorizedKeysCommand; with `--pre-receive` / `--post-receive` it
/// is a repository's hook.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve profiles to devices through sshd (the forced command, the key lookup and the hooks; docs/server.md).")

    @Option(help: ArgumentHelp("The server directory ('concord server init').", valueName: "dir")) var root: String
    @Option(help: ArgumentHelp("The connecting key's fingerprint (set by the authorized_keys line).", valueName: "SHA256:...")) var key: String?
    @Flag(help: "Answer sshd's AuthorizedKeysCommand: give the user (%u) and the key (%k).") var lookup = false
    @Flag(name: .customLong("pre-receive"), help: "Run as a repository's pre-receive hook.") var preReceive = false
    @Flag(name: .customLong("post-receive"), help: "Run as a repository's post-receive hook.") var postReceive = false
    @Argument(help: ArgumentHelp("With --lookup: the user and the key.", valueName: "user key")) var lookupArguments: [String] = []

    func validate() throws {
        let modes = [key != nil, lookup, preReceive, postReceive].filter { $0 }.count
        guard modes == 1 else { throw ValidationError("give exactly one of --key SHA256:..., --lookup USER KEY, --pre-receive or --post-receive") }
        if lookup ? lookupArguments.count != 2 : !lookupArguments.isEmpty {
            throw ValidationError(lookup ? "--lookup takes the user and the key: --lookup %u %k" : "unexpected arguments \(lookupArguments)")
        }
        if let key, !Self.isFingerprint(key) { throw ValidationError("--key takes a key fingerprint, SHA256: and 43 base64 characters") }
    }

    func run() throws {
        try ServeRun(root: root, mode: key.map { .forcedCommand(key: $0) } ?? (lookup ? .lookup(user: lookupArguments[0], key: lookupArguments[1])
            : preReceive ? .preReceive : .postReceive)).run()
    }

    static func isFingerprint(_ text: String) -> Bool {
        let body = text.utf8.dropFirst(7)
        return text.hasPrefix("SHA256:") && body.count == 43 && body.allSatisfy {
            ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2F
        }
    }
}
