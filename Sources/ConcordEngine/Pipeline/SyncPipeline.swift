import ConcordGit
import ConcordModel
import Foundation

/// The steps of a sync with one remote, each taking and returning values (docs/architecture.md,
/// "The sync pipeline"): transport → quarantine → check → admit → merge → push. Nothing passes
/// between steps on a shared object: what the transport read and hashed travels as
/// `FetchedObjects` inside `Incoming` and `Admitted`, so the steps cannot be reordered without the
/// compiler seeing it.
///
/// Which steps hold the profile lock is the caller's choice, and `Sync.run` makes it: the
/// transport (and the push) run without it, so a write or a read is not kept waiting by the
/// network; the check, the admission, the merge and every ref update run under it, and cope
/// with the branch having moved meanwhile (the tracking ref: `hasMoved`; the branch: the
/// merge's compare-and-swap).
struct SyncPipeline {
    /// The profile's sync capability: its remotes, its repository, its push.
    let sync: Sync
    let remote: String
    let location: RemoteLocation
    let options: TransportOptions

    private var profile: Profile { sync.profile }
    private var repository: Repository { sync.repository }

    /// Where a fetch puts the remote's main, inside the quarantine.
    static let incomingRef = "refs/concord/incoming"

    /// The pipeline for `remote`, with `identity`'s keys for the transport.
    init(sync: Sync, remote: String, identity: Identity) throws {
        let location = try sync.remoteLocation(remote)
        self.init(sync: sync, remote: remote, location: location,
                  options: sync.transportOptions(for: identity, remote: remote, location: location))
    }

    init(sync: Sync, remote: String, location: RemoteLocation, options: TransportOptions) {
        self.sync = sync
        self.remote = remote
        self.location = location
        self.options = options
    }

    /// What the transport hands on: the remote's main fetched into a quarantine, nothing of it
    /// in the profile yet.
    struct Incoming {
        /// Holds the fetched objects until `admit`; removed with it when it is let go unadmitted.
        let quarantine: Quarantine
        /// The remote's tip, nil when it has no main.
        let tip: ObjectID?
        /// What this device had when the transport began (HEAD, the tracking ref): commits
        /// reachable from these were checked when they arrived or written here.
        let known: [ObjectID]
        /// The tracking ref when the transport began: the admission moves it by compare-and-swap from here.
        let lastFetched: ObjectID?
        /// What a path fetch read and hashed (nothing for ssh or a prefetched pack).
        let objects: FetchedObjects
        /// Signatures verified while a path fetch copied the commits; cancel once the check is done.
        let signatures: SignaturePrefetch
    }

    /// What the check found: every new commit passed (`IncomingCheck`); how many there were.
    struct Checked {
        let incoming: Incoming
        let commits: Int
    }

    /// What the admission hands on: the checked commits in the profile and the tracking ref on `tip`.
    struct Admitted {
        let tip: ObjectID
        /// For the merge and checkout (`Sync.mergeLocked(_:as:fetched:)`).
        let objects: FetchedObjects
    }

    // MARK: Steps

    /// Quarantine and transport (no lock needed): makes a quarantine listing this device's tips,
    /// and fetches the remote's main into it — or takes `prefetched` (the pack a concord server
    /// sent with its `concord-wait` answer) when it was made against what this device last
    /// fetched: libgit2's indexer takes it in as it would a fetched pack, and its tip is checked
    /// exactly like a fetched one. If it does not index or lacks its tip, the fetch runs as usual.
    func transport(cloning: Bool = false, prefetched: PrefetchedPack? = nil) throws -> Incoming {
        let tracking = try gitCall { try repository.resolveReference(Sync.trackingRef(remote)) }
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let known = [head, tracking].compactMap { $0 }
        PerformanceTrace.start()
        let quarantine = try gitCall { try Quarantine(for: repository, tips: known) }
        // A path fetch hands over each commit it copied: its signature is verified meanwhile.
        let signatures = SignaturePrefetch(memo: profile.caches.signatures)
        var objects = FetchedObjects.none
        do {
            if let prefetched, prefetched.base == tracking, (try? Self.take(prefetched, into: quarantine.repository)) != nil {
                PerformanceTrace.step("took the pack sent with the wait into the quarantine")
            } else {
                objects = try fetch(into: quarantine.repository, cloning: cloning, commitCopied: signatures.add(rawCommit:))
                PerformanceTrace.step("fetched into the quarantine")
            }
        } catch {
            signatures.cancel()
            throw error
        }
        let tip = try gitCall { try quarantine.repository.resolveReference(Self.incomingRef) }
        return Incoming(quarantine: quarantine, tip: tip, known: known, lastFetched: tracking, objects: objects, signatures: signatures)
    }

