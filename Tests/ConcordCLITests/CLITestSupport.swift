import Foundation
import XCTest

/// What a finished child process printed and how it exited.
struct RunResult {
    let status: Int32
    let stdoutData: Data
    let stderrData: Data

    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    var stderr: String { String(decoding: stderrData, as: UTF8.self) }
    /// Standard output split into lines, without the empty string after a final newline.
    var stdoutLines: [String] { Self.lines(stdout) }
    var stderrLines: [String] { Self.lines(stderr) }

    static func lines(_ text: String) -> [String] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// A one-line summary for assertion messages.
    var summary: String { "exit \(status)\n--- stdout:\n\(stdout)--- stderr:\n\(stderr)" }
}

/// Runs child processes with an exact environment, capturing output through temporary files
/// (pipes could fill up and deadlock a child that writes a lot to both streams).
enum ProcessRunner {
    static func run(_ executable: String, _ arguments: [String], environment: [String: String],
                    in directory: URL? = nil) throws -> RunResult {
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("concord-cli-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("out")
        let errURL = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return RunResult(status: process.terminationStatus,
                         stdoutData: try Data(contentsOf: outURL), stderrData: try Data(contentsOf: errURL))
    }
}

/// One simulated person: their own CONCORD_HOME.
struct Person {
    let name: String
    let device: String
    let home: URL
}

struct ConcordBinaryMissing: Error, CustomStringConvertible {
    var description: String { "the concord binary was not found: run swift build first (or set CONCORD_BIN)" }
}

/// The fixed clock most tests run under, so stamps and commit dates are predictable.
let fixedClock = "2026-01-01T10:00:00.001Z"

/// Base class of the CLI tests: temp dirs, people, and runners for `concord` and the real `git`.
class CLITestCase: XCTestCase {
    /// The `concord` executable: `CONCORD_BIN`, else next to the test bundle (.build/debug), else
    /// the package's `.build/debug`.
    static let concordPath: String? = {
        let fileManager = FileManager.default
        func isExecutableFile(_ path: String) -> Bool {
            var isDirectory: ObjCBool = false
            return fileManager.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && fileManager.isExecutableFile(atPath: path)
        }
        if let path = ProcessInfo.processInfo.environment["CONCORD_BIN"], !path.isEmpty {
            return isExecutableFile(path) ? path : nil
        }
        var directories = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        if let first = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        directories.append(packageRoot.appendingPathComponent(".build/debug"))
        return directories.map { $0.appendingPathComponent("concord").path }.first(where: isExecutableFile)
    }()

    static let gitPath = "/usr/bin/git"

    /// The root temp directory of the running test; it doubles as HOME for every child, so no
    /// ~/.gitconfig of the machine leaks in.
    private(set) var sandbox: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("concord-cli-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        sandbox = url.resolvingSymlinksInPath()
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        guard FileManager.default.isExecutableFile(atPath: Self.gitPath) else {
            throw XCTSkip("git is not installed at \(Self.gitPath)")
        }
    }

    /// The concord binary, or a test failure saying to build it.
    func concordBinary(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard let path = Self.concordPath else {
            XCTFail("concord binary not found next to the test bundle: run swift build first", file: file, line: line)
            throw ConcordBinaryMissing()
        }
        return path
    }

