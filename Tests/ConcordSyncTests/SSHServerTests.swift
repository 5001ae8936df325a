import ConcordTestSupport
import Foundation
import XCTest

/// The SSHServer fixture against the real clients: ssh, git over ssh, ssh-keygen.
final class SSHServerTests: ConcordTestCase {
    private var server: SSHServer!
    private var key: SSHClientKey!
    private var knownHosts: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        server = try startSSHServer()
        key = try SSHClientKey.generate(in: try makeDirectory("keys"), home: sandbox)
        try server.authorize(publicKeyLine: key.publicKeyLine)
        knownHosts = sandbox.appendingPathComponent("known_hosts")
        try trustServer()
    }

    override func tearDownWithError() throws {
        server = nil
        try super.tearDownWithError()
    }

    private func trustServer() throws {
        try Data((server.knownHostsLine + "\n").utf8).write(to: knownHosts)
    }

    private func sshEnvironment(_ key: SSHClientKey? = nil, verbose: Bool = false) -> [String: String] {
        ["GIT_SSH_COMMAND": (key ?? self.key).sshCommand(knownHosts: knownHosts, verbose: verbose)]
    }

    /// Runs `command` on the server through the real ssh client.
    private func ssh(_ command: String, key: SSHClientKey? = nil, verbose: Bool = false)
        throws -> RunResult {
        let sshCommand = (key ?? self.key).sshCommand(knownHosts: knownHosts, verbose: verbose)
        return try ProcessRunner.run("/bin/sh", ["-c", "\(sshCommand) -p \(server.port) \(server.user)@127.0.0.1 \(command)"],
                                   environment: environment())
    }

    private func makeBareRepository(_ name: String = "remote.git") throws -> URL {
        let url = sandbox.appendingPathComponent(name)
        try gitOK(["init", "--quiet", "--bare", "--initial-branch=main", url.path])
        return url
    }

    func testCloneAndPushOverSSHReachTheBareRepository() throws {
        let bare = try makeBareRepository()
        let remote = server.url(for: bare)
        XCTAssertEqual(remote, "ssh://\(server.user)@127.0.0.1:\(server.port)\(bare.path)")

        let clone = sandbox.appendingPathComponent("clone")
        try gitOK(["clone", "--quiet", remote, clone.path], environment: sshEnvironment())
        fsckAtEnd.append(clone)
        try gitOK(["checkout", "--quiet", "-b", "main"], in: clone)
        try Data("hello over ssh\n".utf8).write(to: clone.appendingPathComponent("note.txt"))
        try gitOK(["add", "note.txt"], in: clone)
        try gitOK(["commit", "--quiet", "-m", "first"], in: clone)
        let pushed = try gitOK(["rev-parse", "HEAD"], in: clone)
        try gitOK(["push", "--quiet", "origin", "main"], in: clone, environment: sshEnvironment())

        XCTAssertEqual(try gitOK(["--git-dir", bare.path, "rev-parse", "refs/heads/main"]), pushed, server.log)
        XCTAssertEqual(try gitOK(["--git-dir", bare.path, "fsck", "--strict"]), "")

        let second = sandbox.appendingPathComponent("second")
        try gitOK(["clone", "--quiet", remote, second.path], environment: sshEnvironment())
        fsckAtEnd.append(second)
        XCTAssertEqual(try String(contentsOf: second.appendingPathComponent("note.txt"), encoding: .utf8), "hello over ssh\n")
        XCTAssertEqual(try gitOK(["ls-remote", remote, "refs/heads/main"], environment: sshEnvironment()),
                       "\(pushed)\trefs/heads/main")
    }

    func testSessionsGetTheFixtureHomeAndFindGit() throws {
        let result = try ssh("'echo $HOME; command -v git-upload-pack git-receive-pack; echo $GIT_CONFIG_NOSYSTEM'")
        XCTAssertEqual(result.status, 0, result.stderr + server.log)
        XCTAssertEqual(result.stdout, "\(server.sessionHome.path)\n/usr/bin/git-upload-pack\n/usr/bin/git-receive-pack\n1\n")
    }

    func testStopRefusesConnectionsAndIsIdempotent() throws {
        let bare = try makeBareRepository()
        XCTAssertTrue(server.isRunning)
        XCTAssertEqual(try git(["ls-remote", server.url(for: bare)], environment: sshEnvironment()).status, 0)

        server.stop()
        XCTAssertFalse(server.isRunning)
        XCTAssertFalse(Loopback.accepts(port: server.port))
        let refused = try git(["ls-remote", server.url(for: bare)], environment: sshEnvironment())
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("Connection refused"), refused.stderr)
        server.stop()
        XCTAssertFalse(server.isRunning)

        try server.start()
        XCTAssertEqual(try git(["ls-remote", server.url(for: bare)], environment: sshEnvironment()).status, 0, server.log)
    }

    func testUnauthorizedKeyIsRejected() throws {
        let stranger = try SSHClientKey.generate(in: try makeDirectory("stranger"), name: "stranger", home: sandbox)
        let bare = try makeBareRepository()
        let result = try git(["ls-remote", server.url(for: bare)], environment: sshEnvironment(stranger))
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.stderr.contains("Permission denied (publickey)"), result.stderr)
    }

    func testHostKeyMatchesSSHKeygenAndWhatTheClientSees() throws {
        let listing = try ProcessRunner.runOK("/usr/bin/ssh-keygen", ["-l", "-f", server.hostPublicKeyURL.path],
                                            environment: environment())
        XCTAssertEqual(listing.split(separator: " ").map(String.init)[1], server.hostKeyFingerprint)
        XCTAssertTrue(server.hostKeyFingerprint.hasPrefix("SHA256:"), server.hostKeyFingerprint)
        XCTAssertEqual(server.hostKeyFingerprint.count, "SHA256:".count + 43)

        let publicKey = try String(contentsOf: server.hostPublicKeyURL, encoding: .utf8)
        XCTAssertTrue(server.hostPublicKeyLine.hasPrefix("ssh-ed25519 AAAA"), server.hostPublicKeyLine)
        XCTAssertTrue(publicKey.hasPrefix(server.hostPublicKeyLine + " "), publicKey)

        let result = try ssh("true", verbose: true)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("Server host key: ssh-ed25519 \(server.hostKeyFingerprint)"), result.stderr)
    }

    func testRegeneratedHostKeyIsServedAfterRestart() throws {
        let oldFingerprint = server.hostKeyFingerprint
        let oldLine = server.hostPublicKeyLine
        try server.regenerateHostKey()
        XCTAssertNotEqual(server.hostKeyFingerprint, oldFingerprint)
        XCTAssertNotEqual(server.hostPublicKeyLine, oldLine)
        server.stop()
        try server.start()

        // known_hosts still holds the old key: strict checking refuses and names the new fingerprint.
        let refused = try ssh("true")
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains(server.hostKeyFingerprint), refused.stderr)

        try trustServer()
        let accepted = try ssh("true", verbose: true)
        XCTAssertEqual(accepted.status, 0, accepted.stderr)
        XCTAssertTrue(accepted.stderr.contains("Server host key: ssh-ed25519 \(server.hostKeyFingerprint)"), accepted.stderr)
    }

    func testStartThrowsWithSshdStderrWhenSshdExits() throws {
        let broken = try SSHServer(directory: try makeDirectory("broken"))
        defer { broken.stop() }
        let config = try String(contentsOf: broken.configURL, encoding: .utf8)
        try Data((config + "NoSuchOption yes\n").utf8).write(to: broken.configURL)
        XCTAssertThrowsError(try broken.start()) { error in
            guard case SSHServerError.exitedEarly(let status, let log) = error else {
                return XCTFail("expected exitedEarly, got \(error)")
            }
            XCTAssertNotEqual(status, 0)
            XCTAssertTrue(log.contains("NoSuchOption"), log)
        }
        XCTAssertFalse(broken.isRunning)
    }
}
