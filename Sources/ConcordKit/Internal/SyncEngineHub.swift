import Foundation
import Synchronization

/// A `SyncEngine`'s shared state: its profiles' threads, their latest progress, and the
/// subscribers of its two streams (each buffering at most `SyncEngine.eventBuffer` or
/// `SyncEngine.progressBuffer` elements, the newest: a subscriber that never reads costs no more),
/// all under one lock (`state`); no one waits on anything while holding it, and a stream is
/// finished only outside it (its termination handler takes it).
final class SyncEngineHub: Sendable {
    /// The engine's caches, for the profiles it opens itself (a bound store's profiles have their store's).
    let caches = EngineCaches()
    private struct State {
        var watches = [URL: ProfileWatch]()
        var running = false
        var stopped = false
        var latest = [URL: SyncProgress]()
        var checks = [URL: Int]()
        var eventSubscribers = [UUID: AsyncStream<SyncEngine.Event>.Continuation]()
        var progressSubscribers = [UUID: AsyncStream<SyncProgress>.Continuation]()
    }
    private let state = Mutex(State())

    func add(_ watch: ProfileWatch) throws {
        let start = try state.withLock { state in
            guard !state.stopped else { throw ConcordError.invalidInput(.wrongPlace, "this sync engine was stopped: make a new one") }
            guard state.watches[watch.target.directory] == nil else {
                throw ConcordError.invalidInput(.alreadyThere, "\(watch.target.directory.path) is in this sync engine already")
            }
            state.watches[watch.target.directory] = watch
            return state.running
        }
        if start { watch.start() }
    }

    func start() {
        let toStart: [ProfileWatch] = state.withLock { state in
            guard !state.running, !state.stopped else { return [] }
            state.running = true
            return Array(state.watches.values)
        }
        for watch in toStart { watch.start() }
    }

    func stop() {
        let (all, wasRunning) = state.withLock { state in
            defer { state.stopped = true }
            return (Array(state.watches.values), state.running)
        }
        for watch in all { watch.stop() }
        if wasRunning { for watch in all where watch.mayJoinHere { watch.join() } }
        let (events, progress) = state.withLock { state in
            defer { (state.eventSubscribers, state.progressSubscribers) = ([:], [:]) }
            return (Array(state.eventSubscribers.values), Array(state.progressSubscribers.values))
        }
        for subscriber in events { subscriber.finish() }
        for subscriber in progress { subscriber.finish() }
    }

    func publish(_ event: SyncEvent, for profile: URL) {
        let element = SyncEngine.Event(profile: profile, kind: event)
        state.withLock { state in for subscriber in state.eventSubscribers.values { subscriber.yield(element) } }
    }

    /// Tells `progress` to the subscribers, unless it says nothing new.
    func publish(_ progress: SyncProgress) {
        state.withLock { state in
            if let last = state.latest[progress.profile], !progress.differs(from: last) { return }
            state.latest[progress.profile] = progress
            for subscriber in state.progressSubscribers.values { subscriber.yield(progress) }
        }
    }

    func progress(of profile: URL) -> SyncProgress? { state.withLock { $0.latest[profile] } }

    func countRemoteCheck(of profile: URL) { state.withLock { $0.checks[profile, default: 0] += 1 } }

    func remoteChecks(of profile: URL) -> Int { state.withLock { $0.checks[profile] ?? 0 } }

    func subscribeEvents() -> AsyncStream<SyncEngine.Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncEngine.Event.self, bufferingPolicy: .bufferingNewest(SyncEngine.eventBuffer))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.eventSubscribers.removeValue(forKey: id) } }
        let added = state.withLock { state in
            guard !state.stopped else { return false }
            state.eventSubscribers[id] = continuation
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
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.progressSubscribers.removeValue(forKey: id) } }
        let added = state.withLock { state in
            guard !state.stopped else { return false }
            for progress in state.latest.values { continuation.yield(progress) }
            state.progressSubscribers[id] = continuation
            return true
        }
        if !added { continuation.finish() }
        return stream
    }
}
