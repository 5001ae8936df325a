import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the SSH server fixture could not be set up or started.
public enum SSHServerError: Error, CustomStringConvertible {
    case programMissing(String)
    case noUser
    case privilegeSeparationDirectory(String, underlying: String)
    case socket(String)
    case badPublicKeyLine(String)
    case exitedEarly(status: Int32, log: String)
    case notListening(port: Int, log: String)
    case needsRoot
    case notRootOwned(String)

    public var description: String {
        switch self {
        case .programMissing(let path):
            return "\(path) is missing: install OpenSSH (`apt-get install openssh-server openssh-client`, or `make test`)"
        case .noUser:
            return "getpwuid(getuid()) found no passwd entry for this process's user"
        case .privilegeSeparationDirectory(let path, let underlying):
            return "sshd needs its privilege separation directory \(path) and it could not be created: \(underlying)"
        case .socket(let message):
            return "could not pick a free port on 127.0.0.1: \(message)"
        case .badPublicKeyLine(let line):
            return "not a one-line OpenSSH public key: \(line.debugDescription)"
        case .exitedEarly(let status, let log):
            return "sshd exited with status \(status) before it accepted connections:\n\(log)"
        case .notListening(let port, let log):
            return "sshd did not accept connections on 127.0.0.1:\(port) within 10 s:\n\(log)"
        case .needsRoot:
            return "sshd runs an AuthorizedKeysCommand only from a root-owned path: run this as root"
        case .notRootOwned(let path):
            return "\(path) or a directory above it is not owned by root or is writable by others: sshd will not run it"
        }
    }
}

/// A real OpenSSH sshd on 127.0.0.1 at a free port, with its own host key, sshd_config and authorized_keys in
/// a temp dir; serves git (git-upload-pack / git-receive-pack) for bare repositories on this machine.
///
/// Files in `directory`: `ssh_host_ed25519_key{,.pub}`, `sshd_config`, `authorized_keys`, `sshd.pid`,
/// `sshd.log` (sshd's stderr at LogLevel VERBOSE, kept across restarts; `log` reads it) and `home/`, the
/// HOME of every session, so the server-side git never reads the real user's ~/.gitconfig.
public final class SSHServer {
    public static let sshdPath = "/usr/sbin/sshd"
    public static let sshKeygenPath = "/usr/bin/ssh-keygen"
    /// sshd refuses to start without it ("Missing privilege separation directory").
    public static let privilegeSeparationDirectory = "/run/sshd"

    public let directory: URL
    /// The chosen free port on 127.0.0.1 (bound to port 0, read back, closed again).
    public let port: Int
    /// The user tests log in as: this process's user.
    public let user: String
    /// `ssh-ed25519 AAAA…` of the host key on disk (without its comment); after `regenerateHostKey()` this is
    /// the new key, which sshd serves from the next `start()`.
    public private(set) var hostPublicKeyLine: String
    /// `SHA256:…` of the host key on disk, exactly as `ssh-keygen -l` prints it.
    public private(set) var hostKeyFingerprint: String

    public var hostKeyURL: URL { directory.appendingPathComponent("ssh_host_ed25519_key") }
    public var hostPublicKeyURL: URL { directory.appendingPathComponent("ssh_host_ed25519_key.pub") }
    public var configURL: URL { directory.appendingPathComponent("sshd_config") }
    public var authorizedKeysURL: URL { directory.appendingPathComponent("authorized_keys") }
    public var logURL: URL { directory.appendingPathComponent("sshd.log") }
    public var sessionHome: URL { directory.appendingPathComponent("home") }

    /// The known_hosts line a client needs to trust this server.
    public var knownHostsLine: String { "[127.0.0.1]:\(port) \(hostPublicKeyLine)" }

    /// Everything sshd has written to stderr so far (for assertion messages).
    public var log: String { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }

    public var isRunning: Bool { child.map { $0.exitStatus() == nil } ?? false }

    private var child: ChildProcess?
    private let logLevel: String
    /// sshd's `AuthorizedKeysCommand` (run as this process's user), in place of the authorized_keys file.
    private let authorizedKeysCommand: String?

    /// Creates the host key, config and an empty authorized_keys in `directory` (which the caller owns and
    /// removes); does not start sshd. `logLevel` is sshd's LogLevel (the bench's soak keeps INFO: a
    /// VERBOSE line per connection adds up over 10,000 of them). With `authorizedKeysCommand`, sshd
    /// asks that command for each key (`AuthorizedKeysCommand`, run as this process's user) and reads
    /// no authorized_keys file: sshd runs it only when its program's path, and every directory above
    /// it, is owned by root and writable by no one else.
    public init(directory: URL, logLevel: String = "VERBOSE", authorizedKeysCommand: String? = nil) throws {
        self.logLevel = logLevel
        self.authorizedKeysCommand = authorizedKeysCommand
        for program in [Self.sshdPath, Self.sshKeygenPath] where !FileManager.default.isExecutableFile(atPath: program) {
            throw SSHServerError.programMissing(program)
        }
        guard let entry = getpwuid(getuid()) else { throw SSHServerError.noUser }
        self.directory = directory.standardizedFileURL
        self.user = String(cString: entry.pointee.pw_name)
        self.port = try Loopback.freePort()
        self.hostPublicKeyLine = ""
        self.hostKeyFingerprint = ""
        try FileManager.default.createDirectory(at: sessionHome, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: authorizedKeysURL.path, contents: nil)
        try Data(configText().utf8).write(to: configURL)
        try generateHostKey()
    }

