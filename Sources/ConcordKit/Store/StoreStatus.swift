import Foundation
import Observation

/// Where a store stands with its remote, for an app's UI to bind to (`ConcordStore.status`):
/// commits not yet sent, ahead/behind, when it last synced, whether a sync runs, the last sync's
/// error, whether access was removed. `Observable` (the Observation framework, on Linux too):
/// SwiftUI views and `withObservationTracking` see each property change.
///
/// It is what `@Observable` expands to, written out, so that its state can sit behind a lock:
/// the status is updated synchronously by the store call that changed it (a write, an import, a
/// sharing call, a sync), on that call's thread, before the call returns — so it is current when
/// a call returns, testable with no run loop, and never waits for the main actor. A change seen
/// by the store's observers (another process's commit) updates it too while something observes.
/// A SwiftUI view reads it on the main actor as any `Observable`; an app that needs every change
/// on the main actor hops there in its `onChange`.
public final class StoreStatus: Observable, @unchecked Sendable {
    /// All of the status at one moment.
    public struct Snapshot: Sendable, Equatable {
        /// Commits of this device the remote has not received, as far as the last fetch knows.
        public var pendingCommits = 0
        /// Commits the last fetch brought that main has not merged (before a sync's merge).
        public var behind = 0
        /// When this device last synced with the remote, if ever (to the millisecond).
        public var lastSync: Date?
        /// A sync of this store is running.
        public var isSyncing = false
        /// The last sync's failure, until a sync succeeds: the typed error an app switches on (its
        /// `errorDescription` the one line to show).
        public var lastError: ConcordError?
        /// The last sync's failure as one line, also when it was not a `ConcordError` (then
        /// `lastError` is nil); cleared when a sync succeeds.
        public var lastErrorMessage: String?
        /// A sync learned that this device's access was removed, or the profile deleted.
        public var isAccessRemoved = false
    }

    // Safe: `state`, `used` and `refreshes` are read and written only while holding `lock`; the registrar is Sendable.
    private let lock = NSLock()
    private var state = Snapshot()
    private var used = false
    /// How many refreshes (`reading`) were told: one read before another was told is not told after it.
    private var refreshes = 0
    private let registrar = ObservationRegistrar()

    init() {}

    /// The whole status at once.
    public var snapshot: Snapshot {
        registrar.access(self, keyPath: \.snapshot)
        return lock.withLock { state }
    }

    /// Commits of this device the remote has not received (ahead), as far as the last fetch knows.
    public var pendingCommits: Int { read(\.pendingCommits, \.pendingCommits) }
    /// Commits the last fetch brought that main has not merged.
    public var behind: Int { read(\.behind, \.behind) }
    /// When this device last synced with the remote, if ever (to the millisecond).
    public var lastSync: Date? { read(\.lastSync, \.lastSync) }
    /// A sync of this store is running.
    public var isSyncing: Bool { read(\.isSyncing, \.isSyncing) }
    /// The last sync's failure, until a sync succeeds, as a typed error (`Snapshot.lastError`).
    public var lastError: ConcordError? { read(\.lastError, \.lastError) }
    /// The last sync's failure as one line (`Snapshot.lastErrorMessage`).
    public var lastErrorMessage: String? { read(\.lastErrorMessage, \.lastErrorMessage) }
    /// A sync learned that this device's access was removed, or the profile deleted.
    public var isAccessRemoved: Bool { read(\.isAccessRemoved, \.isAccessRemoved) }

    private func read<T>(_ property: KeyPath<StoreStatus, T>, _ field: KeyPath<Snapshot, T>) -> T {
        registrar.access(self, keyPath: property)
        return lock.withLock { state[keyPath: field] }
    }

    /// Whether an app asked for the status: until then the store does not spend reads keeping it.
    var isUsed: Bool { lock.withLock { used } }

    /// The app asked for it.
    func markUsed() { lock.withLock { used = true } }

    /// The sync failed with `error`: both forms of it.
    func failed(_ error: Error) {
        update {
            $0.lastError = error as? ConcordError
            $0.lastErrorMessage = error.localizedDescription
        }
    }

    /// Applies `change`, then tells the observers of each property it changed. With `refresh`, a
    /// refresh read when `refresh` refreshes had been told: applied (and counted) only if no other
    /// was told since; returns whether `change` was applied.
    @discardableResult
    func update(refresh: Int? = nil, _ change: (inout Snapshot) -> Void) -> Bool {
        let changed = lock.withLock { () -> (old: Snapshot, new: Snapshot)? in
            if let refresh {
                guard refresh == refreshes else { return nil }
                refreshes += 1
            }
            let old = state
            change(&state)
            return (old, state)
        }
        guard let (old, new) = changed else { return false }
        guard old != new else { return true }
        defer { registrar.withMutation(of: self, keyPath: \.snapshot) {} }
        func tell<T: Equatable>(_ property: KeyPath<StoreStatus, T>, _ field: KeyPath<Snapshot, T>) {
            if old[keyPath: field] != new[keyPath: field] { registrar.withMutation(of: self, keyPath: property) {} }
        }
        tell(\.pendingCommits, \.pendingCommits)
        tell(\.behind, \.behind)
        tell(\.lastSync, \.lastSync)
        tell(\.isSyncing, \.isSyncing)
        tell(\.lastError, \.lastError)
        tell(\.lastErrorMessage, \.lastErrorMessage)
        tell(\.isAccessRemoved, \.isAccessRemoved)
        return true
    }

    /// Reads ahead/behind and the last sync of `remote` from `sync` (nothing changes when the
    /// profile has no such remote yet: every commit is then pending).
    func refresh(from sync: Sync, remote: String) {
        _ = reading(from: sync, remote: remote)()
    }

    /// What `refresh` reads, read now; the returned closure tells it (the observers' `onChange`
    /// handlers run in it, on the caller's thread), so a caller can tell it once it let go of the
    /// profile. It tells nothing, and returns false, when another refresh was told meanwhile
    /// (a sync's, read after this one): the caller reads again if it wants this one's news.
    func reading(from sync: Sync, remote: String) -> () -> Bool {
        let seen = lock.withLock { refreshes }
        let status = try? sync.status(remote: remote)
        let pending = status?.ahead ?? (try? sync.localCommits(remote))
        return { [self] in
            update(refresh: seen) { snapshot in
                if let pending { snapshot.pendingCommits = pending }
                if let status {
                    snapshot.behind = status.behind
                    snapshot.lastSync = Date(instant: status.lastSync)
                }
            }
        }
    }
}
