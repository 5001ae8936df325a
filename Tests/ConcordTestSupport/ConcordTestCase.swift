// The bench links this target too, in a static release build (`make bench`) where XCTest is absent:
// the test base class and the scenario helpers built on it exist only where XCTest does.
#if canImport(XCTest)
import Foundation
import XCTest

/// One simulated device: its own CONCORD_HOME with an identity `member@device`.
package struct TestDevice: Sendable {
    package let member: String
    package let device: String
    package let home: URL
    /// `ssh-ed25519 AAAA… member@device`, as `concord identity show --public-key` prints it; empty for
    /// a device made by hand whose identity was never created.
    package let publicKeyLine: String
    /// The device's OpenSSH private key file (what plain git signs with, see `GitSigning`).
    package var keyFile: URL { home.appendingPathComponent("id_ed25519") }

    package init(member: String, device: String, home: URL, publicKeyLine: String = "") {
        self.member = member
        self.device = device
        self.home = home
        self.publicKeyLine = publicKeyLine
    }
}

/// The fixed clock a test class can run every concord command under (see `ConcordTestCase.defaultClock`),
/// so stamps and commit dates are predictable.
package let fixedClock = "2026-01-01T10:00:00.001Z"

/// Base class of the tests that run the `concord` binary: a temp directory per test that is also HOME
/// for every child, simulated devices, runners for `concord` and the real `git`, and `git fsck` of
/// every repository the test names when it ends.
open class ConcordTestCase: XCTestCase {
    /// The root temp directory of the running test; it doubles as HOME for every child, so no
    /// ~/.gitconfig of the machine leaks in.
    package private(set) var sandbox: URL!
    /// Repositories (remotes and devices' profiles) that must pass `git fsck --full` when the test
    /// ends, if they are still there; `makeRemote`, `publishProfile` and `cloneProfile` add theirs.
    package var fsckAtEnd = [URL]()

    /// CONCORD_CLOCK for the concord runs that name no `clock:`: nil (the real clock) unless the test
    /// class overrides it (the CLI tests: `fixedClock`).
    open class var defaultClock: String? { nil }

    /// Whether `concord(…)` runs concord's commands in this process (`InProcessConcord`), or the
    /// binary as a process of its own, for a class that needs one (it kills concord, counts its
    /// threads or memory, or runs several at once).
    open class var runsConcordInProcess: Bool { true }

    override open func setUpWithError() throws {
        try super.setUpWithError()
        ConcordBinary.runningClass.withLock { $0 = "\(type(of: self))" }
        sandbox = try makeSandbox(prefix: "concord-tests")
        fsckAtEnd = []
        guard FileManager.default.isExecutableFile(atPath: gitPath) else {
            throw XCTSkip("git is not installed at \(gitPath)")
        }
    }

    /// After the test's own teardown blocks (servers stopped, children killed): every remote and
    /// device of the test must pass `git fsck --full`; then the sandbox goes.
    override open func tearDownWithError() throws {
        defer { try? FileManager.default.removeItem(at: sandbox) }
        for repository in fsckAtEnd where FileManager.default.fileExists(atPath: repository.path) {
            if let problem = fsckProblem(in: repository) { XCTFail(problem) }
        }
        try super.tearDownWithError()
    }

    /// A new empty directory inside the sandbox.
    package func makeDirectory(_ name: String) throws -> URL {
        let url = sandbox.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A started SSH server in `<sandbox>/sshd`, stopped when the test ends (before the sandbox goes);
    /// skips the test when OpenSSH's server is not installed.
    package func startSSHServer() throws -> SSHServer {
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
    package func environment(_ extra: [String: String] = [:]) -> [String: String] {
        isolatedEnvironment(home: sandbox, [
            "GIT_AUTHOR_NAME": "Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
            "GIT_COMMITTER_NAME": "Tester", "GIT_COMMITTER_EMAIL": "tester@example.com",
        ].merging(extra) { $1 })
    }

    /// Runs the real git in `directory` (the sandbox when nil).
    @discardableResult
    package func git(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:]) throws -> RunResult {
        try ProcessRunner.run(gitPath, arguments, environment: environment(extra), in: directory ?? sandbox)
    }

    /// git's trimmed stdout, failing the test unless git exits 0.
    @discardableResult
    package func gitOK(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:],
                       file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try git(arguments, in: directory, environment: extra)
        XCTAssertEqual(result.status, 0, "git \(arguments.joined(separator: " ")): \(result.stderr)", file: file, line: line)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Polls `condition` every 20 ms for up to `seconds`; true as soon as it holds.
    package func waitUntil(_ seconds: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }
}
#endif
