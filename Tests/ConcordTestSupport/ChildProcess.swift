import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process owned by its pid: started with posix_spawn, reaped with waitpid. For processes a
/// test or the bench does not wait for at once: sshd, `concord watch`, a sync to be killed midway.
///
/// Not Foundation's `Process`: on Linux it learns of a child's exit when a socket the child inherited
/// closes, and sshd closes every inherited descriptor at startup; Foundation then blocks its single
/// monitor thread in a waitpid for the still-running sshd, and every other `Process` of the test run hangs
/// in `waitUntilExit`.
public final class ChildProcess {
    public struct SpawnError: Error, CustomStringConvertible {
        public let path: String
        public let message: String
        public var description: String { "could not start \(path): \(message)" }
    }

    public let pid: pid_t
    public let path: String
    private var status: Int32?

    /// Starts `path` with exactly `environment`, stdin from /dev/null, stdout and stderr appended to `output`.
    public init(path: String, arguments: [String], environment: [String: String], output: URL) throws {
        self.path = path
        ConcordBinary.noteStart(of: path)
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The child starts with no blocked signals and the default action for those it is stopped with.
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), defaultSignals = sigset_t()
        sigemptyset(&noSignals)
        sigemptyset(&defaultSignals)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaultSignals, signal) }
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let error = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard error == 0 else {
            throw SpawnError(path: path, message: String(cString: strerror(error)))
        }
        self.pid = pid
    }

    /// nil while the child runs; then its exit status (128 + the signal if a signal ended it).
    public func exitStatus() -> Int32? {
        if status == nil { reap(options: WNOHANG) }
        return status
    }

    public func signal(_ signal: Int32) {
        if status == nil { kill(pid, signal) }
    }

    /// Blocks until the child has exited; returns its status.
    @discardableResult
    public func wait() -> Int32 {
        while status == nil { reap(options: 0) }
        return status ?? -1
    }

    /// SIGTERM, then up to `grace` seconds to exit, then SIGKILL; returns the exit status.
    @discardableResult
    public func stop(grace: TimeInterval) -> Int32 {
        if let status = exitStatus() { return status }
        signal(SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while exitStatus() == nil, Date() < deadline { usleep(10_000) }
        if exitStatus() == nil { signal(SIGKILL) }
        return wait()
    }

    private func reap(options: Int32) {
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, options)
        if result == pid {
            let signal = raw & 0x7f
            status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        } else if result == -1, errno != EINTR {
            status = -1 // ECHILD: reaped elsewhere; nothing left to wait for
        }
    }

    deinit {
        if status == nil {
            signal(SIGKILL)
            wait()
        }
    }
}
