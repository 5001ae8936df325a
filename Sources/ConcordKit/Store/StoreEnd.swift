import ConcordGit
import ConcordModel
import Foundation

/// How a store ends (closed, its copy removed or deleted) and what a sync engine bound to it
/// (`SyncEngine.add(_:remote:interval:keepCopy:)`) does through it.
extension ConcordStore {
    // MARK: Closing and removing

    /// Closes the store: every observer and change feed ends, every later call throws
    /// `storeClosed`, and the profile's repository, index and watcher are let go once the calls
    /// running now have finished (a sync in progress finishes first). What was written stays on
    /// disk; open the profile again to use it. A sync engine syncing this store stops syncing it.
    /// Idempotent; a store already ended by a removal keeps throwing the removal. Inside a call's
    /// closure of this store, the call running ends as it would have, and nothing runs after it.
    public func close() {
        let closed = ConcordError.storeClosed(profile: info.name)
        // Inside a call's closure, or on the watching thread (a status `onChange` handler), the
        // queues' running blocks may be waiting for this very thread: end them without waiting.
        let inside = isOnItsOwnThread
        engine.end(closed, waiting: !inside)
        watcher.end(closed, waiting: !inside)
        syncer.end(closed, waiting: !inside)
    }

    /// Deletes this device's copy of the profile (`Profile.removeLocalCopy`), as a revoked device
    /// does: the edits it never sent to `remote` are saved first as a dump under
    /// `$CONCORD_HOME/saved/`, whose path is returned (nil when there were none; the copy stays
    /// when they cannot be saved). The store is closed first; allowed also after a sync threw
    /// `accessRemoved` or `profileDeleted`. A copy already gone (a sync engine removed it) returns nil.
    /// Refused (`invalidInput`) inside a call's closure of this store and in a handler of its status.
    @discardableResult
    public func removeLocalCopy(unsentTo remote: String = "origin") throws -> URL? {
        // Not where close() cannot wait for the calls running: the copy would go under them.
        guard !isOnItsOwnThread else { throw ProfileQueue.nested }
        let reason = (engine.endedError as? ConcordError).flatMap(CopyRemoval.reason(for:))
        close()
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent(".git").path) else { return nil }
        let profile = try Profile.open(at: directory, environment: environment)
        return try profile.removeLocalCopy(unsentTo: remote, removedBecause: reason)
    }

    /// True inside a call's closure of this store, or on its watching thread (a status `onChange`
    /// handler): waiting there for the store's queues, or for what waits for them, waits for itself.
    var isOnItsOwnThread: Bool { engine.isCurrent || syncer.isCurrent || watcher.isWatchingThread }

    /// Whether the store can still be used (not closed, its copy not removed).
    public var isOpen: Bool { engine.endedError == nil }

    // MARK: For a sync engine bound to this store (`SyncEngine.add(_:)`)

    /// Runs `body` on the store's sync queue with its sync engine's `Profile`: the engine's
    /// watch does all its work there, so its syncs and the store's own never run at once, and
    /// there is one engine per directory. Throws the store's end when it was closed or removed.
    /// Refused inside a call's closure of the store (`ProfileQueue.nested`): a removal on the
    /// sync queue waits for the store's queue. After a removal the store's own sync learned, the
    /// sync queue still runs, so the engine learns it too and applies its policy to the copy;
    /// after `close()` it throws `storeClosed`.
    /// `cancellation` is made current on the queue's thread while `body` runs (a stop cuts its transfers).
    func onSyncQueue<T>(cancellation: TransferCancellation? = nil, _ body: (Profile) throws -> T) throws -> T {
        guard !engine.isCurrent else { throw ProfileQueue.nested }
        guard let cancellation else { return try syncer.run(body) }
        return try syncer.run { profile in try cancellation.whileCurrent { try body(profile) } }
    }

    /// Runs `body` on the sync queue with its `Profile`, refused as `sync` is: the calls that may
    /// remove the copy (`destroy`) run there, so no sync of the store's engine runs meanwhile.
    func onSyncQueueAsCaller<T>(_ body: (Profile) throws -> T) throws -> T {
        try syncAllowed()
        return try syncer.run { try changedLocally($0, body($0)) }
    }

    /// `onSyncQueueAsCaller`, on the sync queue while the caller suspends.
    func onSyncQueueAsCaller<T: Sendable>(_ body: @escaping @Sendable (Profile) throws -> T) async throws -> T {
        try syncAllowed()
        return try await syncer.runAsync { try self.changedLocally($0, body($0)) }
    }

    /// A call of this store is about to remove the copy (`destroy`, on the sync queue): the store
    /// ends with `error` first, its sync queue too once that call returns.
    func removingHere(by error: Error) {
        removed(by: error)
        engine.end(error, replacing: true)
        syncer.end(error, replacing: true)
    }

    /// A sync of this store started (its own, or its sync engine's): the status says one runs
    /// until the last running one ended.
    func syncStarted() {
        syncsRunning.withLock { $0 += 1 }
        statusMirror.update { $0.isSyncing = true }
    }

    /// A sync of this store ended.
    func syncEnded() {
        let running = syncsRunning.withLock { count in
            count -= 1
            return count
        }
        statusMirror.update { $0.isSyncing = running > 0 }
    }

    /// A sync engine's sync of this store ended: with `report` (the status, observers and feeds
    /// see it as the store's own), or with `error`.
    /// A transfer the engine's stop cut short is no failure of the store's.
    func engineSyncEnded(_ profile: Profile, remote: String, _ outcome: Result<SyncReport, Error>, stopped: Bool) {
        syncEnded()
        switch outcome {
        case .success(let report): _ = synced(profile, remote, report)
        case .failure(let error): if !stopped { statusMirror.failed(error) }
        }
    }

    /// A sync engine learned this copy must go (`cause`) and applies `policy` to it, on the sync
    /// queue: the store ends first (nothing else touches the directory meanwhile), then the copy
    /// is removed or kept; once that is done, calls throw what was done (`CopyRemoval.error`). When
    /// the policy fails (the unsent edits could not be saved), the copy and the sync queue stay
    /// for the engine's next try.
    func removing(by cause: Error, _ policy: () throws -> CopyRemoval?) throws -> CopyRemoval? {
        removed(by: cause)
        guard let removal = try policy() else { return nil }
        engine.end(removal.error, replacing: true)
        syncer.end(removal.error, replacing: true)
        return removal
    }
}
