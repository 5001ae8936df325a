import Foundation

/// What a finished child process printed and how it exited.
public struct RunResult: Sendable {
    public let status: Int32
    public let stdoutData: Data
    public let stderrData: Data
    /// Whether the child was killed at its deadline (`ProcessRunner.run(deadline:)`).
    public var timedOut = false

    public var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    public var stderr: String { String(decoding: stderrData, as: UTF8.self) }
    /// Standard output split into lines, without the empty string after a final newline.
    public var stdoutLines: [String] { Self.lines(stdout) }
    public var stderrLines: [String] { Self.lines(stderr) }
    /// Standard output without the whitespace and newlines around it.
    public var trimmedStdout: String { stdout.trimmingCharacters(in: .whitespacesAndNewlines) }

    public static func lines(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// The exit status and both streams, for assertion messages.
    public var summary: String { "exit \(status)\n--- stdout:\n\(stdout)--- stderr:\n\(stderr)" }
}

/// A child that exited non-zero when it had to succeed.
public struct CommandFailure: Error, CustomStringConvertible {
    public init(command: String, status: Int32, stderr: String) {
        self.command = command
        self.status = status
        self.stderr = stderr
    }

    public let command: String
    public let status: Int32
    public let stderr: String
    public var description: String { "`\(command)` exited \(status): \(stderr)" }
}

/// Runs child processes that finish, with an exact environment (nothing is inherited), capturing
/// output through temporary files: pipes could fill up and deadlock a child that writes a lot to
/// both streams. A daemon that closes inherited descriptors (sshd) needs `ChildProcess`.
public enum ProcessRunner {
    /// Runs `path` with `arguments` in `directory` (this process's when nil), stdin from `input`
    /// (/dev/null when nil); waits for it to exit, or kills it after `deadline` seconds (a hang is
    /// then a failed assertion, not a stuck test run).
    public static func run(_ path: String, _ arguments: [String], environment: [String: String],
                           in directory: URL? = nil, input: Data? = nil, deadline: Double? = nil) throws -> RunResult {
        ConcordBinary.noteStart(of: path)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("concord-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inURL = scratch.appendingPathComponent("in")
        let outURL = scratch.appendingPathComponent("out"), errURL = scratch.appendingPathComponent("err")
        try (input ?? Data()).write(to: inURL)
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let inHandle = try FileHandle(forReadingFrom: inURL)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
        process.standardInput = input == nil ? FileHandle.nullDevice : inHandle
        process.standardOutput = out
        process.standardError = err
        try process.run()
        var timedOut = false
        if let deadline {
            let end = Date().addingTimeInterval(deadline)
            while process.isRunning, !timedOut {
                if Date() > end { kill(process.processIdentifier, SIGKILL); timedOut = true }
                usleep(20_000)
            }
        }
        process.waitUntilExit()
        try inHandle.close()
        try out.close()
        try err.close()
        return RunResult(status: process.terminationStatus, stdoutData: try Data(contentsOf: outURL),
                         stderrData: try Data(contentsOf: errURL), timedOut: timedOut)
    }

    /// `run`, throwing `CommandFailure` unless the child exits 0; returns its trimmed stdout.
    @discardableResult
    public static func runOK(_ path: String, _ arguments: [String], environment: [String: String],
                             in directory: URL? = nil, input: Data? = nil) throws -> String {
        let result = try run(path, arguments, environment: environment, in: directory, input: input)
        guard result.status == 0 else {
            throw CommandFailure(command: ([path] + arguments).joined(separator: " "), status: result.status, stderr: result.stderr)
        }
        return result.trimmedStdout
    }

    /// `text` as one POSIX shell word (for commands git hands to `sh`, like GIT_SSH_COMMAND).
    public static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// The environment a child gets in a test: nothing from this process but its sanitizer options
/// (`make test-asan`, `make test-tsan`: the concord binaries the tests run are sanitized too);
/// HOME is the test's sandbox (so no ~/.gitconfig of the machine leaks in), git reads no system
/// config; `extra` is added on top.
public func isolatedEnvironment(home: URL, _ extra: [String: String] = [:]) -> [String: String] {
    ["PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home.path, "LANG": "C.UTF-8", "GIT_CONFIG_NOSYSTEM": "1"]
        .merging(sanitizerOptions) { $1 }
        .merging(extra) { $1 }
}

/// This process's `ASAN_OPTIONS`, `LSAN_OPTIONS`, `TSAN_OPTIONS` and `SWIFT_BACKTRACE` (how a crashing
/// child tells where it crashed), when set.
public let sanitizerOptions: [String: String] = ProcessInfo.processInfo.environment.filter { name, _ in
    ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "SWIFT_BACKTRACE"].contains(name)
}

/// Where the real git is: the judge of what Concord writes.
public let gitPath = "/usr/bin/git"

/// nil when `git fsck --full` passes in `repository` (a profile, a clone, a bare remote), else
/// what it printed, for the test's failure. HOME is the repository's parent (in the sandbox).
/// The check every test target runs on its repositories when a test ends (`fsckAtEnd`).
public func fsckProblem(in repository: URL) -> String? {
    do {
        let result = try ProcessRunner.run(gitPath, ["fsck", "--full", "--no-progress", "--no-dangling"],
                                           environment: isolatedEnvironment(home: repository.deletingLastPathComponent()),
                                           in: repository)
        return result.status == 0 ? nil : "git fsck --full at the end of the test, in \(repository.path): \(result.summary)"
    } catch {
        return "git fsck --full at the end of the test, in \(repository.path): \(error)"
    }
}

/// A new temporary directory named `<prefix>-<uuid>`, with symlinks resolved (macOS's /var is one),
/// for a test to use as its sandbox and HOME; the caller removes it.
public func makeSandbox(prefix: String) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.resolvingSymlinksInPath()
}

/// A new sandbox that `register` removes at the end: a test base class passes its `addTeardownBlock`.
public func makeSandbox(prefix: String, removedBy register: (@escaping () -> Void) -> Void) throws -> URL {
    let url = try makeSandbox(prefix: prefix)
    register { try? FileManager.default.removeItem(at: url) }
    return url
}

/// What `body` threw, as `E`, or why not: a test base class turns `problem` into a failure
/// (`XCTFail`), which this target cannot call (the bench links it, and XCTest is not for release builds).
public func thrownError<E: Error, T>(_ type: E.Type, by body: () throws -> T) -> (error: E?, problem: String?) {
    do {
        let value = try body()
        return (nil, "expected a \(E.self), got \(value)")
    } catch let error as E {
        return (error, nil)
    } catch {
        return (nil, "expected a \(E.self), got \(Swift.type(of: error)): \(error)")
    }
}

/// The JSON objects among the lines of `url` (a `concord watch --json` log; other lines, e.g. from
/// stderr, are skipped).
public func jsonObjectLines(of url: URL) -> [[String: Any]] {
    let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { line in
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}

/// Every file of a work tree outside `.git`, path → bytes: what a refused command must leave alone.
public func workTreeFiles(of root: URL) throws -> [String: Data] {
    var files = [String: Data]()
    let enumerator = FileManager.default.enumerator(atPath: root.path)
    while let relative = enumerator?.nextObject() as? String {
        if relative == ".git" { enumerator?.skipDescendants(); continue }
        let url = root.appendingPathComponent(relative)
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
            files[relative] = try Data(contentsOf: url)
        }
    }
    return files
}
