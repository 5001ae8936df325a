import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

extension Sync {
    /// Keeps this profile in sync until `shouldStop` returns true: every 20 ms it looks for local
    /// commits the remote lacks (two ref reads; writes by other processes are seen the same way),
    /// and every `interval` seconds it checks cheaply whether the remote's main moved (reading only
    /// its ref list); either one triggers a sync. On a concord server, the server also says the
    /// moment main moves (`LiveUpdates`, `concord-wait`), which triggers a sync at once, and while
    /// it does the remote is polled at most every `livePollInterval`. Stops only between syncs, never inside a ref update.
    ///
    /// Ends by throwing `ConcordError.accessRemoved` when the remote revokes this device's member,
    /// or `.profileDeleted` when an Admin deleted the profile (reported first as a `.failed` event); every other failure is reported and retried.
    public func watch(remote: String = "origin", interval: Double, as identity: Identity,
                      shouldStop: () -> Bool, onEvent: (WatchEvent) -> Void) throws {
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
        // On a concord server, the server says when main moves (`LiveUpdates`); polling stays as the fallback.
        let live = try liveUpdates(remote: remote, identity: identity)
        live?.start()
        defer { live?.stop() }
        while !shouldStop() {
            let now = Date()
            // Told of a move this device has already (its own push, say): nothing to do for it.
            let movedTo = live?.takeMoved()
            let told = movedTo.map { $0 != (try? gitCall { try repository.resolveReference(Profile.trackingRef(remote)) }) } ?? false
            if !told { _ = live?.takePrefetched() }
            let remoteDue = now >= nextRemoteCheck || told
            let localWork = now >= quietUntil && (try? hasUnsentCommits(remote: remote)) == true
            if remoteDue || localWork {
                // While the server tells of every move, a poll is only a safety net.
                if remoteDue { nextRemoteCheck = now.addingTimeInterval(live?.isLive == true ? max(interval, Self.livePollInterval) : interval) }
                do {
                    if try localWork || told || isNeeded(remote: remote, as: identity) {
                        // A sync frees what it allocated, but glibc keeps the pages (`ProcessMemory`).
                        defer { ProcessMemory.returnFreedMemory() }
                        let report = try run(remote: remote, as: identity, prefetched: told ? live?.takePrefetched() : nil)
                        live?.update(known: try gitCall { try repository.resolveReference(Profile.trackingRef(remote)) })
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
                    switch error {
                    case ConcordError.accessRemoved, ConcordError.profileDeleted:
                        onEvent(.failed(error.localizedDescription))
                        throw error
                    default: break
                    }
                    if case ConcordError.offline(let remote, let reason, _) = error {
                        // Said once per outage, so no count of local commits: it would go stale at the next write.
                        if !offline { onEvent(.offline("cannot reach \(remote) (\(reason)); local commits are kept and sent once it answers")) }
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
            // Until the next tick, or at once when the server says main moved.
            let tickEnd = Date().addingTimeInterval(Self.watchTick)
            while Date() < tickEnd, !shouldStop(), live?.hasMoved != true { usleep(5_000) }
        }
        onEvent(.stopped)
    }

    /// Live updates from `remote` when it is reached over ssh (nil for a path remote).
    private func liveUpdates(remote: String, identity: Identity) throws -> LiveUpdates? {
        let location = try profile.remoteLocation(remote)
        guard case .ssh = location else { return nil }
        let known = try gitCall { try repository.resolveReference(Profile.trackingRef(remote)) }
        return LiveUpdates(url: location.transportURL, options: profile.transportOptions(for: identity, remote: remote, location: location),
                           known: known)
    }

    /// How often `watch` asks the remote while a concord server's `concord-wait` tells it of
    /// every move (`LiveUpdates.isLive`), when `--interval` is shorter.
    static let livePollInterval: TimeInterval = 60

    /// How often `watch` looks for local commits to send (two ref reads, ~20 µs).
    static let watchTick: TimeInterval = 0.02
    /// The longest `watch` waits before asking again a remote that refused it or failed.
    static let maxBackoff: TimeInterval = 300

    /// True when this device has commits `remote` has not received, as far as the last fetch knows.
    /// Reads two refs: cheap enough to ask every tick.
    func hasUnsentCommits(remote: String) throws -> Bool {
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let tracking = try gitCall { try repository.resolveReference(Profile.trackingRef(remote)) }
        return head != nil && head != tracking
    }
}
