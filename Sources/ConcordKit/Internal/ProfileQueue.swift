import ConcordGit
import Dispatch
import Foundation
import Synchronization

/// The store's engine, confined: one `Profile` (its repository, caches and clock) touched only
/// by blocks that run one at a time on a serial Dispatch queue, as GRDB's `SerializedDatabase`
/// confines its connection. A blocking call waits for its turn on the queue (`run`); an `async`
/// call hands the queue its block and suspends (`runAsync`), so the libgit2 and network work runs
/// on Dispatch's threads and never holds a thread of Swift's cooperative pool. Across processes
/// the profile's own `flock` (`ProfileLock`) still serializes the writers of one device.
///
/// The profile may be given opened (`init(_:)`) or opened lazily, by the first block that needs it
/// (`init(label:opening:)`): the store's sync queue opens its second `Profile` only when the app
/// first syncs, on that queue, and a failure to open it is that sync's error (the next call tries again).
final class ProfileQueue: @unchecked Sendable {
    // Safe: `opened` and `ended` are read and written only while holding `lock`, and the `Profile` it holds is
    // used only inside blocks running on `queue`, which is serial (checked by `isCurrent` against
    // nesting); everything else here is immutable.
    private let lock = NSLock()
    private var opened: Profile?
    /// Why the queue no longer runs anything (the store was closed, or its copy's access removed):
    /// every block from then on fails with it, and the profile is let go, never opened again.
    private var ended: Error?
    /// Opens the profile for the first block that needs it (nil when it was given opened).
    private let opening: (@Sendable () throws -> Profile)?
    private let queue: DispatchQueue
    private static let key = DispatchSpecificKey<ObjectIdentifier>()

    /// A queue for `profile`, opened already.
    init(_ profile: Profile) {
        (opened, opening) = (profile, nil)
        queue = DispatchQueue(label: "concord.store.\(profile.info.id)")
        queue.setSpecific(key: Self.key, value: ObjectIdentifier(self))
    }

    /// A queue named `label` whose profile `opening` opens, on the queue, when a block first needs it.
    init(label: String, opening: @escaping @Sendable () throws -> Profile) {
        (opened, self.opening) = (nil, opening)
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.key, value: ObjectIdentifier(self))
    }

    /// Whether the profile is open (given opened, or opened by a block already).
    var isOpen: Bool { lock.withLock { opened != nil } }

    /// The profile, opened now if it was not yet; called only inside a block running on `queue`.
    /// A failure to open is thrown and not kept: the next block tries again.
    private func profile() throws -> Profile {
        try lock.withLock {
            if let ended { throw ended }
            if let opened { return opened }
            guard let opening else { preconditionFailure("a ProfileQueue has either a profile or a way to open one") }
            let profile = try opening()
            opened = profile
            return profile
        }
    }

    /// Ends the queue: every block from now on fails with `error` (the first end's error stays,
    /// unless `replacing`: a removal's final word), the profile is let go, and once this returns no
    /// block of the queue is running — one running meanwhile is waited for, unless this is called
    /// from inside it or `waiting` is false (called from the store's other queue, whose block the
    /// running one may be waiting for: it then ends on its own, and the profile is let go after it).
    func end(_ error: Error, replacing: Bool = false, waiting: Bool = true) {
        let dropped = lock.withLock {
            if ended == nil || replacing { ended = error }
            defer { opened = nil }
            return opened
        }
        // A block running meanwhile holds the profile itself: it goes when that block ends.
        if !isCurrent, waiting { queue.sync {} }
        withExtendedLifetime(dropped) {}
    }

    /// Why the queue ended, if it did.
    var endedError: Error? { lock.withLock { ended } }

    /// True on this store's queue, inside one of its blocks.
    var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.key) == ObjectIdentifier(self) }

    /// The error for a call made inside another call's closure of the same store: waiting for the
    /// queue there would wait for itself.
    static let nested = ConcordError.invalidInput(.wrongPlace, 
        "a ConcordStore call was made inside another call's closure on the same store: use the handle the closure was given")

    /// Runs `body` on the queue and waits for it (the caller's thread blocks meanwhile).
    func run<T>(_ body: (Profile) throws -> T) throws -> T {
        guard !isCurrent else { throw Self.nested }
        return try queue.sync { try body(profile()) }
    }

    /// Hands the queue `body` and returns at once: the observers' reads (`StoreSubscription`),
    /// which must neither block the thread that wakes them nor hold one of Swift's pool.
    func enqueue(_ body: @escaping @Sendable (Result<Profile, Error>) -> Void) {
        queue.async { [self] in body(Result { try profile() }) }
    }

    /// Runs `body` on the queue while the caller suspends. A task cancelled before `body` starts
    /// gets `CancellationError` at once (`body` never runs); one cancelled while it runs cuts the
    /// transfers `body` started at their next callback (`TransferCancellation`, made current on
    /// the queue's thread) and gets `CancellationError` when that made `body` fail. A `body` that
    /// finished all the same returns its value: its work is done, and nothing is half done.
    func runAsync<T: Sendable>(_ body: @escaping @Sendable (Profile) throws -> T) async throws -> T {
        let call = PendingCall<T>()
        let cancellation = TransferCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
                guard call.wait(continuation) else { return }
                queue.async { [self] in
                    guard call.start() else { return }
                    let result = Result { try cancellation.whileCurrent { try body(profile()) } }
                    call.finish(result, cancelled: cancellation.isCancelled)
                }
            }
        } onCancel: {
            call.cancel()
            cancellation.cancel()
        }
    }
}

/// One `async` call waiting for the queue: its continuation is resumed exactly once, by the
/// queue when the block ran, or at once when the task is cancelled before the block started.
private final class PendingCall<T: Sendable>: Sendable {
    private enum State {
        case idle, cancelledEarly, finished
        case waiting(CheckedContinuation<T, Error>)
        case running(CheckedContinuation<T, Error>)
    }
    private let state = Mutex(State.idle)

    /// Keeps `continuation` for the block; false (and resumed with `CancellationError`) when the
    /// task was cancelled already.
    func wait(_ continuation: CheckedContinuation<T, Error>) -> Bool {
        let cancelled = state.withLock { state in
            if case .cancelledEarly = state { state = .finished; return true }
            state = .waiting(continuation)
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    /// The task was cancelled: a call still waiting for the queue ends now.
    func cancel() {
        let waiting: CheckedContinuation<T, Error>? = state.withLock { state in
            switch state {
            case .idle: state = .cancelledEarly; return nil
            case .waiting(let continuation): state = .finished; return continuation
            default: return nil
            }
        }
        waiting?.resume(throwing: CancellationError())
    }

    /// The queue reached the block: false when the call already ended (cancelled meanwhile).
    func start() -> Bool {
        state.withLock { state in
            guard case .waiting(let continuation) = state else { return false }
            state = .running(continuation)
            return true
        }
    }

    /// The block's result; a failure after cancellation is reported as the cancellation it was.
    func finish(_ result: Result<T, Error>, cancelled: Bool) {
        let running: CheckedContinuation<T, Error>? = state.withLock { state in
            guard case .running(let continuation) = state else { return nil }
            state = .finished
            return continuation
        }
        if cancelled, case .failure = result {
            running?.resume(throwing: CancellationError())
        } else {
            running?.resume(with: result)
        }
    }
}