    deinit { stop() }

    /// Starts `sshd -D -e -f <config>` as a child and waits (at most 10 s) until it accepts TCP connections;
    /// throws with sshd's stderr if it exits first. Does nothing if it is already running.
    public func start() throws {
        guard !isRunning else { return }
        try makePrivilegeSeparationDirectory()
        let logStart = (try? FileManager.default.attributesOfItem(atPath: logURL.path)[.size] as? UInt64) ?? 0
        // sshd re-executes itself for every connection, so it must be started by absolute path.
        let child = try ChildProcess(path: Self.sshdPath, arguments: ["-D", "-e", "-f", configURL.path],
                                     environment: ["PATH": "/usr/bin:/bin", "LANG": "C"], output: logURL)
        self.child = child

        let listening = "Server listening on 127.0.0.1 port \(port)."
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let status = child.exitStatus() {
                self.child = nil
                throw SSHServerError.exitedEarly(status: status, log: logSince(logStart))
            }
            // The log line rules out a port taken by someone else between freePort() and sshd's bind.
            if Loopback.accepts(port: port), logSince(logStart).contains(listening) { return }
            usleep(20_000)
        }
        let runLog = logSince(logStart)
        stop()
        throw SSHServerError.notListening(port: port, log: runLog)
    }

    /// Terminates sshd: SIGTERM, up to 3 s to exit, then SIGKILL. Idempotent.
    public func stop() {
        child?.stop(grace: 3)
        child = nil
    }

    /// Appends a public key line (`ssh-ed25519 AAAA… comment`) to authorized_keys; sshd reads it per login.
    public func authorize(publicKeyLine: String) throws {
        let line = publicKeyLine.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !line.isEmpty, !line.contains("\n"), line.split(separator: " ").count >= 2 else {
            throw SSHServerError.badPublicKeyLine(publicKeyLine)
        }
        let handle = try FileHandle(forWritingTo: authorizedKeysURL)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((line + "\n").utf8))
    }

    /// `ssh://<user>@127.0.0.1:<port><absolute path>` for a repository on this machine.
    public func url(for repository: URL) -> String {
        "ssh://\(user)@127.0.0.1:\(port)\(repository.standardizedFileURL.path)"
    }

    /// Replaces the host key with a new one (for "changed host key" tests). sshd serves it from the next
    /// `start()`; `hostPublicKeyLine` and `hostKeyFingerprint` describe the new key at once.
    public func regenerateHostKey() throws {
        try? FileManager.default.removeItem(at: hostKeyURL)
        try? FileManager.default.removeItem(at: hostPublicKeyURL)
        try generateHostKey()
    }

    // MARK: - Private

    private func generateHostKey() throws {
        let environment = ["PATH": "/usr/bin:/bin", "HOME": directory.path]
        try ProcessRunner.runOK(Self.sshKeygenPath,
                              ["-q", "-t", "ed25519", "-N", "", "-C", "concord-test-sshd", "-f", hostKeyURL.path],
                              environment: environment)
        let publicKey = try String(contentsOf: hostPublicKeyURL, encoding: .utf8)
        hostPublicKeyLine = publicKey.split(whereSeparator: \.isWhitespace).prefix(2).joined(separator: " ")
        // `256 SHA256:… comment (ED25519)`
        let listing = try ProcessRunner.runOK(Self.sshKeygenPath, ["-l", "-f", hostPublicKeyURL.path], environment: environment)
        hostKeyFingerprint = listing.split(separator: " ").dropFirst().first.map(String.init) ?? ""
    }

    private func configText() -> String {
        func quoted(_ url: URL) -> String { "\"\(url.path)\"" }
        let keys = authorizedKeysCommand.map { "AuthorizedKeysFile none\nAuthorizedKeysCommand \($0)\nAuthorizedKeysCommandUser \(user)" }
            ?? "AuthorizedKeysFile \(quoted(authorizedKeysURL))"
        return """
            # Written by the Concord test fixture SSHServer; sshd runs as `sshd -D -e -f` this file.
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(quoted(hostKeyURL))
            PidFile \(quoted(directory.appendingPathComponent("sshd.pid")))
            \(keys)
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            PubkeyAuthentication yes
            PermitRootLogin prohibit-password
            StrictModes no
            UsePAM no
            LogLevel \(logLevel)
            PubkeyAcceptedAlgorithms ssh-ed25519,ecdsa-sha2-nistp256
            HostKeyAlgorithms ssh-ed25519
            PermitUserEnvironment no
            PermitUserRC no
            AcceptEnv GIT_PROTOCOL
            SetEnv "HOME=\(sessionHome.path)" GIT_CONFIG_NOSYSTEM=1\(sanitizerOptions.sorted { $0.key < $1.key }.map { " \"\($0.key)=\($0.value)\"" }.joined())
            PrintMotd no
            X11Forwarding no
            AllowTcpForwarding no
            AllowAgentForwarding no
            MaxStartups 100
            MaxSessions 100

            """
    }

    private func makePrivilegeSeparationDirectory() throws {
        let path = Self.privilegeSeparationDirectory
        guard !FileManager.default.fileExists(atPath: path) else { return }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            throw SSHServerError.privilegeSeparationDirectory(path, underlying: "\(error)")
        }
    }

    private func logSince(_ offset: UInt64) -> String {
        guard let data = try? Data(contentsOf: logURL), offset <= UInt64(data.count) else { return log }
        return String(decoding: data.dropFirst(Int(offset)), as: UTF8.self)
    }
}