    /// True when the tracking ref is no longer where it was when `incoming`'s transport began:
    /// another sync of this profile fetched meanwhile, so `incoming` is judged against a stale view
    /// (its history warnings, its compare-and-swap): the caller fetches again.
    func hasMoved(since incoming: Incoming) throws -> Bool {
        try gitCall { try repository.resolveReference(Sync.trackingRef(remote)) } != incoming.lastFetched
    }

    /// Check (under the lock): every commit reachable from the fetched tip and from none of the
    /// known tips passes `IncomingCheck`, reading what the transport kept; the first that fails
    /// is refused (`ConcordError.invalidCommit`, `.unauthorizedCommit`) and nothing enters the
    /// profile. `changedPaths` gets the files each checked commit changed (for the audit index).
    func check(_ incoming: Incoming, changedPaths: ChangedPaths?) throws -> Checked {
        guard let tip = incoming.tip else { return Checked(incoming: incoming, commits: 0) }
        var check = IncomingCheck(repository: incoming.quarantine.repository, profileID: profile.info.id.isEmpty ? nil : profile.info.id, caches: profile.caches)
        check.changedPaths = changedPaths
        check.prefetchedSignatures = incoming.signatures
        check.fetched = incoming.objects
        let commits = try check.verify(tip: tip, known: incoming.known)
        PerformanceTrace.step("new commits checked")
        return Checked(incoming: incoming, commits: commits)
    }

    /// Admit (under the lock): moves the checked objects into the profile and the tracking ref to
    /// the remote's tip (compare-and-swap from where it was when the transport began). Nil when the
    /// remote has no main (nothing to admit, the tracking ref stays).
    func admit(_ checked: Checked) throws -> Admitted? {
        let incoming = checked.incoming
        guard let tip = incoming.tip else { return nil }
        try gitCall { try incoming.quarantine.admit() }
        PerformanceTrace.step("objects admitted")
        if incoming.lastFetched != tip {
            try gitCall {
                try repository.updateReference(Sync.trackingRef(remote), to: tip, expected: incoming.lastFetched, message: "concord: fetched")
            }
        }
        return Admitted(tip: tip, objects: incoming.objects)
    }

    /// Transport, check and admit in one (a clone, which holds no lock while its profile is
    /// made). `first`, when given, looks at the fetched tip before the check (a clone reads the
    /// profile's format version there, so another format is reported as such).
    func fetchVerified(cloning: Bool, changedPaths: ChangedPaths?,
                       first: ((ObjectID, Repository) throws -> Void)? = nil) throws -> Admitted? {
        let incoming = try transport(cloning: cloning)
        defer { incoming.signatures.cancel() }   // nothing verifies on after the check (it waited for it all)
        if let tip = incoming.tip { try first?(tip, incoming.quarantine.repository) }
        return try admit(try check(incoming, changedPaths: changedPaths))
    }

    /// Indexes `prefetched` into `target` (a quarantine) and points the incoming ref at its tip,
    /// which must then be a commit there.
    private static func take(_ prefetched: PrefetchedPack, into target: Repository) throws {
        try target.indexPack(prefetched.bytes)
        _ = try target.commit(prefetched.tip)
        try target.updateReference(incomingRef, to: prefetched.tip, expected: nil, message: "concord: sent with the wait")
    }
}
