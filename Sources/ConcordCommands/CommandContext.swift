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
    /// Whether the run has its process to itself (the binary): only then does a clone take SIGINT
    /// and SIGTERM (to remove what it wrote) and keep the memory it frees for itself, both settings of
    /// the whole process.
    public var ownsProcess: Bool

    public init(environment: [String: String], directory: URL, standardInput: @escaping @Sendable () -> Data,
                standardOutput: @escaping @Sendable (Data) -> Void, standardError: @escaping @Sendable (Data) -> Void,
                executable: String?, ownsProcess: Bool) {
        (self.environment, self.directory, self.standardInput) = (environment, directory, standardInput)
        (self.standardOutput, self.standardError, self.executable, self.ownsProcess) = (standardOutput, standardError, executable, ownsProcess)
    }

    /// This process's own: its environment, working directory and standard streams.
    public static var process: CommandContext {
        CommandContext(environment: ProcessInfo.processInfo.environment,
                       directory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
                       standardInput: { FileHandle.standardInput.readDataToEndOfFile() },
                       standardOutput: { FileHandle.standardOutput.write($0) }, standardError: { FileHandle.standardError.write($0) },
                       executable: nil, ownsProcess: true)
    }

    /// The context of the run going on: a run in a test's process holds it for every thread the
    /// run uses (runs in one process take turns, `ConcordCommandLine.run(_:in:)`); otherwise the process's.
    static var current: CommandContext { running.withLock { $0 } ?? .process }
    private static let running = Mutex<CommandContext?>(nil)

    /// Runs `body` with `context` current, one run at a time in this process, in its working directory
    /// and with `runMask` as the umask (both process-wide), both put back after; nil (nothing run)
    /// when its working directory cannot be entered.
    static func running<T>(_ context: CommandContext, umask runMask: mode_t, _ body: () -> T) -> T? {
        turn.withLock {
            let directory = FileManager.default.currentDirectoryPath
            guard FileManager.default.changeCurrentDirectoryPath(context.directory.path) else { return nil }
            let mask = umask(runMask)
            running.withLock { $0 = context }
            defer {
                running.withLock { $0 = nil }
                _ = FileManager.default.changeCurrentDirectoryPath(directory)
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
