import ConcordTrust
import Foundation

/// Keeps profiles in sync in the background, as `concord watch` does: local commits are sent within
/// a tick, the remote is asked every `interval` seconds (and, on a concord server, tells of every
/// move at once), an outage is waited out, failures are retried with a growing delay, and a remote
/// that revokes this device or deletes the profile has its copy removed (`CopyRemoval`).
///
/// Each profile is worked on by a thread of its own, so a slow or dead remote never holds up the
/// others, and no blocking libgit2 or network work runs on Swift's cooperative pool. What happens
/// is told on two `AsyncSequence`s: `events()` (synced, offline, online, access removed, …) and
/// `progress()` (phase, pending commits, last sync, `isFullySynced`).
///
/// An app syncing a store it opened binds the engine to it (`SyncEngine(for:)`, `add(_:remote:interval:keepCopy:)`),
/// so the store sees every sync; a directory no store of this process has open is added as a `Target`.
///
/// ```swift
/// let engine = try SyncEngine(for: store)
/// let events = engine.events()
/// engine.start()
/// for await event in events { … }   // until `engine.stop()`
/// ```
public final class SyncEngine: Sendable {
    /// One profile to keep in sync, and how.
    public struct Target: Sendable {
        /// The profile's directory.
        public var directory: URL
        /// The remote to sync with.
        public var remote: String
        /// Seconds between checks of the remote (more than 0, at most 3600).
        public var interval: Double
        /// Keep the copy when the remote revokes this device's member or deletes the profile
        /// (by default it is deleted, its unsent edits saved first).
        public var keepCopy: Bool

        /// `directory` kept in sync with `remote` (checked every `interval` seconds); its copy is
        /// deleted when the remote removes it, unless `keepCopy`.
        public init(directory: URL, remote: String = "origin", interval: Double = 2, keepCopy: Bool = false) {
            (self.directory, self.remote, self.interval, self.keepCopy) = (directory.standardizedFileURL, remote, interval, keepCopy)
        }
    }

    /// An event of one profile.
    public struct Event: Sendable {
        /// The profile's directory (as its `Target` gives it).
        public let profile: URL
        /// What happened.
        public let kind: SyncEvent
    }

    private let identity: Identity
    private let environment: ConcordEnvironment
    private let hub = SyncEngineHub()

    /// An engine syncing as `identity`, with `environment`'s home, clock and network timeout.
    public init(identity: Identity, environment: ConcordEnvironment) {
        (self.identity, self.environment) = (identity, environment)
    }

    /// An engine let go while running is stopped (its threads joined), never left syncing unowned.
    deinit { hub.stop() }

    /// Adds a profile; its thread starts at once when the engine is running. Throws when the
    /// directory is not a profile, the remote is unknown or not a remote URL, the interval is out
    /// of range, the profile is in this engine already, or the engine was stopped.
    public func add(_ target: Target) throws {
        try Self.checkInterval(target.interval)
        let profile = try Profile.open(at: target.directory, environment: environment, caches: hub.caches)
        _ = try profile.sync.remoteLocation(target.remote)
        try hub.add(ProfileWatch(target: target, identity: identity, environment: environment, hub: hub))
    }

    /// Adds `store`'s profile, synced with `remote` every `interval` seconds, as the store's own
    /// syncs are: on the store's sync queue and engine (no second engine on its directory), as the
    /// store's identity, telling the store of each sync — its `status`, observers and change feeds
    /// see every sync, access removal and deletion, whoever started it. When the remote revokes
    /// this device or deletes the profile, the store ends (every call throws the removal) before
    /// the copy is deleted (unless `keepCopy`). A store closed by its app is no longer synced.
    /// Throws as `add(_:)` does.
    public func add(_ store: ConcordStore, remote: String = "origin", interval: Double = 2, keepCopy: Bool = false) throws {
        let target = Target(directory: store.directory, remote: remote, interval: interval, keepCopy: keepCopy)
        try Self.checkInterval(target.interval)
        _ = try store.onSyncQueue { try $0.sync.remoteLocation(remote) }
        try hub.add(ProfileWatch(target: target, identity: store.identity, environment: store.environment, hub: hub, store: store))
    }

    /// An engine keeping `store` in sync (`add(_:remote:interval:keepCopy:)`), as its identity and
    /// with its environment; not started (`start()`).
    public convenience init(for store: ConcordStore, remote: String = "origin", interval: Double = 2, keepCopy: Bool = false) throws {
        self.init(identity: store.identity, environment: store.environment)
        try add(store, remote: remote, interval: interval, keepCopy: keepCopy)
    }

    private static func checkInterval(_ interval: Double) throws {
        guard interval > 0, interval <= 3600 else {
            throw ConcordError.invalidInput(.badSetting, "the interval must be between 0 and 3600 seconds, not \(interval)")
        }
    }

    /// Starts the threads of the profiles added so far (and of those added later, as they come).
    public func start() { hub.start() }

    /// Stops every profile's thread and returns once each has done its last work (the system ends
    /// the threads a moment later; none touches the network or a profile after that): a check of a
    /// remote in progress is cut, a sync in progress finishes first (its fetch or push ends within
    /// the network timeout). Each profile tells `.stopped` last, and the streams then finish.
    /// Idempotent; a stopped engine does not start again. Called inside a call's closure of a
    /// store this engine syncs (or a handler of its status), it does not wait for that store's
    /// thread, whose sync may be waiting for the very call: that thread ends once the call returned,
    /// and its `.stopped` comes after the streams finished (so they do not tell it).
    public func stop() { hub.stop() }

    /// `stop()` for a task: the threads are joined on a thread of the engine's own, never one of
    /// Swift's cooperative pool, and the task resumes once all have ended.
    public func stop() async {
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread { [hub] in
                hub.stop()
                finished.resume()
            }
        }
    }

    /// How many events `events()` keeps for a consumer that has not read them yet: beyond that, the
    /// oldest unread are dropped (`.bufferingNewest`), so an engine whose events nobody reads, or
    /// reads slowly, runs for weeks in bounded memory. 256 is several minutes of events at the
    /// busiest (a sync, with its `synced` and perhaps `lostWrites`, takes tens of milliseconds at least).
    public static let eventBuffer = 256

    /// How many progress values `progress()` keeps for a consumer that has not read them yet:
    /// beyond that, the oldest unread are dropped (`.bufferingNewest`), so a slow consumer reads
    /// the newest progress, not a backlog of stale ones. Progress is state, not history: while the
    /// consumer is away, other profiles' changes may push a profile's latest out of the buffer
    /// (more than `progressBuffer` changes after it); `progress(of:)` always answers with each
    /// profile's current progress.
    public static let progressBuffer = 16

    /// The events of every profile from now on, in order for each profile; finishes when the engine
    /// stops. A consumer more than `eventBuffer` events behind loses the oldest of those it has not read.
    public func events() -> AsyncStream<Event> { hub.subscribeEvents() }

    /// The progress of every profile, the current one of each first, then each change; finishes
    /// when the engine stops. A slow consumer gets the newest `progressBuffer` values it has not
    /// read, never an unbounded backlog: the last one it reads is the newest one told.
    public func progress() -> AsyncStream<SyncProgress> { hub.subscribeProgress() }

    /// Where `profile` stands now (nil when it is not in this engine or its thread has not started).
    public func progress(of profile: URL) -> SyncProgress? { hub.progress(of: profile.standardizedFileURL) }

    /// How many times `profile`'s thread has asked its remote (the bench counts polls with it).
    package func remoteChecks(of profile: URL) -> Int { hub.remoteChecks(of: profile.standardizedFileURL) }
}
