import ConcordGit
import ConcordTrust
import Foundation

/// One profile a `SyncEngine` keeps in sync, on a thread of its own (never one of Swift's
/// cooperative pool: a sync blocks in libgit2 and on the network): every 20 ms it looks for local
/// commits the remote lacks (two ref reads; writes by other processes are seen the same way), and
/// every `interval` seconds it checks cheaply whether the remote's main moved (reading only its
/// ref list); either one triggers a sync. On a concord server, the server also says the moment
/// main moves (`LiveUpdates`, `concord-wait`), which wakes the thread and triggers a sync at once,
/// and while it does the remote is polled at most every `livePollInterval`. Stops only between
/// syncs, never inside a ref update; a check of the remote in progress is cut.
///
/// Ends when stopped, or when the remote revokes this device's member or an Admin deleted the
/// profile: then the removal policy (`CopyRemoval`) is applied and told; every other failure is
/// told and retried, after a delay that doubles each time up to `maxBackoff`.
final class ProfileWatch: Sendable {
    let target: SyncEngine.Target
    private let identity: Identity
    private let environment: ConcordEnvironment
    /// The store this watch syncs, when it was added as one (`SyncEngine.add(_:remote:interval:keepCopy:)`):
    /// its sync queue and engine are then this watch's, and it tells the store of every sync.
    private let store: ConcordStore?
    /// Raised by `stop()`; read by the loop between steps.
    private let stopping = TransferCancellation()
    /// Signalled by `stop()` and by the live updates when the server says main moved: the loop's
    /// wait between ticks ends at once.
    private let wake = DispatchSemaphore(value: 0)
    /// Signalled when the thread ends; `join()` passes it on, so any number of callers may join.
    private let ended = DispatchSemaphore(value: 0)
    /// Where events and progress go (the engine's subscribers).
    private let hub: SyncEngineHub

    init(target: SyncEngine.Target, identity: Identity, environment: ConcordEnvironment, hub: SyncEngineHub, store: ConcordStore? = nil) {
        (self.target, self.identity, self.environment, self.hub, self.store) = (target, identity, environment, hub, store)
    }

    /// Starts the profile's thread.
    func start() {
        Thread.detachNewThread { [self] in
            nameCurrentThread(Self.threadName)
            defer { ended.signal() }
            run()
        }
    }

    /// Asks the thread to end: a check of the remote in progress is cut, a sync finishes first.
    func stop() {
        stopping.cancel()
        wake.signal()
    }

    /// Whether `join()` may wait here: not on a thread of the store this watch syncs (its tick may
    /// be waiting for that very thread's queue).
    var mayJoinHere: Bool { store?.isOnItsOwnThread != true }

    /// Returns once the thread has ended.
    func join() {
        ended.wait()
        ended.signal()
    }

    /// The name of every profile's thread (what `/proc/self/task/*/comm` shows).
    static let threadName = "concord-sync"
    /// How often the loop asks the remote while a concord server's `concord-wait` tells it of
    /// every move (`LiveUpdates.isLive`), when `interval` is shorter.
    static let livePollInterval: TimeInterval = 60
    /// How often the loop looks for local commits to send (two ref reads, ~20 µs).
    static let watchTick: TimeInterval = 0.02
    /// The longest the loop waits before asking again a remote that refused it or failed.
    static let maxBackoff: TimeInterval = 300

    private var shouldStop: Bool { stopping.isCancelled }

    private func run() {
        let remote = target.remote
        var progress = SyncProgress(profile: target.directory, remote: remote)
        func publish(_ change: (inout SyncProgress) -> Void) {
            change(&progress)
            hub.publish(progress)
        }
        let own: Profile?
        let live: LiveUpdates?
        do {
            // A stop cuts the check of the remote in progress (a remote that never answers holds it
            // for the network timeout); libgit2's fetch and push run to their end.
            if store != nil {
                own = nil
            } else {
                var environment = environment
                environment.transferCancellation = stopping
                own = try Profile.open(at: target.directory, environment: environment, caches: hub.caches)
            }
            live = try using(own) { profile in
                progress.lastSync = Date(instant: profile.sync.lastSync(remote: remote))
                progress.pendingCommits = (try? profile.sync.localCommits(remote)) ?? 0
                return try liveUpdates(profile)
            }
        } catch let ended as ConcordError where store != nil && CopyRemoval.isRemoval(ended) {
            // Its store's copy was removed (`destroy`) before this thread first synced it: told as the
            // loop tells a removal (the removal last).
            let removal = told(ended)
            publish { $0.phase = .stopped; $0.removal = removal }
            return
        } catch {
            // Checked when the profile was added: gone since (deleted by another process), or its store closed.
            hub.publish(.failed(Self.message(error)), for: target.directory)
            hub.publish(.stopped, for: target.directory)
            publish { $0.phase = .stopped; $0.failed(error) }
            return
        }
        hub.publish(.started(remote: remote, interval: target.interval), for: target.directory)
        publish { _ in }
        live?.start()
        defer { live?.stop() }
        if let removal = loop(own, live: live, publish: publish) {
            publish { $0.phase = .stopped; $0.removal = removal }
        } else {
            publish { $0.phase = .stopped }
        }
    }

