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

/// What `concord serve` does once its arguments are read (by `Serve`, or by `ServeRun.direct` for
/// the fixed forms sshd and git run, once per connection or push).
struct ServeRun {
    enum Mode {
        /// sshd's forced command for the connecting key.
        case forcedCommand(key: String)
        /// sshd's AuthorizedKeysCommand.
        case lookup(user: String, key: String)
        case preReceive
        case postReceive
    }

    let root: String
    let mode: Mode

    /// The forms Concord itself writes, read without ArgumentParser: the forced command of the key
    /// index and authorized_keys lines (`serve --root DIR --key SHA256:…`) and the hooks
    /// (`serve --root DIR --pre-receive` / `--post-receive`). Building ArgumentParser's model of a
    /// command costs a tenth of a connection's `concord serve` (perf: Swift type lookups). Nil for
    /// anything else, which `Serve` parses and reports on as always.
    static func direct(_ arguments: [String]) -> ServeRun? {
        guard arguments.count >= 4, arguments[0] == "serve", arguments[1] == "--root", !arguments[2].hasPrefix("-") else { return nil }
        let root = arguments[2]
        switch Array(arguments.dropFirst(3)) {
        case ["--pre-receive"]: return ServeRun(root: root, mode: .preReceive)
        case ["--post-receive"]: return ServeRun(root: root, mode: .postReceive)
        case let rest where rest.count == 2 && rest[0] == "--key" && Serve.isFingerprint(rest[1]):
            return ServeRun(root: root, mode: .forcedCommand(key: rest[1]))
        default: return nil
        }
    }

    func run() throws {
        let environment = CommandContext.current.environment
        let clock = (try? runEnvironment())?.wallClock ?? ConcordEnvironment.systemClock
        let now = clock()
        let server: ConcordServer
        do { server = try ConcordServer.open(root: URL(fileURLWithPath: root)) } catch {
            refuse(describe(error))
        }
        switch mode {
        case .lookup(let user, let key):
            do {
                if let line = try server.authorizedKeysLine(user: user, key: key, now: now) { print(line) }
            } catch {
                refuse(describe(error))
            }
        case .preReceive, .postReceive:
            let check = PushCheck(server: server, repositoryPath: environment["GIT_DIR"] ?? FileManager.default.currentDirectoryPath)
            let input = String(decoding: readInput(), as: UTF8.self)
            do {
                let updates = try PushCheck.Update.parse(input)
                if case .preReceive = mode {
                    try check.check(updates, key: environment["CONCORD_SERVE_KEY"], quarantine: environment["GIT_QUARANTINE_PATH"], now: now)
                } else {
                    try check.refreshKeyIndex(updates)
                }
            } catch let refusal as ServerRefusal {
                refuse(refusal.message)
            }
        case .forcedCommand(let key):
            do {
                // What to do is the library's decision (`ServePlan`); this carries it out.
                switch try ServePlan.connection(environment["SSH_ORIGINAL_COMMAND"], key: key, server: server, now: now) {
                case .refuse(let refusal):
                    refuse(refusal.message)
                case .notice(let notice):
                    writeOutput(Data(notice))
                case .destroy(let profile):
                    let notice = FileHandle.standardInput.readData(ofLength: DeletionNotice.maxBytes + 1)
                    try server.destroy(profile, key: key, noticeBytes: Array(notice))
                    print("deleted \"\(profile)\"")
                case .wait(let request, let admitted):
                    // Held while this process waits; the kernel lets go if it is killed.
                    let places = try WaitSlots(root: server.root, key: key, member: admitted.member, profile: request.profile)
                    let answer = try server.answerWait(request, key: key, admitted: admitted, clock: clock)
                    writeOutput(Data(answer))
                    withExtendedLifetime(places) {}
                case .exec(let exec):
                    refuse("cannot run \(exec.program): \(execute(exec))")
                }
            } catch let refusal as ServerRefusal {
                refuse(refusal.message)
            } catch {
                refuse(describe(error))
            }
        }
    }

    /// One line on stderr, exit 1: what sshd logs, or what git shows the device.
    private func refuse(_ message: String) -> Never {
        writeError("concord serve: \(message.replacingOccurrences(of: "\n", with: " "))\n")
        Foundation.exit(ExitStatus.failure)
    }

    /// Replaces this process with `exec.program` found in PATH, in the environment it set; returns
    /// only on failure, with why.
    private func execute(_ exec: ServePlan.Exec) -> String {
        for (name, value) in exec.setting { setenv(name, value, 1) }
        for name in exec.removing { unsetenv(name) }
        let pointers = exec.arguments.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        execvp(exec.program, pointers)
        return String(cString: strerror(errno))
    }
}
