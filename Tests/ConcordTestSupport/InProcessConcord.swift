import ConcordCommands
import Foundation
import Synchronization

/// concord's commands run in this process (`ConcordCommandLine.run(_:in:)`), as the binary would
/// run them with the same arguments, environment, directory and standard input: the same exit code
/// and the same bytes on standard output and error, without a process per command. The commands
/// that live as a process (`serve` under sshd and the hooks, `watch` until a signal, the merge
/// driver git starts) are the binary's alone.
public enum InProcessConcord {
    /// Commands that need a process of their own.
    public static let processOnly: Set<String> = ["serve", "watch", "merge-driver"]

    /// Whether `arguments` name a command that runs in a process only (`-C dir` before it is skipped).
    public static func needsProcess(_ arguments: [String]) -> Bool {
        let command = arguments.first == "-C" ? arguments.dropFirst(2).first : arguments.first(where: { !$0.hasPrefix("-C") })
        return command.map(processOnly.contains) ?? false
    }

    /// Runs `arguments` as concord would with `environment` in `directory`, `input` its standard
    /// input; what it printed and its exit code. The merge driver the profile's git config names is
    /// the built binary (`executable`), as when the binary ran.
    public static func run(_ arguments: [String], environment: [String: String], in directory: URL, input: Data?,
                           executable: String) -> RunResult {
        let output = Captured(), errors = Captured()
        let context = CommandContext(environment: environment, directory: directory, standardInput: { input ?? Data() },
                                     standardOutput: output.append, standardError: errors.append, executable: executable,
                                     handlesSignals: false)
        let status = ConcordCommandLine.run(arguments, in: context)
        return RunResult(status: status, stdoutData: output.data, stderrData: errors.data)
    }

    /// Bytes a run writes, from any of its threads.
    private final class Captured: Sendable {
        private let bytes = Mutex(Data())
        @Sendable func append(_ data: Data) { bytes.withLock { $0.append(data) } }
        var data: Data { bytes.withLock { $0 } }
    }
}
