import Foundation
import XCTest
@_exported import ConcordTestSupport

/// Base class of the sync tests: a temp directory per test that is also HOME for every child.
class SyncTestCase: XCTestCase {
    private(set) var sandbox: URL!
    /// Repositories (remotes and devices' profiles) that must pass `git fsck --full` when the
    /// test ends; `makeRemote`, `publishProfile` and `cloneProfile` add theirs.
    var fsckAtEnd = [URL]()

    override func setUpWithError() throws {
        try super.setUpWithError()
        sandbox = try makeSandbox(prefix: "concord-sync-tests")
        fsckAtEnd = []
    }

    /// After the test's own teardown blocks (servers stopped, children killed): every remote and
    /// device of the test must pass `git fsck --full`; then the sandbox goes.
    override func tearDownWithError() throws {
        defer { try? FileManager.default.removeItem(at: sandbox) }
        for repository in fsckAtEnd where FileManager.default.fileExists(atPath: repository.path) {
            if let problem = fsckProblem(in: repository) { XCTFail(problem) }
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
        isolatedEnvironment(home: sandbox, [
            "GIT_AUTHOR_NAME": "Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
            "GIT_COMMITTER_NAME": "Tester", "GIT_COMMITTER_EMAIL": "tester@example.com",
        ].merging(extra) { $1 })
    }

    /// Runs the real git in `directory` (the sandbox when nil).
    @discardableResult
    func git(_ arguments: [String], in directory: URL? = nil, environment extra: [String: String] = [:]) throws -> RunResult {
        try ProcessRunner.run(gitPath, arguments, environment: environment(extra), in: directory ?? sandbox)
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
    /// The device's OpenSSH private key file (what plain git signs with, see `GitSigning`).
    var keyFile: URL { home.appendingPathComponent("id_ed25519") }
}

extension SyncTestCase {
    /// Polls `condition` every 20 ms for up to `seconds`; true as soon as it holds.
    func waitUntil(_ seconds: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
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
                 file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        try ProcessRunner.run(try ConcordBinary.required(), arguments,
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

    /// `device`'s proof of possession of its key for the profile in `profile` and `member` (its own
    /// member name when nil), as `concord identity prove` prints it there.
    func keyProof(of device: SyncDevice, for profile: URL, member: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let info = try JSONSerialization.jsonObject(with: Data(contentsOf: profile.appendingPathComponent(".concord/profile.json"))) as? [String: Any]
        let id = try XCTUnwrap(info?["id"] as? String, file: file, line: line)
        return try concordOK(["identity", "prove", id] + (member.map { ["--member", $0] } ?? []), as: device, file: file, line: line)
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
