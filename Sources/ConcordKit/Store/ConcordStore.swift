import ConcordModel
import ConcordTrust
import Foundation
import Synchronization

/// One profile opened for an app: the entry point, as GRDB's `DatabaseQueue` is. Opened once with
/// the identity it reads and writes as, `Sendable`, so one store can be shared by every task and
/// thread of an app. It owns the engine (the profile's repository, caches and clock) privately and
/// runs every call on it one at a time (`ProfileQueue`).
///
/// Each call comes blocking and `async`: `read { reader in … }` and `write { transaction in … }`
/// take `@Sendable` closures whose handle is valid only inside the closure; `sync()` fetches,
/// checks, merges and pushes; the sharing calls (`share`, `revoke`, …) are those of `Members`,
/// without the identity. An `async` call runs its work on the store's own Dispatch queue, never on
/// Swift's cooperative pool, and honours its task's cancellation: at once while it waits for the
/// store, and a sync in a transfer at the transfer's next callback, leaving the profile as a
/// failed sync leaves it (nothing admitted that was not checked; the next sync resumes). The
/// local phases (the check, the merge, the checkout, a write's commit) are not cut.
///
/// Syncs run one at a time on a queue of their own, with an engine of their own (a second
/// `Profile` on the same directory, opened by the first sync), so reads and writes of this store never wait for the network:
/// a sync takes the profile's file lock only for its local phases (check, admit, merge, ref
/// updates; docs/architecture.md, "The sync pipeline"), which a write also takes. Another process (the `concord` CLI) may use the same profile meanwhile: the
/// profile's file lock serializes them, as it serializes two CLI commands.
public final class ConcordStore: Sendable {
    /// The profile's working directory.
    public let directory: URL
    /// Who this store reads and writes as.
    public let identity: Identity
    /// The device's environment the store was opened with (home, clock, network timeout): with
    /// `directory` and `identity`, what a sync engine needs to reach this profile.
    public let environment: ConcordEnvironment
    /// The profile's id, name and format version, as read when it was opened.
    public let info: ProfileInfo
    /// The profile's record kinds, as they were once the store's declared kinds were registered.
    public let kinds: KindsTable
    /// The kinds the app declared when it opened the store (`kindDifferences` compares them with the profile's).
    public let declaredKinds: [Kind]
    /// The store's queue and its engine (internal: the observers read on it, `StoreObservation`).
    let engine: ProfileQueue
    /// Where syncs run: their own engine on the same profile, so a sync's network phase leaves
    /// `engine` free; the profile's file lock serializes its local phases with writes. Opened by
    /// the first sync, on this queue (a store that never syncs never opens it); a failure to open
    /// it is that sync's error. For a store opened `syncingOnItsQueue` (the tool's), `engine` itself.
    let syncer: ProfileQueue
    /// The one thread that watches main move for every observer and change feed of the store,
    /// started when the first one subscribes (`StoreWatcher`); it looks through `engine`'s queue.
    let watcher: StoreWatcher
    /// What `status` returns, kept up to date once an app asked for it.
    let statusMirror: StoreStatus
    /// How many syncs of this store run now (its own and its sync engine's).
    let syncsRunning = Mutex(0)
    /// How many live records the clone that made this store wrote (0 when opened or created): for the tool's `clone`.
    package let clonedRecords: Int

    private init(_ profile: Profile, identity: Identity, declaredKinds: [Kind] = [], syncingOnItsQueue: Bool = false) {
        directory = profile.root
        self.identity = identity
        self.declaredKinds = declaredKinds
        environment = profile.environment
        info = profile.info
        kinds = profile.kinds
        clonedRecords = profile.clonedRecords
        engine = ProfileQueue(profile)
        let (root, environment, caches) = (profile.root, profile.environment, profile.caches)
        syncer = syncingOnItsQueue ? engine : ProfileQueue(label: "concord.store.sync.\(profile.info.id)") {
            try Profile.open(at: root, environment: environment, caches: caches)
        }
        let status = StoreStatus()
        statusMirror = status
        watcher = StoreWatcher(directory: root, polling: environment.watchesByPolling, status: status, engine: engine)
    }

    /// The environment given, or this process's (`ConcordEnvironment.fromProcess`).
    private static func resolved(_ environment: ConcordEnvironment?) throws -> ConcordEnvironment {
        try environment ?? ConcordEnvironment.fromProcess()
    }

