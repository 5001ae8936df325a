// The entry point: parse, run, and map failures to exit codes (0 ok, 1 error, 2 usage).
import ArgumentParser
import ConcordKit
import Foundation

/// The commands machines run once per connection or per merged file (sshd's forced command and
/// key lookup, the repositories' hooks, git's merge driver) are parsed on their own: building the
/// whole command tree first costs about a quarter of concord's start (perf: Swift protocol
/// conformance lookups for each command type ArgumentParser names). Help goes through the tree,
/// so it reads `concord serve …` as always.
let directCommands: [String: ParsableCommand.Type] = ["serve": Serve.self, "merge-driver": MergeDriverCommand.self]

/// `-C <dir>` given before the command (`concord -C sam sync`) is moved after it (`concord sync -C sam`),
/// where each profile command's `ProfileOption` reads it; `-C dir`, `-C=dir` and `-Cdir` are all taken.
func movingLeadingDirectory(_ arguments: [String]) -> [String] {
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

/// Ends the process for `error`, printing `message`: an offline line has no `error:` (exit 3).
func fail(_ error: ConcordError, _ message: String) -> Never {
    let prefix = if case .offline = error { "concord: " } else { "concord: error: " }
    FileHandle.standardError.write(Data((prefix + message.replacingOccurrences(of: "\n", with: " ") + "\n").utf8))
    exit(ExitStatus.code(for: error))
}

// Everything concord writes is its owner's alone (files 0600, directories 0700, git's objects
// 0400): profiles hold people's records, CONCORD_HOME their keys. The server's commands (`serve`,
// `server`) keep the modes docs/server.md gives.
if !["serve", "server"].contains(CommandLine.arguments.dropFirst().first ?? "") { umask(0o077) }

/// What runs: a parsed command, or `concord serve` in one of the exact forms sshd and the hooks use
/// (`ServeRun.direct`, read without ArgumentParser at all).
let run: () throws -> Void
do {
    let arguments = movingLeadingDirectory(Array(CommandLine.arguments.dropFirst()))
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
    let code = Concord.exitCode(for: error)
    if code == .success { Concord.exit(withError: error) }
    FileHandle.standardError.write(Data((Concord.fullMessage(for: error) + "\n").utf8))
    exit(ExitStatus.usage)
}
do {
    try run()
} catch let exit as ExitCode {
    Foundation.exit(exit.rawValue)
} catch let error as ConcordError {
    fail(error, describe(error))
} catch let failure as SetUpFailure {
    fail(failure.error, failure.error.cliMessage(settingUp: failure.command))
} catch let error as ValidationError {
    FileHandle.standardError.write(Data("concord: \(error.message)\n".utf8))
    exit(ExitStatus.usage)
} catch {
    // Help and version requests surface as errors thrown from run(): let the parser finish them.
    if Concord.exitCode(for: error) == .success {
        Concord.exit(withError: error)
    }
    FileHandle.standardError.write(Data("concord: error: \(describe(error))\n".utf8))
    exit(ExitStatus.failure)
}