    /// Runs `body` with the profile: this watch's own, or, bound to a store, the store's sync
    /// engine on its sync queue (with this watch's stop current, so it cuts a transfer there too).
    private func using<T>(_ own: Profile?, _ body: (Profile) throws -> T) throws -> T {
        if let own { return try body(own) }
        guard let store else { preconditionFailure("a ProfileWatch has its own profile or a store") }
        return try store.onSyncQueue(cancellation: stopping, body)
    }

    /// What one tick of the loop came to.
    private enum Tick {
        case next, stop
        case removed(CopyRemoval)
    }

    /// The loop, until stopped (nil) or the copy was removed (what was done).
    private func loop(_ own: Profile?, live: LiveUpdates?, publish: ((inout SyncProgress) -> Void) -> Void) -> CopyRemoval? {
        let (remote, interval) = (target.remote, target.interval)
        let tell = { [hub, target] (event: SyncEvent) in hub.publish(event, for: target.directory) }
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
        // The refs when the remote last answered: an idle poll that finds them unchanged reads nothing more.
        var answeredAt: (head: ObjectID?, tracking: ObjectID?)?
        /// What this device last fetched of the remote's main.
        func tracking(_ profile: Profile) -> ObjectID? { try? profile.sync.heads(remote: remote).tracking }
        /// Where this device stands once the remote answered (after a sync when `synced`).
        func answered(_ profile: Profile, synced: Bool) {
            let heads = try? profile.sync.heads(remote: remote)
            let (head, known) = (heads?.head, heads?.tracking)
            let moved = synced || answeredAt.map { $0.head != head || $0.tracking != known } ?? true
            answeredAt = (head, known)
            publish {
                $0.phase = .idle
                $0.failed(nil)
                $0.isFullySynced = head != nil && head == known
                guard moved else { return }
                $0.pendingCommits = (try? profile.sync.localCommits(remote)) ?? $0.pendingCommits
                $0.lastSync = Date(instant: profile.sync.lastSync(remote: remote))
            }
        }
        /// One tick's work, with the profile.
        func tick(_ profile: Profile) -> Tick {
            let sync = profile.sync
            let now = Date()
            // Told of a move this device has already (its own push, say): nothing to do for it.
            let movedTo = live?.takeMoved()
            let told = movedTo.map { $0 != tracking(profile) } ?? false
            if !told { _ = live?.takePrefetched() }
            let remoteDue = now >= nextRemoteCheck || told
            let localWork = now >= quietUntil && (try? hasUnsentCommits(profile)) == true
            if localWork || told {
                publish {
                    $0.isFullySynced = false
                    if localWork { $0.pendingCommits = (try? profile.sync.localCommits(remote)) ?? $0.pendingCommits }
                }
            }
            guard remoteDue || localWork else { return .next }
            // While the server tells of every move, a poll is only a safety net.
            if remoteDue { nextRemoteCheck = now.addingTimeInterval(live?.isLive == true ? max(interval, Self.livePollInterval) : interval) }
            do {
                if try localWork || told || sync.isNeeded(remote: remote, as: identity) {
                    publish { $0.phase = .syncing }
                    // A sync frees what it allocated, but glibc keeps the pages (`ProcessMemory`).
                    defer { ProcessMemory.returnFreedMemory() }
                    store?.syncStarted()
                    let report: SyncReport
                    do {
                        report = try sync.run(remote: remote, as: identity, prefetched: told ? live?.takePrefetched() : nil)
                        store?.engineSyncEnded(profile, remote: remote, .success(report), stopped: false)
                    } catch {
                        store?.engineSyncEnded(profile, remote: remote, .failure(error), stopped: shouldStop)
                        throw error
                    }
                    live?.update(known: tracking(profile))
                    if offline { offline = false; tell(.online) }
                    tell(.synced(report))
                    if !report.yours.isEmpty { tell(.lostWrites(report.yours)) }
                    answered(profile, synced: true)
                } else {
                    if offline { offline = false; tell(.online) }
                    answered(profile, synced: false)
                }
                lastFailure = nil
                backoff = interval
            } catch {
                // A stop requested meanwhile may have cut the transfer short: not an outage.
                if shouldStop { return .stop }
                var error = error
                do {
                    if let removal = try removed(profile, by: error, live: live, tell: tell) { return .removed(removal) }
                } catch let failure {
                    error = failure
                }
                if case ConcordError.offline(let remote, let reason, _) = error {
                    // Said once per outage, so no count of local commits: it would go stale at the next write.
                    if !offline { tell(.offline("cannot reach \(remote) (\(reason)); local commits are kept and sent once it answers")) }
                    offline = true
                    publish { $0.phase = .offline; $0.isFullySynced = false; $0.failed(error) }
                } else {
                    let message = Self.message(error)
                    if message != lastFailure { tell(.failed(message)) }
                    lastFailure = message
                    nextRemoteCheck = Date().addingTimeInterval(backoff)
                    backoff = min(backoff * 2, max(interval, Self.maxBackoff))
                    publish { [error] in $0.phase = .idle; $0.isFullySynced = false; $0.failed(error) }
                }
                quietUntil = nextRemoteCheck
            }
            // With CONCORD_TRACE_PERF=1, one line per remote check (B11 counts polls with it).
            if remoteDue {
                PerformanceTrace.step("watch: remote checked")
                hub.countRemoteCheck(of: target.directory)
            }
            return .next
        }
        while !shouldStop {
            let outcome: Tick
            do {
                outcome = try using(own, tick)
            } catch let ended as ConcordError where CopyRemoval.isRemoval(ended) {
                // Bound to a store whose copy a call of its own removed (`destroy`).
                return told(ended)
            } catch {
                // Bound to a store the app closed: nothing left to sync.
                tell(.failed(Self.message(error)))
                break
            }
            switch outcome {
            case .next: break
            case .stop: tell(.stopped); return nil
            case .removed(let removal): return removal
            }
            // Until the next tick, or at once when stopped or the server says main moved.
            if live?.hasMoved != true { _ = wake.wait(timeout: .now() + Self.watchTick) }
        }
        tell(.stopped)
        return nil
    }