/// An ed25519 client key pair made by the real ssh-keygen, with no passphrase.
public struct SSHClientKey {
    public let privateKey: URL
    public let publicKeyLine: String

    /// Writes `<directory>/<name>` and `<name>.pub`; `home` is ssh-keygen's HOME.
    public static func generate(in directory: URL, name: String = "client", home: URL) throws -> SSHClientKey {
        let url = directory.appendingPathComponent(name)
        try ProcessRunner.runOK("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "concord-test-\(name)", "-f", url.path],
                              environment: ["PATH": "/usr/bin:/bin", "HOME": home.path])
        let line = try String(contentsOf: url.appendingPathExtension("pub"), encoding: .utf8)
        return SSHClientKey(privateKey: url, publicKeyLine: line.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// An ssh command line for GIT_SSH_COMMAND that uses only this key and only `knownHosts`, never prompts,
    /// and ignores ~/.ssh (ssh finds it through the passwd entry, not HOME, hence `-F /dev/null`).
    public func sshCommand(knownHosts: URL, verbose: Bool = false) -> String {
        var words = ["/usr/bin/ssh", "-F", "/dev/null", "-i", privateKey.path, "-o", "IdentitiesOnly=yes",
                     "-o", "UserKnownHostsFile=\(knownHosts.path)", "-o", "GlobalKnownHostsFile=/dev/null",
                     "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
        if verbose { words.append("-v") }
        return words.map(ProcessRunner.shellQuoted).joined(separator: " ")
    }
}

/// TCP on 127.0.0.1 through the C socket API.
public enum Loopback {
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
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, streamType, 0)
        guard fd >= 0 else { throw SSHServerError.socket("socket: \(lastError)") }
        defer { close(fd) }
        var bound = address(port: 0)
        let bindStatus = withUnsafePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bindStatus == 0 else { throw SSHServerError.socket("bind: \(lastError)") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let nameStatus = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard nameStatus == 0 else { throw SSHServerError.socket("getsockname: \(lastError)") }
        return Int(UInt16(bigEndian: actual.sin_port))
    }

    /// Whether something on 127.0.0.1:`port` accepts a TCP connection now.
    public static func accepts(port: Int) -> Bool {
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

extension SSHServer {
    /// A path to `program` that sshd accepts as an AuthorizedKeysCommand: sshd runs one only when
    /// the file and every directory above it are owned by root and writable by no one else. When
    /// `program`'s own path is not such a path (a checkout under `/tmp`, mode 1777), it is copied
    /// into a new directory under `/var/lib/concord-tests/`; `remove` deletes that copy (call it
    /// when the server stops). Needs root.
    public static func authorizedKeysCommandPath(for program: String) throws -> (path: String, remove: @Sendable () -> Void) {
        let real = URL(fileURLWithPath: program).resolvingSymlinksInPath().path
        guard getuid() == 0 else { throw SSHServerError.needsRoot }
        if isRootOwnedAllTheWay(real) { return (real, {}) }
        let directory = URL(fileURLWithPath: "/var/lib/concord-tests").appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        _ = chmod("/var/lib/concord-tests", 0o755)
        let copy = directory.appendingPathComponent(URL(fileURLWithPath: real).lastPathComponent)
        try FileManager.default.copyItem(atPath: real, toPath: copy.path)
        _ = chmod(copy.path, 0o755)
        guard isRootOwnedAllTheWay(copy.path) else { throw SSHServerError.notRootOwned(copy.path) }
        return (copy.path, { try? FileManager.default.removeItem(at: directory) })
    }

    /// Whether `path` and every directory above it are owned by root and writable by no one else.
    static func isRootOwnedAllTheWay(_ path: String) -> Bool {
        var current = URL(fileURLWithPath: path)
        while true {
            var info = stat()
            guard stat(current.path, &info) == 0, info.st_uid == 0, info.st_mode & 0o022 == 0 else { return false }
            if current.path == "/" { return true }
            current.deleteLastPathComponent()
        }
    }
}