    /// A new empty directory inside the sandbox.
    func makeDirectory(_ name: String) throws -> URL {
        let url = sandbox.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The environment every child process gets: nothing from this process but PATH.
    func baseEnvironment() -> [String: String] {
        [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": sandbox.path,
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
        ]
    }

    /// The environment `person` runs concord with; `clock` nil leaves CONCORD_CLOCK unset.
    func environment(for person: Person?, clock: String? = fixedClock) -> [String: String] {
        var environment = baseEnvironment()
        if let person { environment["CONCORD_HOME"] = person.home.path }
        if let clock { environment["CONCORD_CLOCK"] = clock }
        return environment
    }

    /// Runs `concord` as `person`, in `directory` (the sandbox when nil).
    @discardableResult
    func concord(_ arguments: [String], as person: Person?, in directory: URL? = nil, clock: String? = fixedClock,
                 file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        try ProcessRunner.run(try concordBinary(file: file, line: line), arguments,
                              environment: environment(for: person, clock: clock), in: directory ?? sandbox)
    }

    /// Runs `concord` and fails the test unless it exits 0.
    @discardableResult
    func concordOK(_ arguments: [String], as person: Person?, in directory: URL? = nil, clock: String? = fixedClock,
                   file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = try concord(arguments, as: person, in: directory, clock: clock, file: file, line: line)
        XCTAssertEqual(result.status, 0, "concord \(arguments.joined(separator: " ")) failed: \(result.summary)",
                       file: file, line: line)
        return result
    }

    /// Runs the real git in `directory`.
    @discardableResult
    func git(_ arguments: [String], in directory: URL) throws -> RunResult {
        try ProcessRunner.run(Self.gitPath, arguments, environment: baseEnvironment(), in: directory)
    }

    /// Runs git and returns its trimmed standard output, failing the test unless it exits 0.
    @discardableResult
    func gitOK(_ arguments: [String], in directory: URL, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try git(arguments, in: directory)
        XCTAssertEqual(result.status, 0, "git \(arguments.joined(separator: " ")) failed: \(result.summary)",
                       file: file, line: line)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Creates a person with an identity (`concord identity new`).
    func makePerson(_ name: String, device: String = "laptop", file: StaticString = #filePath, line: UInt = #line) throws -> Person {
        let person = Person(name: name, device: device, home: sandbox.appendingPathComponent("home-\(name)-\(device)"))
        try concordOK(["identity", "new", "--name", name, "--device", device], as: person, file: file, line: line)
        return person
    }

    /// Creates a profile owned by `owner` in a new directory of the sandbox.
    func makeProfile(_ directoryName: String = "profile", owner: Person, template: String = "aac",
                     file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let url = sandbox.appendingPathComponent(directoryName)
        try concordOK(["init", url.path, "--name", "Test \(directoryName)", "--template", template],
                      as: owner, file: file, line: line)
        return url
    }

    /// What must not change when a command is refused: the branch tip and the working tree state.
    struct Snapshot: Equatable {
        let head: String
        let status: String
        let files: [String: Data]
    }

    func snapshot(_ profile: URL) throws -> Snapshot {
        let head = try git(["rev-parse", "HEAD"], in: profile).stdout
        let status = try git(["status", "--porcelain", "--untracked-files=all", "--ignored"], in: profile).stdout
        var files = [String: Data]()
        let enumerator = FileManager.default.enumerator(atPath: profile.path)
        while let relative = enumerator?.nextObject() as? String {
            if relative == ".git" { enumerator?.skipDescendants(); continue }
            let url = profile.appendingPathComponent(relative)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[relative] = try Data(contentsOf: url)
            }
        }
        return Snapshot(head: head, status: status, files: files)
    }

    /// Asserts `result` is a refusal: exit `status`, exactly one stderr line starting
    /// `concord: error: ` that contains every string of `mentions`, nothing on stdout.
    func assertRefusal(_ result: RunResult, status: Int32 = 1, mentions: [String],
                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, status, "wrong exit status: \(result.summary)", file: file, line: line)
        XCTAssertEqual(result.stderrLines.count, 1, "want exactly one line on stderr: \(result.summary)", file: file, line: line)
        XCTAssertTrue(result.stderr.hasSuffix("\n"), "stderr line must end with a newline", file: file, line: line)
        XCTAssertTrue(result.stderr.hasPrefix("concord: error: "), "stderr must start with 'concord: error: ': \(result.stderr)",
                      file: file, line: line)
        XCTAssertEqual(result.stdout, "", "a refused command prints nothing on stdout", file: file, line: line)
        for mention in mentions {
            XCTAssertTrue(result.stderr.contains(mention), "stderr should mention \(mention): \(result.stderr)", file: file, line: line)
        }
    }

    /// Runs `concord arguments` expecting it to be refused, and checks nothing in `profile` changed.
    func assertRefusedWithoutChange(_ arguments: [String], as person: Person?, profile: URL, status: Int32 = 1,
                                    mentions: [String], in directory: URL? = nil,
                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try snapshot(profile)
        let result = try concord(arguments, as: person, in: directory ?? profile, file: file, line: line)
        assertRefusal(result, status: status, mentions: mentions, file: file, line: line)
        let after = try snapshot(profile)
        XCTAssertEqual(before.head, after.head, "HEAD moved after a refused command", file: file, line: line)
        XCTAssertEqual(before.status, after.status, "git status changed after a refused command", file: file, line: line)
        XCTAssertEqual(before.files.keys.sorted(), after.files.keys.sorted(), "files appeared or vanished", file: file, line: line)
        for (path, bytes) in before.files where after.files[path] != bytes {
            XCTFail("\(path) changed after a refused command", file: file, line: line)
        }
    }

    /// Parses JSON output, failing the test if it is not JSON.
    func parseJSON(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> Any? {
        do {
            return try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            XCTFail("not JSON (\(error)): \(text)", file: file, line: line)
            return nil
        }
    }

    /// Writes `text` to a new file in the sandbox and returns its URL.
    func writeFile(_ name: String, _ text: String) throws -> URL {
        let url = sandbox.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url
    }

    /// The commits of the profile's branch, newest first.
    func commits(_ profile: URL) throws -> [String] {
        try gitOK(["rev-list", "HEAD"], in: profile).split(separator: "\n").map(String.init)
    }
}
