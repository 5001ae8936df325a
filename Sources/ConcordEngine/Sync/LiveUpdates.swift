import ConcordGit
import Foundation

/// Live updates for a `SyncEngine`'s profile on a concord server: a thread keeps a `concord-wait`
/// open (the server answers the moment the profile's main moves, `ServerWait`), flags it and calls
/// `onMove`, so the profile's thread wakes and syncs at once instead of at its next poll. A server
/// that does not offer the wait (a stock sshd + git) fails the first one, and the thread keeps
/// polling alone. Nothing here trusts the answer: it only
/// makes the next sync happen sooner, and that sync fetches and checks as always.
///
/// The thread is joined, never left behind: `stop()` cuts the wait in progress
/// (`TransferCancellation`) and returns only once the thread has ended, so a watch that ends
/// (access removed, profile deleted, a signal) deletes its copy and exits with no thread still
/// inside libssh2 or OpenSSL, whose state `exit` tears down.
package final class LiveUpdates: @unchecked Sendable {   // unchecked: every var is read and written under `lock` (`locked`); the thread is joined by `stop()`
    /// How long one `concord-wait` holds its connection.
    static let waitSeconds = 20
    /// The name of the thread (what `/proc/self/task/*/comm` shows).
    static let threadName = "concord-live"

    private let url: String
    private let options: TransportOptions
    /// Cuts the wait in progress when `stop()` is called.
    private let cancellation = TransferCancellation()
    /// Signalled once, when the thread ends; `stop()` waits for it only if the thread was started.
    private let ended = DispatchSemaphore(value: 0)
    private var started = false
    private let lock = NSLock()
    private var known: ObjectID?
    private var moved = false
    private var movedTo: ObjectID?
    private var healthy = false
    private var stopped = false
    /// Whether the server offers the wait (nil until its first answer or failure).
    private var offered: Bool?
    /// The commits the server sent with its last answer, for the next sync (`concord-wait … pack`).
    private var prefetched: PrefetchedPack?
    /// Whether to ask for the pack: a concord server older than this device refuses the request,
    /// and the wait alone is asked for from then on.
    private var askForPack = true
    /// Called (outside the lock) each time main moved: wakes the loop waiting for its next tick.
    private let onMove: @Sendable () -> Void

    package init(url: String, options: TransportOptions, known: ObjectID?, onMove: @escaping @Sendable () -> Void = {}) {
        var options = options
        options.cancellation = cancellation
        (self.url, self.options, self.known, self.onMove) = (url, options, known, onMove)
    }

    package func start() {
        locked { started = true }
        Thread.detachNewThread { [self] in
            nameCurrentThread(Self.threadName)
            defer { ended.signal() }
            run()
        }
    }

    /// Ends the thread: cuts its wait in progress and returns once it has ended. Idempotent.
    package func stop() {
        let running = locked {
            defer { (started, stopped) = (false, true) }
            return started
        }
        cancellation.cancel()
        if running { ended.wait() }
    }

    /// The main this device now has from the remote (after each sync).
    package func update(known tip: ObjectID?) { locked { known = tip } }

    /// Whether the server said main moved since the last `takeMoved` (which clears it).
    package var hasMoved: Bool { locked { moved } }

    /// Where the server said main moved to since the last call (`.some(nil)`: deleted), or nil.
    package func takeMoved() -> ObjectID?? {
        locked {
            defer { moved = false }
            return moved ? .some(movedTo) : nil
        }
    }

    /// Whether the server answers the waits now: its last wait ended well. While it does, `watch`
    /// hardly needs to poll.
    package var isLive: Bool { locked { offered == true && healthy } }

    /// The pack that came with the last answer, if any (once).
    package func takePrefetched() -> PrefetchedPack? {
        locked {
            defer { prefetched = nil }
            return prefetched
        }
    }

    private func run() {
        var failures = 0
        // The last main this thread told the sync about.
        var reported: ObjectID??
        while !locked({ stopped }) {
            let tip = locked { known }
            let withPack = locked { askForPack } && tip != nil
            do {
                let main: ObjectID?
                var pack = [UInt8]()
                if withPack, let tip {
                    (main, pack) = try Repository.waitForRemoteMainWithPack(url: url, known: tip, seconds: Self.waitSeconds,
                                                                             packLimit: Repository.concordWaitPackLimit, options: options)
                } else {
                    main = try Repository.waitForRemoteMain(url: url, known: tip, seconds: Self.waitSeconds, options: options)
                }
                locked { (offered, healthy) = (true, true) }
                failures = 0
                guard main != tip else { continue }
                if reported == .some(main) {
                    // Told already, and the sync has not taken it in (still running, or failed): asking
                    // again would answer at once, so wait for the sync (or a while) first, and if it
                    // has not taken it in by then, tell again (the sync is tried again).
                    for _ in 0..<250 where !locked({ stopped || known != tip }) { usleep(20_000) }
                    let retold = locked { () -> Bool in
                        guard known == tip else { return false }
                        (moved, movedTo) = (true, main)
                        return true
                    }
                    if retold { onMove() }
                    continue
                }
                reported = .some(main)
                locked {
                    (moved, movedTo) = (true, main)
                    if let main, let tip, !pack.isEmpty { prefetched = PrefetchedPack(base: tip, tip: main, bytes: pack) }
                    // The next wait starts now, from the main the sync is taking in: a move while
                    // the sync runs is answered at once (the sync's `update(known:)` then says where it got).
                    known = main
                }
                onMove()
            } catch {
                locked { healthy = false }
                if withPack, locked({ offered }) == nil {
                    // Perhaps a server that has the wait without the pack: ask for the wait alone.
                    locked { askForPack = false }
                    continue
                }
                if locked({ offered }) == nil {
                    locked { offered = false }
                    return
                }
                failures += 1
                for _ in 0..<(min(1 << min(failures, 5), 30) * 10) where !locked({ stopped }) { usleep(100_000) }
            }
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}

/// The commits a concord server sent with a `concord-wait` answer: a pack of what main (`tip`) has
/// beyond `base` (the main this device had). Untrusted, as anything fetched: a sync indexes it
/// into its quarantine and checks every commit (`Profile.fetchVerified`).
package struct PrefetchedPack: Sendable {
    let base: ObjectID
    let tip: ObjectID
    let bytes: [UInt8]
}
