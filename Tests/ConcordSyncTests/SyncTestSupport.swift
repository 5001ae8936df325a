import Foundation
import XCTest

/// Runs child processes with an exact environment, capturing output through temporary files
/// (pipes could fill up and deadlock a child that writes a lot to both streams).
/// For commands that finish; a daemon that closes inherited descriptors (sshd) needs `ChildProcess`.
enum SyncProcess {
    /// A child that exited non-zero when it had to succeed.
    struct Failure: Error, CustomStringConvertible {
        let command: String
        let status: Int32
        let stderr: String
        var description: String { "`\(command)` exited \(status): \(stderr)" }
    }

    /// Runs `path` with `args`, exactly `environment` (nothing is inherited) and `directory` as its working
    /// directory (this process's when nil), stdin from /dev/null; waits for it to exit.
    static func run(_ path: String, _ args: [String], environment: [String: String],
                    in directory: URL? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("concord-sync-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outURL = scratch.appendingPathComponent("out"), errURL = scratch.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = args
        process.environment = environment
        if let directory { process.currentDirectoryURL = directory }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return (process.terminationStatus,
                String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
                String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    /// `run`, throwing `Failure` unless the child exits 0; returns its trimmed stdout.
    @discardableResult
    static func runOK(_ path: String, _ args: [String], environment: [String: String],
                      in directory: URL? = nil) throws -> String {
        let result = try run(path, args, environment: environment, in: directory)
        guard result.status == 0 else {
            throw Failure(command: ([path] + args).joined(separator: " "), status: result.status, stderr: result.stderr)
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `text` as one POSIX shell word (for commands git hands to `sh`, like GIT_SSH_COMMAND).
    static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// An ed25519 client key pair made by the real ssh-keygen, with no passphrase.
struct SSHClientKey {
    let privateKey: URL
    let publicKeyLine: String

    /// Writes `<directory>/<name>` and `<name>.pub`; `home` is ssh-keygen's HOME.
    static func generate(in directory: URL, name: String = "client", home: URL) throws -> SSHClientKey {
        let url = directory.appendingPathComponent(name)
        try SyncProcess.runOK("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "concord-test-\(name)", "-f", url.path],
                              environment: ["PATH": "/usr/bin:/bin", "HOME": home.path])
        let line = try String(contentsOf: url.appendingPathExtension("pub"), encoding: .utf8)
        return SSHClientKey(privateKey: url, publicKeyLine: line.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// An ssh command line for GIT_SSH_COMMAND that uses only this key and only `knownHosts`, never prompts,
    /// and ignores ~/.ssh (ssh finds it through the passwd entry, not HOME, hence `-F /dev/null`).
    func sshCommand(knownHosts: URL, verbose: Bool = false) -> String {
        var words = ["/usr/bin/ssh", "-F", "/dev/null", "-i", privateKey.path, "-o", "IdentitiesOnly=yes",
                     "-o", "UserKnownHostsFile=\(knownHosts.path)", "-o", "GlobalKnownHostsFile=/dev/null",
                     "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
        if verbose { words.append("-v") }
        return words.map(SyncProcess.shellQuoted).joined(separator: " ")
    }
}

/// Base class of the sync tests: a temp directory per test that is also HOME for every child.
class SyncTestCase: XCTestCase {
    private(set) var sandbox: URL!
    /// Repositories (remotes and devices' profiles) that must pass `git fsck --full` when the
    /// test ends; `makeRemote`, `publishProfile` and `cloneProfile` add theirs.
    var fsckAtEnd = [URL]()

    override func setUpWithError() throws {
        try super.setUpWithError()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("concord-sync-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        sandbox = url.resolvingSymlinksInPath()
        fsckAtEnd = []
    }

    /// After the test's own teardown blocks (servers stopped, children killed): every remote and
    /// device of the test must pass `git fsck --full`; then the sandbox goes.
    override func tearDownWithError() throws {
        defer { try? FileManager.default.removeItem(at: sandbox) }
        for repository in fsckAtEnd where FileManager.default.fileExists(atPath: repository.path) {
            let result = try git(["fsck", "--full", "--no-progress", "--no-dangling"], in: repository)
            XCTAssertEqual(result.status, 0, "git fsck --full at the end of the test, in \(repository.path): \(result.stdout)\(result.stderr)")
        }
        try super.tearDownWithError()
    }

    /// A new empty directory inside the sandbox.
    func makeDirectory(_ name: String) throws -> URL {
        let url = sandbox.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A started SSH server in `<sandbox>/sshd`, stopped when the test ends (before the sandbox goes);
    /// skips the test when OpenSSH's server is not installed.
    func startSSHServer() throws -> SSHServer {
        guard FileManager.default.isExecutableFile(atPath: SSHServer.sshdPath) else {
            throw XCTSkip("\(SSHServer.sshdPath) is missing: run `make test` or `apt-get install openssh-server`")
        }
        let server = try SSHServer(directory: try makeDirectory("sshd"))
        addTeardownBlock { server.stop() }
        try server.start()
        return server
    }

    /// The environment every child gets: nothing from this process; HOME is the sandbox, git has no
    /// system config and a fixed identity; `extra` is added on top.
    func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var environment = [
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": sandbox.path,
            "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
            "GIT_COMMITTER_NAME": "Tester", "GIT_COMMITTER_EMAIL": "tester@example.com",
        ]
        environment.merge(extra) { $1 }
        return environment
    }

    /// Runs the real git in `directory` (the sandbox when nil).
    @discardableResult
    func git(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:])
        throws -> (status: Int32, stdout: String, stderr: String) {
        try SyncProcess.run("/usr/bin/git", arguments, environment: environment(extra), in: directory ?? sandbox)
    }

    /// git's trimmed stdout, failing the test unless git exits 0.
    @discardableResult
    func gitOK(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:],
               file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try git(arguments, in: directory, environment: extra)
        XCTAssertEqual(result.status, 0, "git \(arguments.joined(separator: " ")): \(result.stderr)", file: file, line: line)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

// MARK: - The concord binary and simulated devices

/// One simulated device: its own CONCORD_HOME with an identity `member@device`.
struct SyncDevice {
    let member: String
    let device: String
    let home: URL
    /// `ssh-ed25519 AAAA… member@device`, as `concord identity show --public-key` prints it.
    let publicKeyLine: String
}

struct ConcordBinaryMissing: Error, CustomStringConvertible {
    var description: String { "the concord binary was not found: run swift build first (or set CONCORD_BIN)" }
}

extension SyncTestCase {
    /// The `concord` executable: `CONCORD_BIN`, else next to the test bundle (.build/debug), else
    /// the package's `.build/debug` (the same search as the CLI tests).
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

    /// The concord binary, or a test failure saying to build it.
    func concordBinary(file: StaticString = #filePath, line: UInt = #line) throws -> String {
        guard let path = Self.concordPath else {
            XCTFail("concord binary not found next to the test bundle: run swift build first", file: file, line: line)
            throw ConcordBinaryMissing()
        }
        return path
    }

    /// The environment `device` runs concord with (see `environment(_:)`); `clock` sets CONCORD_CLOCK.
    func concordEnvironment(_ device: SyncDevice?, clock: String? = nil) -> [String: String] {
        var extra = [String: String]()
        if let device { extra["CONCORD_HOME"] = device.home.path }
        if let clock { extra["CONCORD_CLOCK"] = clock }
        return environment(extra)
    }

    /// Runs `concord arguments` as `device` in `directory` (the sandbox when nil).
    @discardableResult
    func concord(_ arguments: [String], as device: SyncDevice?, in directory: URL? = nil, clock: String? = nil,
                 file: StaticString = #filePath, line: UInt = #line) throws -> (status: Int32, stdout: String, stderr: String) {
        try SyncProcess.run(try concordBinary(file: file, line: line), arguments,
                            environment: concordEnvironment(device, clock: clock), in: directory ?? sandbox)
    }

    /// `concord`, failing the test unless it exits 0; returns its trimmed stdout.
    @discardableResult
    func concordOK(_ arguments: [String], as device: SyncDevice?, in directory: URL? = nil, clock: String? = nil,
                   file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try concord(arguments, as: device, in: directory, clock: clock, file: file, line: line)
        XCTAssertEqual(result.status, 0, "concord \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)",
                       file: file, line: line)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A device with a new identity in `<sandbox>/home-<member>-<device>`.
    func makeDevice(_ member: String, device: String, file: StaticString = #filePath, line: UInt = #line) throws -> SyncDevice {
        let home = sandbox.appendingPathComponent("home-\(member)-\(device)")
        let partial = SyncDevice(member: member, device: device, home: home, publicKeyLine: "")
        try concordOK(["identity", "new", "--name", member, "--device", device], as: partial, file: file, line: line)
        let key = try concordOK(["identity", "show", "--public-key"], as: partial, file: file, line: line)
        return SyncDevice(member: member, device: device, home: home, publicKeyLine: key)
    }
}
