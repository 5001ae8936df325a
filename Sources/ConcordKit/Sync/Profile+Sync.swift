import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// What one `sync` did.
public struct SyncReport: Sendable {
    public let remote: String
    public let received: Int
    public let sent: Int
    public let changedFiles: [String]
    public let resolved: [ResolvedConflict]
    public let unresolved: [UnresolvedFile]
    public let head: String
    public let attempts: Int
    /// What the user should know although the sync succeeded (the remote's main was deleted or
    /// rewound, and this device restored it).
    public var warnings: [String] = []
    /// Changes by members who lost their rights concurrently that the merge left out.
    public var leftOut: [LeftOutChange] = []
    /// Members two Admins added at once with different keys: admitted by neither.
    public var contested: [String] = []
    /// The writes the merges this sync brought in (received, or made here) left out, each field with
    /// its own author (`LostEdit`), recomputed from the merges' parents and trees.
    public var lost: [LostEdit] = []
    /// Those of them that were this identity's member's own writes: what the loser is told, even
    /// when their sync only fast-forwarded to a merge someone else made.
    public var yours: [LostEdit] = []
}

/// Where this profile stands against one remote.
public struct SyncStatus: Sendable {
    public let remote: String
    public let url: String
    public let ahead: Int
    public let behind: Int
    public let lastSync: String?
}

extension Profile {
    static let maxSyncAttempts = 10
    /// A path remote's branch lock older than this was left by a killed push.
    static let staleRemoteLockAge: TimeInterval = 60

    static func age(ofFile path: String) -> TimeInterval? {
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else { return nil }
        return Date().timeIntervalSince(modified)
    }

    /// The remote-tracking ref of `remote`'s main branch.
    static func trackingRef(_ remote: String) -> String { "refs/remotes/\(remote)/main" }

    // MARK: Internals

    func remoteLocation(_ remote: String) throws -> RemoteLocation {
        guard let url = try gitCall({ try repository.remoteURL(remote) }) else { throw ConcordError.unknownRemote(remote) }
        return try RemoteLocation(url: url)
    }

    func transportOptions(for identity: Identity, remote: String, location: RemoteLocation) -> TransportOptions {
        let knownHosts = KnownHosts(home: environment.home)
        let hostName = location.knownHostsName ?? ""
        var options = TransportOptions(sshPrivateKey: identity.privateKeyPath.path, trustHostKey: { key in
            knownHosts.verdict(host: hostName, key: key) == true
        }, stallTimeout: environment.networkTimeout,
           knownHostLines: location.knownHostsName == nil ? [] : knownHosts.lines(for: hostName))
        Self.offerKeys(&options, identity: identity, invitationKey: environment.invitationLoginKey)
        options.cancellation = environment.transferCancellation
        return options
    }

    /// The keys ssh offers, in order: while accepting an invitation, its one-time key first, then the
    /// device key. A concord server lets the one-time key in for that profile; it may also know the
    /// device key, as another profile's member, and then refuses it for this one without asking for
    /// another key (so the one-time key must come first).
    static func offerKeys(_ options: inout TransportOptions, identity: Identity, invitationKey: String?) {
        guard let invitationKey else { return }
        options.sshPrivateKey = invitationKey
        options.sshSecondKey = identity.privateKeyPath.path
    }

    /// Where a fetch puts the remote's main, inside the quarantine (see `fetchVerified`).
    static let incomingRef = "refs/concord/incoming"

