import ConcordGit
import Foundation

/// Live updates for `watch` on a concord server: a thread keeps a `concord-wait` open (the server
/// answers the moment the profile's main moves, `ServerWait`) and flags it, so `watch` syncs at
/// once instead of at its next poll. A server that does not offer the wait (a stock sshd + git)
/// fails the first one, and `watch` keeps polling alone. Nothing here trusts the answer: it only
/// makes the next sync happen sooner, and that sync fetches and checks as always.
final class LiveUpdates: @unchecked Sendable {
    /// How long one `concord-wait` holds its connection.
    static let waitSeconds = 20

    private let url: String
    private let options: TransportOptions
    private let lock = NSLock()
    private var known: ObjectID?
    private var moved = false
    private var stopped = false
    /// Whether the server offers the wait (nil until its first answer or failure).
    private var offered: Bool?

    init(url: String, options: TransportOptions, known: ObjectID?) {
        (self.url, self.options, self.known) = (url, options, known)
    }

    func start() {
        Thread.detachNewThread { [self] in run() }
    }

    /// Ends the thread after its current wait (at most `waitSeconds`).
    func stop() { locked { stopped = true } }

    /// The main this device now has from the remote (after each sync).
    func update(known tip: ObjectID?) { locked { known = tip } }

    /// Whether the server said main moved since the last call.
    func takeMoved() -> Bool {
        locked {
            defer { moved = false }
            return moved
        }
    }

    private func run() {
        var failures = 0
        while !locked({ stopped }) {
            let tip = locked { known }
            do {
                let main = try Repository.waitForRemoteMain(url: url, known: tip, seconds: Self.waitSeconds, options: options)
                locked { offered = true }
                failures = 0
                guard main != tip else { continue }
                locked { moved = true }
                // Until the sync this triggers has taken it in (or a while has passed), asking again would answer at once.
                for _ in 0..<250 where !locked({ stopped || known != tip }) { usleep(20_000) }
            } catch {
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
