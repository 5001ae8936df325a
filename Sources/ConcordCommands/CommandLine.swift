import ArgumentParser
import ConcordKit
import Foundation

/// concord's command line: parse, run, and map failures to exit codes (0 ok, 1 error, 2 usage,
/// 3 offline, 4 refused, 5 invalid commit) and one line on standard error.
public enum ConcordCommandLine {
    /// Runs `arguments` (without the program's name) as the `concord` binary does, and returns its
    /// exit code; `context` gives its environment, directory and streams. Runs in one process take
    /// turns (their directory and umask are the process's).
    public static func run(_ arguments: [String], in context: CommandContext) -> Int32 {
        // The binary's umask (main.swift): owner-only, but for the server's commands.
        let mask: mode_t = ["serve", "server"].contains(arguments.first ?? "") ? 0o022 : 0o077
        guard let status = CommandContext.running(context, umask: mask, { run(arguments) }) else {
            // As a process could not start there.
            context.standardError(Data("concord: error: cannot work in \(context.directory.path): no such directory or not enterable\n".utf8))
            return ExitStatus.failure
        }
        return status
    }

    /// The commands machines run once per connection or per merged file (sshd's forced command and
    /// key lookup, the repositories' hooks, git's merge driver) are parsed on their own: building the
    /// whole command tree first costs about a quarter of concord's start (perf: Swift protocol
    /// conformance lookups for each command type ArgumentParser names). Help goes through the tree,
    /// so it reads `concord serve …` as always.
    static let directCommands: [String: ParsableCommand.Type] = ["serve": Serve.self, "merge-driver": MergeDriverCommand.self]

    /// Runs `arguments` with the current context; the exit code.
    public static func run(_ arguments: [String]) -> Int32 {
        let run: () throws -> Void
        do {
            let arguments = movingLeadingDirectory(arguments)
            if let serve = ServeRun.direct(arguments) {
                run = serve.run
            } else if let name = arguments.first, let direct = directCommands[name],
                      !arguments.contains(where: { ["-h", "--help"].contains($0) }) {
                var command = try direct.parseAsRoot(Array(arguments.dropFirst()))
                run = { try command.run() }
            } else {
                var command = try Concord.parseAsRoot(arguments)
                run = { try command.run() }
            }
        } catch {
            return finish(parsing: error)
        }
        do {
            try run()
            return 0
        } catch let exit as ExitCode {
            return exit.rawValue
        } catch let error as ConcordError {
            return fail(error, describe(error))
        } catch let failure as SetUpFailure {
            return fail(failure.error, failure.error.cliMessage(settingUp: failure.command))
        } catch let error as ValidationError {
            writeError("concord: \(error.message)\n")
            return ExitStatus.usage
        } catch {
            // Help and version requests surface as errors thrown from run(): the parser finishes them.
            if Concord.exitCode(for: error) == .success { return finish(parsing: error) }
            writeError("concord: error: \(describe(error))\n")
            return ExitStatus.failure
        }
    }

    /// What ArgumentParser's `exit(withError:)` prints for a parse error (or a help or version
    /// request, to standard output), without ending the process; its exit code (2 for a usage error).
    private static func finish(parsing error: Error) -> Int32 {
        let code = Concord.exitCode(for: error)
        let message = Concord.fullMessage(for: error)
        if code == .success {
            if !message.isEmpty { writeOutput(message + "\n") }
            return 0
        }
        writeError(message + "\n")
        return code == .validationFailure ? ExitStatus.usage : code.rawValue
    }

    /// Writes `message` for `error`: an offline line has no `error:` (exit 3).
    private static func fail(_ error: ConcordError, _ message: String) -> Int32 {
        let prefix = if case .offline = error { "concord: " } else { "concord: error: " }
        writeError(prefix + message.replacingOccurrences(of: "\n", with: " ") + "\n")
        return ExitStatus.code(for: error)
    }

    /// `-C <dir>` given before the command (`concord -C sam sync`) is moved after it (`concord sync -C sam`),
    /// where each profile command's `ProfileOption` reads it; `-C dir`, `-C=dir` and `-Cdir` are all taken.
    static func movingLeadingDirectory(_ arguments: [String]) -> [String] {
        guard let first = arguments.first, first.hasPrefix("-C") else { return arguments }
        let directory: String
        var rest = Array(arguments.dropFirst())
        if first == "-C" {
            guard !rest.isEmpty else { return arguments }
            directory = rest.removeFirst()
        } else {
            directory = String(first.dropFirst(first.hasPrefix("-C=") ? 3 : 2))
        }
        // Before a `--`, after which everything is an argument.
        rest.insert(contentsOf: ["-C", directory], at: rest.firstIndex(of: "--") ?? rest.endIndex)
        return rest
    }
}
