import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A real OpenSSH sshd on 127.0.0.1 at a free port, with its own host key, sshd_config and
/// authorized_keys in `directory`; serves git (git-upload-pack / git-receive-pack) for bare
/// repositories on this machine. Adapted from Tests/ConcordSyncTests/SSHServer.swift.
///
/// Files in `directory`: `ssh_host_ed25519_key{,.pub}`, `sshd_config`, `authorized_keys`, `sshd.pid`,
/// `sshd.log` (sshd's stderr) and `home/`, the HOME of every session, so the server-side git never
/// reads the real user's ~/.gitconfig.
final class SSHServer {
    static let sshdPath = "/usr/sbin/sshd"
    static let sshKeygenPath = "/usr/bin/ssh-keygen"
    /// sshd refuses to start without it ("Missing privilege separation directory").
    static let privilegeSeparationDirectory = "/run/sshd"

    let directory: URL
    /// The chosen free port on 127.0.0.1 (bound to port 0, read back, closed again).
    let port: Int
    /// The user devices log in as: this process's user.
    let user: String
    /// `SHA256:…` of the host key, exactly as `ssh-keygen -l` prints it (for `concord clone --trust-host`).
    let hostKeyFingerprint: String

    var hostKeyURL: URL { directory.appendingPathComponent("ssh_host_ed25519_key") }
    var configURL: URL { directory.appendingPathComponent("sshd_config") }
    var authorizedKeysURL: URL { directory.appendingPathComponent("authorized_keys") }
    var logURL: URL { directory.appendingPathComponent("sshd.log") }
    var sessionHome: URL { directory.appendingPathComponent("home") }

    /// Everything sshd has written to stderr so far (for error messages).
    var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    private var child: ChildProcess?

    /// Creates the host key, config and an empty authorized_keys in `directory`; does not start sshd.
    init(directory: URL, runner: CommandRunner) throws {
        for program in [Self.sshdPath, Self.sshKeygenPath] where !FileManager.default.isExecutableFile(atPath: program) {
            throw BenchError("\(program) is missing: install OpenSSH (`apt-get install openssh-server openssh-client`)")
        }
        guard let entry = getpwuid(getuid()) else { throw BenchError("getpwuid(getuid()) found no passwd entry for this user") }
        self.directory = directory.standardizedFileURL
        self.user = String(cString: entry.pointee.pw_name)
        self.port = try Loopback.freePort()
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("home"), withIntermediateDirectories: true)
        try Data().write(to: directory.appendingPathComponent("authorized_keys"))

        let environment = ["PATH": "/usr/bin:/bin", "HOME": directory.path]
        let key = directory.appendingPathComponent("ssh_host_ed25519_key")
        try runner.run(Self.sshKeygenPath, ["-q", "-t", "ed25519", "-N", "", "-C", "concord-bench-sshd", "-f", key.path],
                       environment: environment, what: "ssh-keygen (sshd host key)")
        // `256 SHA256:… comment (ED25519)`
        let listing = try runner.run(Self.sshKeygenPath, ["-l", "-f", key.path + ".pub"], environment: environment,
                                     what: "ssh-keygen -l (host key fingerprint)").output
        hostKeyFingerprint = listing.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        try Data(configText().utf8).write(to: configURL)
    }

    deinit { stop() }

    /// Starts `sshd -D -e -f <config>` as a child and waits (at most 10 s) until it accepts TCP
    /// connections; throws with sshd's log if it exits first.
    func start() throws {
        guard child == nil else { return }
        if !FileManager.default.fileExists(atPath: Self.privilegeSeparationDirectory) {
            do {
                try FileManager.default.createDirectory(atPath: Self.privilegeSeparationDirectory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o755])
            } catch {
                throw BenchError("sshd needs \(Self.privilegeSeparationDirectory) and it could not be created: \(error.localizedDescription)")
            }
        }
        // sshd re-executes itself for every connection, so it must be started by absolute path.
        let child = try ChildProcess(path: Self.sshdPath, arguments: ["-D", "-e", "-f", configURL.path],
                                     environment: ["PATH": "/usr/bin:/bin", "LANG": "C"], output: logURL)
        self.child = child
        let listening = "Server listening on 127.0.0.1 port \(port)."
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let status = child.exitStatus() {
                self.child = nil
                throw BenchError("sshd exited with status \(status) before it accepted connections:\n\(log)")
            }
            // The log line rules out a port taken by someone else between freePort() and sshd's bind.
            if Loopback.accepts(port: port), log.contains(listening) { return }
            usleep(20_000)
        }
        stop()
        throw BenchError("sshd did not accept connections on 127.0.0.1:\(port) within 10 s:\n\(log)")
    }

    /// Terminates sshd (SIGTERM, then SIGKILL after 3 s). Idempotent.
    func stop() {
        child?.stop(grace: 3)
        child = nil
    }

    /// Appends a public key line (`ssh-ed25519 AAAA… comment`) to authorized_keys; sshd reads it per login.
    func authorize(publicKeyLine: String) throws {
        let line = publicKeyLine.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !line.isEmpty, !line.contains("\n"), line.split(separator: " ").count >= 2 else {
            throw BenchError("not a one-line OpenSSH public key: \(publicKeyLine.debugDescription)")
        }
        let handle = try FileHandle(forWritingTo: authorizedKeysURL)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((line + "\n").utf8))
    }

    /// `ssh://<user>@127.0.0.1:<port><absolute path>` for a repository on this machine.
    func url(for repository: URL) -> String {
        "ssh://\(user)@127.0.0.1:\(port)\(repository.standardizedFileURL.path)"
    }

    private func configText() -> String {
        func quoted(_ url: URL) -> String { "\"\(url.path)\"" }
        return """
            # Written by concord-bench; sshd runs as `sshd -D -e -f` this file.
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(quoted(hostKeyURL))
            PidFile \(quoted(directory.appendingPathComponent("sshd.pid")))
            AuthorizedKeysFile \(quoted(authorizedKeysURL))
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PubkeyAuthentication yes
            PermitRootLogin prohibit-password
            StrictModes no
            UsePAM no
            LogLevel INFO
            PubkeyAcceptedAlgorithms ssh-ed25519,ecdsa-sha2-nistp256
            HostKeyAlgorithms ssh-ed25519
            PermitUserEnvironment no
            PermitUserRC no
            AcceptEnv GIT_PROTOCOL
            SetEnv "HOME=\(sessionHome.path)" GIT_CONFIG_NOSYSTEM=1
            PrintMotd no
            X11Forwarding no
            AllowTcpForwarding no
            AllowAgentForwarding no
            MaxStartups 100
            MaxSessions 100

            """
    }
}

/// TCP on 127.0.0.1 through the C socket API.
enum Loopback {
    #if canImport(Glibc) || canImport(Musl)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
    #else
    private static let streamType = SOCK_STREAM
    #endif

    private static func address(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private static var lastError: String { String(cString: strerror(errno)) }

    /// A port the kernel considers free now: bind to port 0, read the port back, close.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { throw BenchError("could not pick a free port: socket: \(lastError)") }
        defer { close(fd) }
        var bound = address(port: 0)
        let bindStatus = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bindStatus == 0 else { throw BenchError("could not pick a free port: bind: \(lastError)") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let nameStatus = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard nameStatus == 0 else { throw BenchError("could not pick a free port: getsockname: \(lastError)") }
        return Int(UInt16(bigEndian: actual.sin_port))
    }

    /// Whether something on 127.0.0.1:`port` accepts a TCP connection now.
    static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var target = address(port: UInt16(port))
        let status = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return status == 0
    }
}
