import Dispatch
import Foundation
import Synchronization

/// A deadline for a network transfer that libgit2 1.5.1 cannot give (its server timeouts arrived
/// in 1.7): when no byte has come or gone for `limit` seconds — a server that accepted the
/// connection and then went silent — this process's TCP connections to that server's address and
/// port are shut down, so libgit2's blocking read returns an error and the profile lock is freed.
/// Transfer callbacks call `touch()` whenever anything arrives.
///
/// The timer's handler holds only the deadline (`Deadline`), never the watchdog, and runs on a
/// queue of its own: `deinit` cancels the timer and then waits for a check in progress, so no
/// check outlives its transfer (none runs while the process deletes a copy or exits).
final class NetworkWatchdog {
    private let deadline: Deadline
    private let queue = DispatchQueue(label: "concord.network-watchdog")
    private let timer: DispatchSourceTimer

    /// Watches connections to `host`:`port`; nil `limit` watches nothing.
    init?(host: String, port: UInt16, limit: TimeInterval?) {
        guard let limit, limit > 0 else { return nil }
        let deadline = Deadline(host: host, port: port, limit: limit)
        self.deadline = deadline
        timer = DispatchSource.makeTimerSource(queue: queue)
        let interval = min(0.5, limit / 4)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { deadline.check() }
        timer.resume()
    }

    deinit {
        timer.cancel()
        queue.sync {}   // a check already running ends before the transfer's state goes
    }

    /// Something moved: the deadline starts again.
    func touch() { deadline.touch() }

    /// Whether the deadline passed and the connection was cut.
    var timedOut: Bool { deadline.timedOut }

    var seconds: Int { Int(deadline.limit.rounded()) }

    /// This process's open descriptors: those /proc/self/fd lists on Linux; elsewhere (and built
    /// with `-DCONCORD_PORTABLE`) each number below the descriptor limit, at most 65,536, that
    /// `fcntl` finds open (there is no directory listing them).
    static func openDescriptors() -> [Int32] {
        #if os(Linux) && !CONCORD_PORTABLE
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
        #else
        let limit = Int32(clamping: min(sysconf(Int32(_SC_OPEN_MAX)), 65_536))
        return limit > 0 ? (0..<limit).filter { fcntl($0, F_GETFD) != -1 } : []
        #endif
    }
}

/// The last activity of one transfer and what to cut when it stalls.
private final class Deadline: Sendable {
    private let host: String
    private let port: UInt16
    let limit: TimeInterval
    /// When something last moved, and whether the deadline passed (the connections were cut).
    private let state = Mutex<(lastActivity: Date, fired: Bool)>((Date(), false))

    init(host: String, port: UInt16, limit: TimeInterval) {
        (self.host, self.port, self.limit) = (host, port, limit)
    }

    func touch() {
        state.withLock { $0.lastActivity = Date() }
    }

    var timedOut: Bool {
        state.withLock { $0.fired }
    }

    func check() {
        let stalled = state.withLock { state in
            let stalled = Date().timeIntervalSince(state.lastActivity) > limit
            if stalled { state.fired = true }
            return stalled
        }
        if stalled { shutDownConnections() }
    }

    /// Shuts down this process's TCP sockets whose peer is the server.
    private func shutDownConnections() {
        let addresses = Self.addresses(of: host)
        for descriptor in NetworkWatchdog.openDescriptors() {
            var info = stat()
            guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK else { continue }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) }
            }
            guard named == 0, let peer = Self.describe(storage), peer.port == port, addresses.contains(peer.address) else { continue }
            _ = shutdown(descriptor, Int32(SHUT_RDWR))
        }
    }


    /// The numeric addresses `host` resolves to (itself when it is one).
    private static func addresses(of host: String) -> Set<String> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0 else { return [host] }
        defer { freeaddrinfo(list) }
        var out: Set<String> = [host]
        var item = list
        while let current = item {
            if let address = current.pointee.ai_addr {
                var storage = sockaddr_storage()
                memcpy(&storage, address, Int(current.pointee.ai_addrlen))
                if let described = describe(storage) { out.insert(described.address) }
            }
            item = current.pointee.ai_next
        }
        return out
    }

    private static func describe(_ storage: sockaddr_storage) -> (address: String, port: UInt16)? {
        switch Int32(storage.ss_family) {
        case AF_INET: return describe(storage, as: sockaddr_in.self, family: AF_INET) { ($0.sin_addr, $0.sin_port) }
        case AF_INET6: return describe(storage, as: sockaddr_in6.self, family: AF_INET6) { ($0.sin6_addr, $0.sin6_port) }
        default: return nil
        }
    }

    /// The address (as `inet_ntop` writes it) and port of `storage`, read as a `Socket` of `family`.
    private static func describe<Socket, Address>(
        _ storage: sockaddr_storage, as _: Socket.Type, family: Int32, _ parts: (Socket) -> (Address, in_port_t)
    ) -> (address: String, port: UInt16) {
        var (address, port) = withUnsafeBytes(of: storage) { parts($0.load(as: Socket.self)) }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        inet_ntop(family, &address, &text, socklen_t(text.count))
        return (String(cString: text), UInt16(bigEndian: port))
    }
}
