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

    /// Whether `arguments` name a command that runs in a process only (`-C dir` before it is
    /// skipped; asking for its help does not), or a run in this process hung (`run(deadline:)`):
    /// every later one is the binary's, so one hang cannot stop the rest of the suite.
    public static func needsProcess(_ arguments: [String]) -> Bool {
        guard !hung.withLock({ $0 }) else { return true }
        if arguments.contains(where: { ["-h", "--help"].contains($0) }) { return false }
        let command = arguments.first == "-C" ? arguments.dropFirst(2).first : arguments.first(where: { !$0.hasPrefix("-C") })
        return command.map(processOnly.contains) ?? false
    }

    /// Runs `arguments` as concord would with `environment` in `directory`, `input` its standard
    /// input; what it printed and its exit code. The merge driver the profile's git config names is
    /// the built binary (`executable`), as when the binary ran.
    public static func run(_ arguments: [String], environment: [String: String], in directory: URL, input: Data?,
                           executable: String) -> RunResult {
        let output = Captured(), errors = Captured()
        let status = ConcordCommandLine.run(arguments, in: context(environment, directory, input, executable, output, errors))
        return RunResult(status: status, stdoutData: output.data, stderrData: errors.data)
    }

    /// `run`, given at most `deadline` seconds: a run still going then is reported as timed out
    /// (status -1, what it printed so far), left to its thread, and every later run is the binary's.
    public static func run(_ arguments: [String], environment: [String: String], in directory: URL, input: Data? = nil,
                           executable: String, deadline: Double) -> RunResult {
        let output = Captured(), errors = Captured(), status = Mutex<Int32?>(nil), done = DispatchSemaphore(value: 0)
        let context = context(environment, directory, input, executable, output, errors)
        Thread.detachNewThread {
            let code = ConcordCommandLine.run(arguments, in: context)
            status.withLock { $0 = code }
            done.signal()
        }
        guard done.wait(timeout: .now() + deadline) == .success, let code = status.withLock({ $0 }) else {
            hung.withLock { $0 = true }
            return RunResult(status: -1, stdoutData: output.data, stderrData: errors.data, timedOut: true)
        }
        return RunResult(status: code, stdoutData: output.data, stderrData: errors.data)
    }

    /// Whether a run in this process outlived its deadline.
    private static let hung = Mutex(false)

    private static func context(_ environment: [String: String], _ directory: URL, _ input: Data?, _ executable: String,
                                _ output: Captured, _ errors: Captured) -> CommandContext {
        CommandContext(environment: environment, directory: directory, standardInput: { input ?? Data() },
                       standardOutput: output.append, standardError: errors.append, executable: executable, ownsProcess: false)
    }

    /// Bytes a run writes, from any of its threads.
    private final class Captured: Sendable {
        private let bytes = Mutex(Data())
        @Sendable func append(_ data: Data) { bytes.withLock { $0.append(data) } }
        var data: Data { bytes.withLock { $0 } }
    }
}