    /// Fetches `remote`'s main into a quarantine (`Quarantine`), checks every commit this device
    /// does not have yet (`IncomingCheck`), and only then admits the objects and moves the
    /// remote-tracking ref. Returns the remote's tip, or nil when it has no main. A commit that
    /// fails the check is refused (`ConcordError.invalidCommit`): no object enters the profile
    /// and no ref moves. `first`, when given, looks at the fetched tip before the check (a clone
    /// reads the profile's format version there, so another format is reported as such).
    ///
    /// `prefetched` (a pack a concord server sent with its `concord-wait` answer) stands in for the
    /// transfer when it was made against what this device last fetched: libgit2's indexer takes it
    /// into the quarantine as it would a fetched pack (hashing every object), and its tip is checked
    /// exactly like a fetched one. If it does not index or lacks its tip, the fetch runs as usual.
    func fetchVerified(remote: String, location: RemoteLocation, options: TransportOptions, cloning: Bool = false,
                       changedPaths: ChangedPaths? = nil, prefetched: PrefetchedPack? = nil,
                       first: ((ObjectID, Repository) throws -> Void)? = nil) throws -> ObjectID? {
        let tracking = try gitCall { try repository.resolveReference(Self.trackingRef(remote)) }
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let known = [head, tracking].compactMap { $0 }
        PerformanceTrace.start()
        let quarantine = try gitCall { try Quarantine(for: repository, tips: known) }
        // A path fetch hands over each commit it copied: its signature is verified meanwhile.
        let signatures = SignaturePrefetch(memo: .shared)
        defer { signatures.cancel() }   // nothing verifies on after the fetch (the check waited for it all)
        if let prefetched, prefetched.base == tracking, (try? Self.take(prefetched, into: quarantine.repository)) != nil {
            PerformanceTrace.step("took the pack sent with the wait into the quarantine")
        } else {
            try fetch(remote: remote, location: location, options: options, into: quarantine.repository, cloning: cloning,
                      commitCopied: signatures.add(rawCommit:))
            PerformanceTrace.step("fetched into the quarantine")
        }
        guard let tip = try gitCall({ try quarantine.repository.resolveReference(Self.incomingRef) }) else { return nil }
        try first?(tip, quarantine.repository)
        var check = IncomingCheck(repository: quarantine.repository, profileID: info.id.isEmpty ? nil : info.id)
        check.changedPaths = changedPaths
        check.prefetchedSignatures = signatures
        try check.verify(tip: tip, known: known)
        PerformanceTrace.step("new commits checked")
        try gitCall { try quarantine.admit() }
        PerformanceTrace.step("objects admitted")
        if tracking != tip {
            try gitCall { try repository.updateReference(Self.trackingRef(remote), to: tip, expected: tracking, message: "concord: fetched") }
        }
        return tip
    }

    /// Indexes `prefetched` into `target` (a quarantine) and points the incoming ref at its tip,
    /// which must then be a commit there.
    private static func take(_ prefetched: PrefetchedPack, into target: Repository) throws {
        try target.indexPack(prefetched.bytes)
        _ = try target.commit(prefetched.tip)
        try target.updateReference(incomingRef, to: prefetched.tip, expected: nil, message: "concord: sent with the wait")
    }

    func fetch(remote: String, location: RemoteLocation, options: TransportOptions, into target: Repository, cloning: Bool,
                       commitCopied: (([UInt8]) -> Void)? = nil) throws {
        if case .path(let path) = location {
            // An Admin deleted the profile (`concord destroy`): the directory keeps only the signed notice.
            let noticePath = (path as NSString).appendingPathComponent(DeletionNotice.fileName)
            if let bytes = FileManager.default.contents(atPath: noticePath) {
                throw try deletionFound(Array(bytes), source: noticePath, remote: remote, cloning: cloning)
            }
            if !FileManager.default.fileExists(atPath: path) {
                throw ConcordError.offline(remote: remote, reason: "\(path) does not exist", localCommits: cloning ? nil : try localCommits(remote))
            }
        }
        do {
            if case .path(let path) = location {
                // Like a local `git fetch`, minus the pack building: copy just the new objects.
                // A file over what its kind of path may hold is refused from its declared size, unread.
                try target.fetchFromLocalRepository(at: path, ref: "refs/heads/main", into: Self.incomingRef, durable: false,
                                                    intoEmpty: cloning, commitCopied: commitCopied,
                                                    blobLimit: ProfilePathRules.maxBytes(ofFileNamed:))
            } else {
                try target.fetch(url: location.transportURL, refspecs: ["+refs/heads/main:\(Self.incomingRef)"], options: options)
            }
        } catch let invalid as InvalidTree {
            throw ConcordError.invalidCommit(commit: invalid.commit.short, path: invalid.path.isEmpty ? nil : invalid.path, reason: invalid.reason)
        } catch let oversized as OversizedFile {
            throw ConcordError.invalidCommit(commit: oversized.commit.short, path: oversized.path,
                                             reason: "\(oversized.size) bytes, over the \(oversized.limit)-byte limit")
        } catch {
            let failure = try transportError(error, remote: remote, location: location, cloning: cloning)
            guard isServerDeletion(failure, location: location) else { throw failure }
            throw try deletionFromServer(remote: remote, location: location, options: options, cloning: cloning, original: failure)
        }
    }