    /// Opens the profile in `directory` as `identity`. Refuses anything that is not a profile
    /// (`notAProfile`) or is of a newer format (`newerFormat`), like `Profile.open`.
    /// `environment` nil takes this process's (`CONCORD_HOME`, `CONCORD_CLOCK`, …).
    /// `kinds`: the app's kinds; those the profile lacks are added by one commit of `identity`'s, who
    /// must be an Admin (`kindsNeedAdmin` otherwise, nothing changed); one the profile has otherwise
    /// opens as the profile has it (`kindDifferences`). The kinds' indexed fields are kept ready in
    /// this device's record index (`index(_:)`).
    public static func open(at directory: URL, identity: Identity, environment: ConcordEnvironment? = nil,
                            kinds: [Kind] = []) throws -> ConcordStore {
        try open(at: directory, identity: identity, environment: environment, kinds: kinds, checkingMembership: true)
    }

    /// `open`; without `checkingMembership`, also for an identity the copy's members do not
    /// include (yet): the command-line tool's way in, which has always let whoever can read the
    /// folder read it (a device cloned before its key was added, an invitee before accepting,
    /// a copy kept after a revocation), while the engine refuses such an identity's every write
    /// and sync as it refuses an app's. With `syncingOnItsQueue`, the store's syncs run on its one
    /// queue with its one engine (no second `Profile` opened for them): for a caller that makes
    /// one call at a time and so has no reads to keep going during a sync (the tool's commands).
    package static func open(at directory: URL, identity: Identity, environment: ConcordEnvironment? = nil,
                             kinds: [Kind] = [], checkingMembership: Bool, syncingOnItsQueue: Bool = false) throws -> ConcordStore {
        let profile = try Profile.open(at: directory, environment: resolved(environment))
        // Someone else's copy is not this identity's to read: refused before any record is read.
        if checkingMembership { _ = try profile.members.active(identity.acting(as: identity.owner)) }
        closeToOthers(profile.root)
        try register(kinds, in: profile, as: identity)
        let store = ConcordStore(profile, identity: identity, declaredKinds: kinds, syncingOnItsQueue: syncingOnItsQueue)
        try store.index(kinds)
        return store
    }

    /// Creates a new profile in `directory` whose first member, an admin, is `identity`, and opens it;
    /// `kinds` the template lacks are added by a second commit.
    public static func create(at directory: URL, name: String, template: Template, identity: Identity,
                              environment: ConcordEnvironment? = nil, kinds: [Kind] = []) throws -> ConcordStore {
        _ = try missing(kinds, from: template.kinds)   // a declaration refused before anything is created
        let profile = try Profile.create(at: directory, name: name, template: template, identity: identity,
                                         environment: resolved(environment))
        closeToOthers(profile.root)
        try register(kinds, in: profile, as: identity)
        let store = ConcordStore(profile, identity: identity, declaredKinds: kinds)
        try store.index(kinds)
        return store
    }

    /// Clones the profile at `url` into `directory` (new or empty) as a new device of `identity`,
    /// and opens it (`Sync.clone`: checked, checked out, registered; nothing left on failure).
    /// As `open`, refuses (`notAMember`, `keyNotRegistered`; the copy removed again) when the
    /// profile's members do not include this identity's key: a new device is added first
    /// (`addDevice`, on a device of the same member), then cloned.
    public static func clone(url: String, into directory: URL, identity: Identity, environment: ConcordEnvironment? = nil,
                             trustHost: String? = nil) throws -> ConcordStore {
        try clone(url: url, into: directory, identity: identity, environment: environment, trustHost: trustHost, keepingAnyCopy: false)
    }

    /// `clone`; with `keepingAnyCopy`, the copy stays whoever its members are (the command-line
    /// tool's `clone`: a device clones, then asks an Admin to add its key; opening the copy
    /// afterwards is refused as `open` refuses it).
    package static func clone(url: String, into directory: URL, identity: Identity, environment: ConcordEnvironment? = nil,
                              trustHost: String? = nil, keepingAnyCopy: Bool) throws -> ConcordStore {
        let profile = try Sync.clone(url: url, into: directory, identity: identity, environment: resolved(environment),
                                        trustHost: trustHost)
        do {
            if !keepingAnyCopy { _ = try profile.members.active(identity.acting(as: identity.owner)) }
        } catch {
            _ = try? profile.removeLocalCopy(unsentTo: "", savingUnsent: false)
            throw error
        }
        closeToOthers(profile.root)
        return ConcordStore(profile, identity: identity)
    }

    /// `clone`, run on a Dispatch thread while the caller suspends.
    public static func clone(url: String, into directory: URL, identity: Identity, environment: ConcordEnvironment? = nil,
                             trustHost: String? = nil) async throws -> ConcordStore {
        try await onDispatchThread {
            try clone(url: url, into: directory, identity: identity, environment: environment, trustHost: trustHost)
        }
    }

