import Foundation
import Synchronization

/// Where a run of concord's commands reads and writes: its environment variables, its working
/// directory, its standard input and output, and the concord executable plain git runs as the
/// merge driver. The `concord` binary runs them with its own process's (`CommandContext.process`);
/// a test runs them in its process with a device's (`ConcordCommandLine.run(_:in:)`), capturing
/// what they print.
public struct CommandContext: Sendable {
    /// The environment variables (`CONCORD_HOME`, `CONCORD_CLOCK`, …).
    public var environment: [String: String]
    /// The working directory relative paths are read against.
    public var directory: URL
    /// Standard input, read whole when a command asks (`-` for a file).
    public var standardInput: @Sendable () -> Data
    /// Standard output and error.
    public var standardOutput: @Sendable (Data) -> Void
    public var standardError: @Sendable (Data) -> Void
    /// The concord executable, for the merge driver's path (nil: this process's).
    public var executable: String?
    /// Whether a clone stops on SIGINT and SIGTERM and removes what it wrote (a process of its own only).
    public var handlesSignals: Bool

    public init(environment: [String: String], directory: URL, standardInput: @escaping @Sendable () -> Data,
                standardOutput: @escaping @Sendable (Data) -> Void, standardError: @escaping @Sendable (Data) -> Void,
                executable: String?, handlesSignals: Bool) {
        (self.environment, self.directory, self.standardInput) = (environment, directory, standardInput)
        (self.standardOutput, self.standardError, self.executable, self.handlesSignals) = (standardOutput, standardError, executable, handlesSignals)
    }

    /// This process's own: its environment, working directory and standard streams.
    public static var process: CommandContext {
        CommandContext(environment: ProcessInfo.processInfo.environment,
                       directory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
                       standardInput: { FileHandle.standardInput.readDataToEndOfFile() },
                       standardOutput: { FileHandle.standardOutput.write($0) }, standardError: { FileHandle.standardError.write($0) },
                       executable: nil, handlesSignals: true)
    }

    /// The context of the run going on: a run in a test's process holds it for every thread the
    /// run uses (runs in one process take turns, `ConcordCommandLine.run(_:in:)`); otherwise the process's.
    static var current: CommandContext { running.withLock { $0 } ?? .process }
    private static let running = Mutex<CommandContext?>(nil)

    /// Runs `body` with `context` current, one run at a time in this process, in its working directory
    /// and with `runMask` as the umask (both process-wide), both put back after.
    static func running<T>(_ context: CommandContext, umask runMask: mode_t, _ body: () -> T) -> T {
        turn.withLock {
            let directory = FileManager.default.currentDirectoryPath
            let mask = umask(runMask)
            FileManager.default.changeCurrentDirectoryPath(context.directory.path)
            running.withLock { $0 = context }
            defer {
                running.withLock { $0 = nil }
                FileManager.default.changeCurrentDirectoryPath(directory)
                umask(mask)
            }
            return body()
        }
    }
    private static let turn = NSLock()
}

/// `Swift.print`, to the run's standard output: every command prints through it.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    writeOutput(items.map { "\($0)" }.joined(separator: separator) + terminator)
}

/// Writes `text` (or `data`) to the run's standard output.
func writeOutput(_ text: String) { writeOutput(Data(text.utf8)) }
func writeOutput(_ data: Data) { CommandContext.current.standardOutput(data) }

/// Writes `text` to the run's standard error.
func writeError(_ text: String) { CommandContext.current.standardError(Data(text.utf8)) }

/// The run's standard input, read whole.
func readInput() -> Data { CommandContext.current.standardInput() }