    /// Pushes `head`; false when the remote moved since `expected` (the caller retries).
    func push(_ head: ObjectID, expected: ObjectID?, remote: String, location: RemoteLocation,
                      options: TransportOptions, attemptsLeft: Int) throws -> Bool {
        switch location {
        case .path(let path):
            do {
                // Pushers to one bare repository take its own profile lock: a pusher killed while
                // git's ref lock was held is then known dead, and the next one clears that lock.
                let remoteLock = try ProfileLock(gitDirectory: path.hasSuffix("/") ? path : path + "/")
                defer { withExtendedLifetime(remoteLock) {} }
                try repository.pushToLocalRepository(at: path, ref: "refs/heads/main", tip: head, expected: expected)
                return true
            } catch let error as GitError where [.modified, .exists].contains(error.code) {
                return false
            } catch let error as GitError where error.code == .locked {
                // Another push holds the remote's branch lock right now, or a killed one left it behind.
                let lockFile = (path as NSString).appendingPathComponent("refs/heads/main.lock")
                if let age = Self.age(ofFile: lockFile), age > Self.staleRemoteLockAge {
                    unlink(lockFile)
                    return false
                }
                // A live push holds the lock for milliseconds; one seconds old is most likely abandoned.
                if attemptsLeft <= 1, let age = Self.age(ofFile: lockFile), age > 5 {
                    throw ConcordError.io("\(remote)'s branch is locked by \(lockFile) (left by a push that was killed?): it is removed automatically once it is \(Int(Self.staleRemoteLockAge)) s old; sync again then")
                }
                return false
            } catch {
                throw try transportError(error, remote: remote, location: location)
            }
        case .ssh:
            let outcome: PushOutcome
            do {
                // Compare-and-swap, as on a path: nothing is sent unless the server's main is at `expected`.
                outcome = try repository.push(remote: remote, refspec: "refs/heads/main:refs/heads/main", options: options,
                                              onlyIf: .remoteAt(expected))
            } catch let error as GitError where [.nonFastForward, .modified].contains(error.code) {
                return false
            } catch {
                throw try transportError(error, remote: remote, location: location)
            }
            guard let rejection = outcome.rejections.first else { return true }
            let reason = rejection.reason.lowercased()
            if ["fetch first", "non-fast-forward", "stale", "failed to lock", "cannot lock", "failed to update ref"]
                .contains(where: reason.contains) {
                return false
            }
            let server = outcome.serverMessages.isEmpty ? "" : " (server says: \(outcome.serverMessages.joined(separator: "; ")))"
            throw ConcordError.pushRejected(remote: remote, reason: rejection.reason + server)
        }
    }

    /// Maps a transport failure to the error the user should see.
    func transportError(_ error: Error, remote: String, location: RemoteLocation, cloning: Bool = false) throws -> Error {
        switch error {
        case TransportFailure.untrustedHostKey(let key):
            let host = location.knownHostsName ?? key.host
            let changed = KnownHosts(home: environment.home).verdict(host: host, key: key) == false
            return ConcordError.untrustedHost(remote: remote, host: host, fingerprint: key.fingerprint, changed: changed)
        case TransportFailure.authenticationFailed(let reason):
            return ConcordError.authenticationFailed(remote: remote, reason: reason)
        case TransportFailure.timedOut(let seconds):
            return ConcordError.offline(remote: remote, reason: "no answer from the server for \(seconds) s",
                                        localCommits: cloning ? nil : try localCommits(remote))
        case TransportFailure.refused(let message):
            return ConcordError.refused(remote: remote, message: message.split(whereSeparator: \.isNewline).joined(separator: " "))
        case let error as GitError where error.isConnectivity || isMissingRepository(error, location):
            return ConcordError.offline(remote: remote, reason: error.message, localCommits: cloning ? nil : try localCommits(remote))
        case let error as GitError:
            return ConcordError.remoteFailed(remote: remote, error)
        default:
            return error
        }
    }

    /// A path remote that is not there (or not a repository) is a disconnected drive: offline.
    /// A "not found" from a repository that is there is damage, and is not retried as an outage.
    private func isMissingRepository(_ error: GitError, _ location: RemoteLocation) -> Bool {
        guard case .path(let path) = location else { return false }
        if error.message.contains("could not find repository") { return true }
        let root = path.hasSuffix("/") ? path : path + "/"
        let isRepository = [root + "HEAD", root + ".git/HEAD"].contains { FileManager.default.fileExists(atPath: $0) }
        return error.code == .notFound && !isRepository
    }

    /// Local commits the remote has not received, as far as the last fetch knows.
    func localCommits(_ remote: String) throws -> Int {
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return 0 }
        guard let tracking = try gitCall({ try repository.resolveReference(Self.trackingRef(remote)) }) else {
            return try countCommits(head)
        }
        return try gitCall { try repository.aheadBehind(local: head, upstream: tracking).ahead }
    }

    func countCommits(_ head: ObjectID) throws -> Int {
        var count = 0
        try gitCall { try repository.walkHistory(from: head) { _ in count += 1; return true } }
        return count
    }

    func recordSync(remote: String, head: ObjectID) throws {
        try SyncState(lastSync: HLClock.formatInstant(ConcordEnvironment.systemClock()), lastRemoteHead: head.hex)
            .save(repository.gitDirectory, remote: remote)
    }
}
