import Dispatch
import Foundation

/// What one finished process did, and how long it took from launch to exit (monotonic clock).
struct CommandResult {
    let status: Int32
    let output: String
    let errorOutput: String
    let seconds: Double
}

/// Runs one external process with Foundation's `Process`, capturing its output in files (so a
/// chatty process can never block on a full pipe) and timing it with `ContinuousClock`.
struct CommandRunner {
    /// Where captured output goes; rewritten by every run.
    let scratch: URL

    /// Runs `executable` with `arguments`; throws unless it exits 0. `what` names the step in errors.
    @discardableResult
    func run(_ executable: String, _ arguments: [String], environment: [String: String], directory: String? = nil,
             input: String? = nil, what: String) throws -> CommandResult {
        let result = try launch(executable, arguments, environment: environment, directory: directory, input: input)
        guard result.status == 0 else {
            let shown = ([executable] + arguments).map(Self.quoted).joined(separator: " ")
            let message = result.errorOutput.isEmpty ? result.output : result.errorOutput
            throw BenchError("\(what) failed (exit \(result.status)): \(shown)\n\(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        return result
    }

    private func launch(_ executable: String, _ arguments: [String], environment: [String: String], directory: String?,
                        input: String?) throws -> CommandResult {
        let outURL = scratch.appendingPathComponent("stdout"), errURL = scratch.appendingPathComponent("stderr")
        for url in [outURL, errURL] { try VocabularyData.writeFile(Data(), to: url.path) }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        defer { try? out.close(); try? err.close() }

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.standardOutput = out
        process.standardError = err
        var inputHandle: FileHandle?
        if let input {
            guard let handle = FileHandle(forReadingAtPath: input) else { throw BenchError("cannot read \(input)") }
            inputHandle = handle
            process.standardInput = handle
        } else {
            process.standardInput = FileHandle.nullDevice
        }
        defer { try? inputHandle?.close() }
        // Wait through the termination handler: it fires as soon as the child is reaped, while
        // `waitUntilExit` polls a run loop and can add tens of milliseconds to a short command.
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }

        let clock = ContinuousClock()
        let start = clock.now
        do { try process.run() } catch {
            throw BenchError("cannot start \(executable): \(error.localizedDescription)")
        }
        exited.wait()
        let elapsed = start.duration(to: clock.now)

        let read = { (url: URL) in (try? String(contentsOf: url, encoding: .utf8)) ?? "" }
        return CommandResult(status: process.terminationStatus, output: read(outURL), errorOutput: read(errURL),
                             seconds: elapsed.seconds)
    }

    static func quoted(_ word: String) -> String {
        word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=,:@".contains($0) } ? word : "'\(word)'"
    }
}

/// A failure that stops the bench, with a message saying which step failed.
struct BenchError: Error, LocalizedError {
    let message: String
    init(_ message: String) { self.message = message }
    var errorDescription: String? { message }
}

/// Times an in-process step with the monotonic clock.
func measure<T>(_ body: () throws -> T) rethrows -> (value: T, seconds: Double) {
    let clock = ContinuousClock()
    let start = clock.now
    let value = try body()
    return (value, start.duration(to: clock.now).seconds)
}

extension Duration {
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}

/// Looks `name` up in `PATH`.
func executableInPath(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}