    /// When `error` says this device may no longer have the copy: the live updates stopped (their
    /// thread joined: nothing is left inside libssh2 once the copy goes), then the removal policy
    /// applied and told. A removal that itself fails (the unsent edits could not be saved: the copy
    /// is kept) throws, and is told and retried as any other failure, by polling alone.
    private func removed(_ profile: Profile, by error: Error, live: LiveUpdates?, tell: (SyncEvent) -> Void) throws -> CopyRemoval? {
        guard CopyRemoval.isRemoval(error) else { return nil }
        live?.stop()
        let remote = target.remote
        let policy = {
            try CopyRemoval.apply(for: error, keepCopy: self.target.keepCopy) { try profile.removeLocalCopy(unsentTo: remote, removedBecause: $0) }
        }
        // Bound to a store: the store ends first, so nothing of it touches the copy while it goes.
        guard let removal = try store.map({ try $0.removing(by: error, policy) }) ?? policy() else { return nil }
        if case .profileDeleted = removal.cause { tell(.profileDeleted(removal)) } else { tell(.accessRemoved(removal)) }
        return removal
    }

    /// The store this watch syncs ended with `removal` (a call of its own removed the copy):
    /// told as the removal it was, not as a failure of the sync.
    private func told(_ removal: ConcordError) -> CopyRemoval {
        let done = CopyRemoval(cause: removal, deleted: !FileManager.default.fileExists(atPath: target.directory.path), savedUnsentEdits: nil)
        if case .profileDeleted = removal {
            hub.publish(.profileDeleted(done), for: target.directory)
        } else {
            hub.publish(.accessRemoved(done), for: target.directory)
        }
        return done
    }

    /// Live updates from the profile's remote when it is reached over ssh (nil for a path remote),
    /// waking the loop when the server says main moved.
    private func liveUpdates(_ profile: Profile) throws -> LiveUpdates? {
        let location = try profile.sync.remoteLocation(target.remote)
        guard case .ssh = location else { return nil }
        let known = try profile.sync.heads(remote: target.remote).tracking
        return LiveUpdates(url: location.transportURL, options: profile.sync.transportOptions(for: identity, remote: target.remote, location: location),
                           known: known, onMove: { [wake] in wake.signal() })
    }

    /// True when this device has commits the remote has not received, as far as the last fetch knows.
    /// Reads two refs: cheap enough to ask every tick.
    private func hasUnsentCommits(_ profile: Profile) throws -> Bool {
        let (head, tracking) = try profile.sync.heads(remote: target.remote)
        return head != nil && head != tracking
    }

    static func message(_ error: Error) -> String { (error as? LocalizedError)?.errorDescription ?? "\(error)" }
}
