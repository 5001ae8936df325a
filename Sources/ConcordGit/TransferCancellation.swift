import Foundation

/// Ends, from another thread, the transfers that run with it (`TransportOptions.cancellation`):
/// `cancel()` shuts down the socket of each connection open now, so its blocking read returns an
/// error at once, and refuses every connection opened later. The owner of a thread that waits on
/// a server (`watch`'s live updates) cancels, then joins that thread: nothing is left running in
/// libssh2 when the process deletes a copy or exits.
///
/// A socket is shut down, never closed, here: its connection still owns (and closes) it, so a
/// descriptor number is never closed twice or reused under another owner.
public final class TransferCancellation: @unchecked Sendable {
    private let lock = NSLock()
    private var sockets = Set<Int32>()
    private var cancelled = false

    public init() {}

    /// Whether `cancel()` was called.
    public var isCancelled: Bool { lock.withLock { cancelled } }

    /// Shuts down every socket open now and every one registered after.
    public func cancel() {
        lock.withLock {
            cancelled = true
            for socket in sockets { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Registers `socket` of a connection being opened; shut down at once when already cancelled.
    func register(_ socket: Int32) {
        lock.withLock {
            sockets.insert(socket)
            if cancelled { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Forgets `socket`: its connection is about to close it (called before `close`, under the same lock as `cancel`).
    func unregister(_ socket: Int32) {
        _ = lock.withLock { sockets.remove(socket) }
    }
}
