import Foundation
import Synchronization

/// Ends, from another thread, the transfers that run with it (`TransportOptions.cancellation`):
/// `cancel()` shuts down the socket of each connection open now, so its blocking read returns an
/// error at once, gives up a connect in progress, and cuts every connection opened later. The
/// owner of a thread that waits on a server (`watch`'s live updates) cancels, then joins that
/// thread: nothing is left running in libssh2 when the process deletes a copy or exits. (A name
/// lookup in progress, `getaddrinfo`, cannot be cut: it ends within the resolver's own timeout.)
///
/// A socket is shut down, never closed, here: its connection still owns (and closes) it, so a
/// descriptor number is never closed twice or reused under another owner.
public final class TransferCancellation: Sendable {
    /// The sockets of the connections open now, and whether `cancel()` was called.
    private let state = Mutex<(sockets: Set<Int32>, cancelled: Bool)>(([], false))
    /// A pipe whose read end becomes readable on `cancel()`: a connect still in progress polls it
    /// too (`concord_tcp_connect`), so a host that never answers does not hold the thread for the
    /// stall timeout. -1 when the pipe could not be made (then only connected sockets are cut).
    private let wake: (read: Int32, write: Int32)

    public init() {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            wake = (-1, -1)
            return
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        wake = (ends[0], ends[1])
    }

    deinit {
        if wake.read >= 0 { close(wake.read); close(wake.write) }
    }

    /// What a connect in progress polls besides its socket (-1: nothing).
    var wakeDescriptor: Int32 { wake.read }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Shuts down every socket open now and every one registered after.
    public func cancel() {
        state.withLock { state in
            guard !state.cancelled else { return }
            state.cancelled = true
            for socket in state.sockets { _ = shutdown(socket, Int32(SHUT_RDWR)) }
            if wake.write >= 0 { _ = write(wake.write, "x", 1) }
        }
    }

    /// Registers `socket` of a connection being opened; shut down at once when already cancelled.
    func register(_ socket: Int32) {
        state.withLock { state in
            state.sockets.insert(socket)
            if state.cancelled { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Forgets `socket`: its connection is about to close it (called before `close`, under the same lock as `cancel`).
    func unregister(_ socket: Int32) {
        _ = state.withLock { $0.sockets.remove(socket) }
    }
}

extension TransferCancellation {
    private static let threadKey = "concord.transfer-cancellation"

    /// The cancellation made current on this thread (`whileCurrent`): the transfers started on it
    /// take it by default (`TransportOptions.init`, a path remote's object copy).
    package static var current: TransferCancellation? {
        Thread.current.threadDictionary[threadKey] as? TransferCancellation
    }

    /// Runs `body` with this cancellation current on this thread, so `cancel()` from another
    /// thread ends every transfer `body` starts, at its next callback.
    package func whileCurrent<T>(_ body: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let previous = dictionary[Self.threadKey]
        dictionary[Self.threadKey] = self
        defer { dictionary[Self.threadKey] = previous }
        return try body()
    }

    /// Throws `TransferCancelled` once `cancel()` was called: a transfer's check between two steps.
    package func checkpoint() throws {
        if isCancelled { throw TransferCancelled() }
    }
}

/// A transfer ended by `TransferCancellation.cancel()` before it finished.
package struct TransferCancelled: Error, Sendable, CustomStringConvertible {
    package var description: String { "the transfer was cancelled" }
}