    /// Accepts `invitation` into `directory` as `identity` (`Members.accept`: clone, check, commit
    /// the acceptance, push it) and opens the profile; also returns the acceptance's sync.
    public static func accept(_ invitation: Invitation, into directory: URL, identity: Identity,
                              environment: ConcordEnvironment? = nil, trustHost: String? = nil) throws -> (store: ConcordStore, sync: SyncReport) {
        let accepted = try Members.accept(invitation, into: directory, identity: identity, environment: resolved(environment),
                                          trustHost: trustHost)
        closeToOthers(accepted.profile.root)
        return (ConcordStore(accepted.profile, identity: identity), accepted.sync)
    }

    /// `accept`, run on a Dispatch thread while the caller suspends.
    public static func accept(_ invitation: Invitation, into directory: URL, identity: Identity, environment: ConcordEnvironment? = nil,
                              trustHost: String? = nil) async throws -> (store: ConcordStore, sync: SyncReport) {
        try await onDispatchThread {
            try accept(invitation, into: directory, identity: identity, environment: environment, trustHost: trustHost)
        }
    }

    /// `body` on a global Dispatch thread (a clone before there is a store's queue), resumed with its result.
    private static func onDispatchThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    // MARK: Reading and writing

    /// Runs `body` with a reader of this profile; no write of this store runs meanwhile.
    public func read<T: Sendable>(_ body: @Sendable (StoreReader) throws -> T) throws -> T {
        try engine.run { try body(StoreReader(profile: $0)) }
    }

    /// `read`, run on the store's queue while the caller suspends.
    public func read<T: Sendable>(_ body: @escaping @Sendable (StoreReader) throws -> T) async throws -> T {
        try await engine.runAsync { try body(StoreReader(profile: $0)) }
    }

    /// Runs `body` in a transaction and commits what it wrote as ONE commit signed by this store's
    /// identity (`Records.write`): nothing is committed if `body` throws or writes nothing.
    @discardableResult
    public func write<T: Sendable>(action: ChangeAction? = nil, _ body: @Sendable (Transaction) throws -> T) throws -> WriteResult<T> {
        let identity = identity
        return try committing { try $0.records.write(as: identity, action: action, body) }
    }

    /// `write`, run on the store's queue while the caller suspends.
    @discardableResult
    public func write<T: Sendable>(action: ChangeAction? = nil,
                                   _ body: @escaping @Sendable (Transaction) throws -> T) async throws -> WriteResult<T> {
        let identity = identity
        return try await committing { try $0.records.write(as: identity, action: action, body) }
    }

    /// Writes every record and log entry of `dump` as one commit (`Records.importDump`).
    @discardableResult
    public func importDump(_ dump: Dump) throws -> WriteResult<DumpImport> {
        let identity = identity
        return try committing { try $0.records.importDump(dump, as: identity) }
    }

    /// `importDump`, run on the store's queue while the caller suspends.
    @discardableResult
    public func importDump(_ dump: Dump) async throws -> WriteResult<DumpImport> {
        let identity = identity
        return try await committing { try $0.records.importDump(dump, as: identity) }
    }

    // MARK: Sync

    /// Syncs with `remote` (`Sync.run`): fetch, check, merge, push. Throws the store's end once it
    /// was closed or its copy removed, and `invalidInput` inside another call's closure of this store.
    public func sync(remote: String = "origin") throws -> SyncReport {
        let identity = identity
        try syncAllowed()
        return try syncing {
            try syncer.run { profile in try self.synced(profile, remote, profile.sync.run(remote: remote, as: identity)) }
        }
    }

    /// `sync`, run on the store's sync queue while the caller suspends. Cancelling the task ends a
    /// transfer in progress at its next callback and throws `CancellationError`; the profile is
    /// left as any failed sync leaves it, and the next sync picks up from there.
    public func sync(remote: String = "origin") async throws -> SyncReport {
        let identity = identity
        try syncAllowed()
        return try await syncing {
            try await syncer.runAsync { profile in try self.synced(profile, remote, profile.sync.run(remote: remote, as: identity)) }
        }
    }

    /// A sync may start: the store is open, and this is not inside one of its calls' closures
    /// (whose queue a removal learned on the sync queue waits for).
    func syncAllowed() throws {
        if let ended = engine.endedError { throw ended }
        guard !engine.isCurrent, !syncer.isCurrent else { throw ProfileQueue.nested }
    }

    /// Adds a remote by name and URL (a path, or `ssh://`).
    public func addRemote(_ name: String, url: String) throws {
        try engine.run { try $0.sync.addRemote(name, url: url) }
    }

