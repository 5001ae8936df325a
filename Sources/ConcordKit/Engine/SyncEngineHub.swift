import Foundation

/// A `SyncEngine`'s shared state: its profiles' threads, their latest progress, and the
/// subscribers of its two streams (each buffering at most `SyncEngine.eventBuffer` or
/// `SyncEngine.progressBuffer` elements, the newest: a subscriber that never reads costs no more). Every field is read and written under `lock` only, which is
/// what makes the `@unchecked Sendable` safe; no one waits on anything while holding it.
final class SyncEngineHub: @unchecked Sendable {
    /// The engine's caches, for the profiles it opens itself (a bound store's profiles have their store's).
    let caches = EngineCaches()
    private let lock = NSLock()
    private var watches = [URL: ProfileWatch]()
    private var running = false
    private var stopped = false
    private var latest = [URL: SyncProgress]()
    private var checks = [URL: Int]()
    private var eventSubscribers = [UUID: AsyncStream<SyncEngine.Event>.Continuation]()
    private var progressSubscribers = [UUID: AsyncStream<SyncProgress>.Continuation]()

    func add(_ watch: ProfileWatch) throws {
        let start = try lock.withLock {
            guard !stopped else { throw ConcordError.invalidInput("this sync engine was stopped: make a new one") }
            guard watches[watch.target.directory] == nil else {
                throw ConcordError.invalidInput("\(watch.target.directory.path) is in this sync engine already")
            }
            watches[watch.target.directory] = watch
            return running
        }
        if start { watch.start() }
    }

    func start() {
        let toStart: [ProfileWatch] = lock.withLock {
            guard !running, !stopped else { return [] }
            running = true
            return Array(watches.values)
        }
        for watch in toStart { watch.start() }
    }

    func stop() {
        let (all, wasRunning) = lock.withLock {
            defer { stopped = true }
            return (Array(watches.values), running)
        }
        for watch in all { watch.stop() }
        if wasRunning { for watch in all where watch.mayJoinHere { watch.join() } }
        let (events, progress) = lock.withLock {
            defer { (eventSubscribers, progressSubscribers) = ([:], [:]) }
            return (Array(eventSubscribers.values), Array(progressSubscribers.values))
        }
        for subscriber in events { subscriber.finish() }
        for subscriber in progress { subscriber.finish() }
    }

    func publish(_ event: SyncEvent, for profile: URL) {
        let element = SyncEngine.Event(profile: profile, kind: event)
        lock.withLock { for subscriber in eventSubscribers.values { subscriber.yield(element) } }
    }

    /// Tells `progress` to the subscribers, unless it says nothing new.
    func publish(_ progress: SyncProgress) {
        lock.withLock {
            if let last = latest[progress.profile], !progress.differs(from: last) { return }
            latest[progress.profile] = progress
            for subscriber in progressSubscribers.values { subscriber.yield(progress) }
        }
    }

    func progress(of profile: URL) -> SyncProgress? { lock.withLock { latest[profile] } }

    func countRemoteCheck(of profile: URL) { lock.withLock { checks[profile, default: 0] += 1 } }

    func remoteChecks(of profile: URL) -> Int { lock.withLock { checks[profile] ?? 0 } }

    func subscribeEvents() -> AsyncStream<SyncEngine.Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncEngine.Event.self, bufferingPolicy: .bufferingNewest(SyncEngine.eventBuffer))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.eventSubscribers.removeValue(forKey: id) } }
        let added = lock.withLock {
            guard !stopped else { return false }
            eventSubscribers[id] = continuation
            return true
        }
        if !added { continuation.finish() }
        return stream
    }

    /// The latest progress of each profile first (under the same lock as the subscription, so
    /// nothing is missed or told twice), then each change.
    func subscribeProgress() -> AsyncStream<SyncProgress> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncProgress.self, bufferingPolicy: .bufferingNewest(SyncEngine.progressBuffer))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.progressSubscribers.removeValue(forKey: id) } }
        let added = lock.withLock {
            guard !stopped else { return false }
            for progress in latest.values { continuation.yield(progress) }
            progressSubscribers[id] = continuation
            return true
        }
        if !added { continuation.finish() }
        return stream
    }
}
