import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// Something `watch` did or saw.
public enum WatchEvent: Sendable {
    case started(remote: String, interval: Double)
    case synced(SyncReport)
    /// The remote became unreachable (reported once per outage).
    case offline(String)
    /// The remote is reachable again.
    case online
    case failed(String)
    case stopped
}

extension Profile {
    /// Keeps this profile in sync until `shouldStop` returns true: every 50 ms it looks for local
    /// commits the remote lacks (two ref reads; writes by other processes are seen the same way),
    /// and every `interval` seconds it checks cheaply whether the remote's main moved (reading only
    /// its ref list); either one triggers a sync. Stops only between syncs, never inside a ref update.
    public func watch(remote: String = "origin", interval: Double, as identity: Identity,
                      shouldStop: () -> Bool, onEvent: (WatchEvent) -> Void) {
        onEvent(.started(remote: remote, interval: interval))
        var offline = false
        // The remote is asked once per interval, counted from the start of the previous check;
        // local commits (from this or any other process) are looked for every tick.
        var nextRemoteCheck = Date.distantPast
        // After a failure, local commits wait for the next remote check instead of retrying every tick.
        var quietUntil = Date.distantPast
        // A refusal or another failure is reported once (until it changes or clears), and the
        // remote is asked again after a delay that doubles each time, up to `maxBackoff`.
        var lastFailure: String?
        var backoff = interval
        while !shouldStop() {
            let now = Date()
            let remoteDue = now >= nextRemoteCheck
            let localWork = now >= quietUntil && (try? hasUnsentCommits(remote: remote)) == true
            if remoteDue || localWork {
                if remoteDue { nextRemoteCheck = now.addingTimeInterval(interval) }
                do {
                    if try localWork || needsSync(remote: remote, as: identity) {
                        // A sync frees what it allocated, but glibc keeps the pages (`ProcessMemory`).
                        defer { ProcessMemory.returnFreedMemory() }
                        let report = try sync(remote: remote, as: identity)
                        if offline { offline = false; onEvent(.online) }
                        onEvent(.synced(report))
                    } else if offline {
                        offline = false
                        onEvent(.online)
                    }
                    lastFailure = nil
                    backoff = interval
                } catch {
                    // A stop requested meanwhile may have cut the transfer short: not an outage.
                    if shouldStop() { break }
                    if case ConcordError.offline = error {
                        if !offline { onEvent(.offline(error.localizedDescription)) }
                        offline = true
                    } else {
                        let message = (error as? LocalizedError)?.errorDescription ?? "\(error)"
                        if message != lastFailure { onEvent(.failed(message)) }
                        lastFailure = message
                        nextRemoteCheck = Date().addingTimeInterval(backoff)
                        backoff = min(backoff * 2, max(interval, Self.maxBackoff))
                    }
                    quietUntil = nextRemoteCheck
                }
                // With CONCORD_TRACE_PERF=1, one line per remote check (B11 counts polls with it).
                if remoteDue { PerformanceTrace.step("watch: remote checked") }
            }
            let tickEnd = Date().addingTimeInterval(Self.watchTick)
            while Date() < tickEnd, !shouldStop() { usleep(10_000) }
        }
        onEvent(.stopped)
    }

    /// How often `watch` looks for local commits to send.
    static let watchTick: TimeInterval = 0.05
    /// The longest `watch` waits before asking again a remote that refused it or failed.
    static let maxBackoff: TimeInterval = 300

    /// True when this device has commits `remote` has not received, as far as the last fetch knows.
    /// Reads two refs: cheap enough to ask every tick.
    func hasUnsentCommits(remote: String) throws -> Bool {
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let tracking = try gitCall { try repository.resolveReference(Self.trackingRef(remote)) }
        return head != nil && head != tracking
    }
}