    /// `addRemote`, run on the store's queue while the caller suspends.
    public func addRemote(_ name: String, url: String) async throws {
        try await engine.runAsync { try $0.sync.addRemote(name, url: url) }
    }

    // MARK: For the package's own engines

    /// Whether the sync queue's own `Profile` is open (only once the store synced): for tests.
    package var isSyncEngineOpen: Bool { syncer.isOpen }

    /// Runs `body` on the store's queue with the engine itself: for the package's sync engine and
    /// tests, which need what the public calls do not give (a prefetched pack, the verification).
    package func withProfile<T>(_ body: (Profile) throws -> T) throws -> T {
        try committing(body)
    }

    /// `withProfile`, run on the store's queue while the caller suspends (cancellable like `sync`).
    package func withProfile<T: Sendable>(_ body: @escaping @Sendable (Profile) throws -> T) async throws -> T {
        try await committing(body)
    }

    /// Runs `body`, which may commit, on the store's queue and waits for it, then tells the
    /// watcher and the status (`changedLocally`). Meanwhile the watcher does not look (`StoreWatcher.whileChanging`):
    /// the kernel's news of this very commit would have it wait for the lock the commit holds.
    private func committing<T>(_ body: (Profile) throws -> T) throws -> T {
        try watcher.whileChanging { try engine.run { try changedLocally($0, body($0)) } }
    }

    /// `committing`, on the store's queue while the caller suspends.
    private func committing<T: Sendable>(_ body: @escaping @Sendable (Profile) throws -> T) async throws -> T {
        try await watcher.whileChanging { try await engine.runAsync { try self.changedLocally($0, body($0)) } }
    }

    // MARK: Telling the observers and the status

    /// The store's status with its remote (`origin`), for an app's UI (`StoreStatus`): kept up to
    /// date by this store's writes and syncs from the first time it is asked for.
    public var status: StoreStatus {
        if !statusMirror.isUsed {
            statusMirror.markUsed()
            try? engine.run { statusMirror.refresh(from: $0.sync, remote: "origin") }
        }
        return statusMirror
    }

    /// After a call of this store that may have committed (on the store's queue, with its engine):
    /// the watcher looks at main now, and the status is read again when an app uses it. Every
    /// call that commits goes through it (`write`, `importDump`, `withProfile`, which the sharing calls use).
    func changedLocally<T>(_ profile: Profile, _ value: T) -> T {
        watcher.moved()
        if statusMirror.isUsed { statusMirror.refresh(from: profile.sync, remote: "origin") }
        return value
    }

    /// After a sync (on the sync queue, with its engine): the same, for `remote`.
    func synced(_ profile: Profile, _ remote: String, _ report: SyncReport) -> SyncReport {
        watcher.moved()
        statusMirror.update { $0.lastError = nil; $0.lastErrorMessage = nil }
        if statusMirror.isUsed { statusMirror.refresh(from: profile.sync, remote: remote) }
        return report
    }

    /// Runs a sync, telling the status it runs and how it ended; a sync that learns this device's
    /// access was removed, or the profile deleted, ends every observer and change feed with it.
    private func syncing<T>(_ body: () async throws -> T) async throws -> T {
        syncStarted()
        defer { syncEnded() }
        do {
            return try await body()
        } catch {
            syncFailed(error)
            throw error
        }
    }

    /// `syncing`, blocking.
    private func syncing<T>(_ body: () throws -> T) throws -> T {
        syncStarted()
        defer { syncEnded() }
        do {
            return try body()
        } catch {
            syncFailed(error)
            throw error
        }
    }

    /// A sync failed with `error`: the status says so, and a removal ends the store (`removed(by:)`).
    private func syncFailed(_ error: Error) {
        statusMirror.failed(error)
        if CopyRemoval.isRemoval(error) { removed(by: error) }
    }

    /// This device may no longer have the copy (`error`: its access was removed, or the profile
    /// deleted): the status says so, every observer and change feed ends with `error`, and every
    /// call from now on throws it, touching nothing on disk; only `removeLocalCopy()` and `close()` remain.
    /// The sync queue stays (a sync engine bound to the store applies its removal policy there).
    func removed(by error: Error) {
        engine.end(error)
        watcher.end(error)
        statusMirror.failed(error)
        statusMirror.update { $0.isAccessRemoved = true }
    }
}

/// Makes a profile's directory its owner's alone (0700) when others may enter it: what is in it
/// (records, the index, the lock) is then closed to other users of the machine too.
func closeToOthers(_ directory: URL) {
    var info = stat()
    if stat(directory.path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR, info.st_mode & 0o077 != 0 { chmod(directory.path, 0o700) }
}
