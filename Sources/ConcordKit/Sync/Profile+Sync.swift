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

    /// Fetches `remote`'s main, merges it with the policies (in memory, offline), moves `main` by
    /// compare-and-swap, and pushes without ever forcing. When the push loses a race with another
    /// device, fetches, merges and pushes again (bounded, with jitter). Commits nothing implicitly.
    public func sync(remote: String = "origin", as identity: Identity) throws -> SyncReport {
        let lock = try lock()
        defer { withExtendedLifetime(lock) {} }
        // A long-running caller (`watch`) keeps this profile open across thousands of syncs: what
        // libgit2 cached during this one is let go, so memory does not grow with their number.
        defer { repository.releaseCaches() }
        let location = try remoteLocation(remote)
        let options = transportOptions(for: identity, remote: remote, location: location)
        var received = 0
        var sent = 0
        var changed = [String]()
        var resolved = [ResolvedConflict]()
        var unresolved = [UnresolvedFile]()
        var warnings = [String]()
        for attempt in 1...Self.maxSyncAttempts {
            let before = try gitCall { try repository.resolveReference("HEAD") }
            let lastFetched = try gitCall { try repository.resolveReference(Self.trackingRef(remote)) }
            let remoteTip = try fetchVerified(remote: remote, location: location, options: options)
            if let lastFetched, attempt == 1 {
                if remoteTip == nil {
                    // Deleted on the server: this device still has everything; pushing restores it.
                    warnings.append("\(remote)'s main had been deleted (it was at \(lastFetched.short)); this device's history is pushed back")
                    try gitCall { try repository.deleteReference(Self.trackingRef(remote)) }
                } else if let remoteTip, remoteTip != lastFetched, try gitCall({ try repository.isAncestor(remoteTip, of: lastFetched) }) {
                    warnings.append("\(remote)'s main went back from \(lastFetched.short) to \(remoteTip.short) (rewound on the server); this device's history is pushed back")
                }
            }
            if let remoteTip {
                if let before { received += try gitCall { try repository.aheadBehind(local: before, upstream: remoteTip).behind } }
                let report = try mergeLocked(remoteTip, as: identity)
                changed += report.changedFiles
                resolved += report.resolved
                unresolved += report.unresolved
            }
            guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else {
                throw ConcordError.emptyRemote(location.transportURL)
            }
            if head == remoteTip {
                try recordSync(remote: remote, head: head)
                return SyncReport(remote: remote, received: received, sent: sent, changedFiles: changed, resolved: resolved,
                                  unresolved: unresolved, head: head.hex, attempts: attempt, warnings: warnings)
            }
            let outgoing = try remoteTip.map { tip in try gitCall { try repository.aheadBehind(local: head, upstream: tip).ahead } }
                ?? countCommits(head)
            if try push(head, expected: remoteTip, remote: remote, location: location, options: options,
                        attemptsLeft: Self.maxSyncAttempts - attempt) {
                sent += outgoing
                // The push does not move the tracking ref (path pushes bypass libgit2; ssh pushes use an anonymous remote).
                let tracking = try gitCall { try repository.resolveReference(Self.trackingRef(remote)) }
                if tracking != head {
                    try gitCall {
                        try repository.updateReference(Self.trackingRef(remote), to: head, expected: tracking, message: "concord: pushed")
                    }
                }
                try recordSync(remote: remote, head: head)
                return SyncReport(remote: remote, received: received, sent: sent, changedFiles: changed, resolved: resolved,
                                  unresolved: unresolved, head: head.hex, attempts: attempt, warnings: warnings)
            }
            // Another device pushed first: fetch, merge and try again after a little jitter.
            usleep(useconds_t.random(in: 20_000...(60_000 * useconds_t(attempt))))
        }
        throw ConcordError.remoteKeptMoving(remote: remote, attempts: Self.maxSyncAttempts)
    }

    /// Ahead/behind against the last fetched state of `remote`, and when it last synced.
    public func status(remote: String = "origin") throws -> SyncStatus {
        let location = try remoteLocation(remote)
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let tracking = try gitCall { try repository.resolveReference(Self.trackingRef(remote)) }
        var ahead = 0
        var behind = 0
        if let head, let tracking {
            (ahead, behind) = try gitCall { try repository.aheadBehind(local: head, upstream: tracking) }
        } else if let head {
            ahead = try countCommits(head)
        }
        return SyncStatus(remote: remote, url: location.transportURL, ahead: ahead, behind: behind,
                          lastSync: SyncState.load(repository.gitDirectory, remote: remote).lastSync)
    }

    /// True when `remote` has commits this device has not fetched, or this device has commits
    /// the remote lacks. Reads only the remote's ref list (no objects).
    public func needsSync(remote: String = "origin", as identity: Identity) throws -> Bool {
        let location = try remoteLocation(remote)
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let tracking = try gitCall { try repository.resolveReference(Self.trackingRef(remote)) }
        if head != tracking { return true }
        if case .path(let path) = location {
            // Read from the ref files: no libgit2 on an untrusted directory, and far cheaper.
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConcordError.offline(remote: remote, reason: "\(path) does not exist", localCommits: try localCommits(remote))
            }
            do { return try Repository.localRemoteHead(at: path, ref: "refs/heads/main") != tracking } catch {
                throw try transportError(error, remote: remote, location: location)
            }
        }
        let heads: [String: ObjectID]
        do {
            heads = try repository.remoteHeads(remote: remote, options: transportOptions(for: identity, remote: remote, location: location))
        } catch {
            throw try transportError(error, remote: remote, location: location)
        }
        return heads["refs/heads/main"] != tracking
    }

    // MARK: Remotes

    public func remotes() throws -> [(name: String, url: String)] {
        try gitCall { try repository.remotes() }
    }

    public func addRemote(_ name: String, url: String) throws {
        guard RecordID.isValid(name) else { throw ConcordError.invalidInput("invalid remote name \"\(name)\": use letters, digits, . _ -") }
        guard try gitCall({ try repository.remoteURL(name) }) == nil else { throw ConcordError.remoteExists(name) }
        let location = try RemoteLocation(url: url)
        try gitCall { try repository.addRemote(name, url: location.transportURL) }
    }

    public func removeRemote(_ name: String) throws {
        guard try gitCall({ try repository.remoteURL(name) }) != nil else { throw ConcordError.unknownRemote(name) }
        try gitCall { try repository.removeRemote(name) }
    }

    /// Connects to ssh remote `name`, and records the host key it presents as trusted in
    /// `$CONCORD_HOME/known_hosts`. Returns the fingerprint.
    public func trustRemote(_ name: String, identity: Identity) throws -> String {
        let location = try remoteLocation(name)
        guard let hostName = location.knownHostsName else {
            throw ConcordError.invalidInput("\(name) is a path remote: there is no host key to trust")
        }
        var seen: HostKey?
        let options = TransportOptions(sshPrivateKey: identity.privateKeyPath.path, trustHostKey: { key in
            seen = key
            return true
        }, stallTimeout: environment.networkTimeout, knownHostLines: KnownHosts(home: environment.home).lines(for: hostName))
        do { _ = try repository.remoteHeads(remote: name, options: options) } catch {
            if seen == nil { throw try transportError(error, remote: name, location: location) }
        }
        guard let key = seen else { throw ConcordError.io("\(name) presented no host key") }
        try KnownHosts(home: environment.home).trust(host: hostName, key: key)
        return key.fingerprint
    }

    // MARK: Internals

    func remoteLocation(_ remote: String) throws -> RemoteLocation {
        guard let url = try gitCall({ try repository.remoteURL(remote) }) else { throw ConcordError.unknownRemote(remote) }
        return try RemoteLocation(url: url)
    }

    func transportOptions(for identity: Identity, remote: String, location: RemoteLocation) -> TransportOptions {
        let knownHosts = KnownHosts(home: environment.home)
        let hostName = location.knownHostsName ?? ""
        return TransportOptions(sshPrivateKey: identity.privateKeyPath.path, trustHostKey: { key in
            knownHosts.verdict(host: hostName, key: key) == true
        }, stallTimeout: environment.networkTimeout,
           knownHostLines: location.knownHostsName == nil ? [] : knownHosts.lines(for: hostName))
    }

    /// Where a fetch puts the remote's main, inside the quarantine (see `fetchVerified`).
    static let incomingRef = "refs/concord/incoming"

    /// Fetches `remote`'s main into a quarantine (`Quarantine`), checks every commit this device
    /// does not have yet (`IncomingCheck`), and only then admits the objects and moves the
    /// remote-tracking ref. Returns the remote's tip, or nil when it has no main. A commit that
    /// fails the check is refused (`ConcordError.invalidCommit`): no object enters the profile
    /// and no ref moves. `first`, when given, looks at the fetched tip before the check (a clone
    /// reads the profile's format version there, so another format is reported as such).
    func fetchVerified(remote: String, location: RemoteLocation, options: TransportOptions, cloning: Bool = false,
                       first: ((ObjectID, Repository) throws -> Void)? = nil) throws -> ObjectID? {
        let tracking = try gitCall { try repository.resolveReference(Self.trackingRef(remote)) }
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let known = [head, tracking].compactMap { $0 }
        PerformanceTrace.start()
        let quarantine = try gitCall { try Quarantine(for: repository, tips: known) }
        try fetch(remote: remote, location: location, options: options, into: quarantine.repository, cloning: cloning)
        PerformanceTrace.step("fetched into the quarantine")
        guard let tip = try gitCall({ try quarantine.repository.resolveReference(Self.incomingRef) }) else { return nil }
        try first?(tip, quarantine.repository)
        try IncomingCheck(repository: quarantine.repository, profileID: info.id.isEmpty ? nil : info.id).verify(tip: tip, known: known)
        PerformanceTrace.step("new commits checked")
        try gitCall { try quarantine.admit() }
        PerformanceTrace.step("objects admitted")
        if tracking != tip {
            try gitCall { try repository.updateReference(Self.trackingRef(remote), to: tip, expected: tracking, message: "concord: fetched") }
        }
        return tip
    }

    private func fetch(remote: String, location: RemoteLocation, options: TransportOptions, into target: Repository, cloning: Bool) throws {
        if case .path(let path) = location, !FileManager.default.fileExists(atPath: path) {
            throw ConcordError.offline(remote: remote, reason: "\(path) does not exist", localCommits: cloning ? nil : try localCommits(remote))
        }
        do {
            if case .path(let path) = location {
                // Like a local `git fetch`, minus the pack building: copy just the new objects.
                try target.fetchFromLocalRepository(at: path, ref: "refs/heads/main", into: Self.incomingRef, durable: false,
                                                    intoEmpty: cloning)
            } else {
                try target.fetch(url: location.transportURL, refspecs: ["+refs/heads/main:\(Self.incomingRef)"], options: options)
            }
        } catch {
            throw try transportError(error, remote: remote, location: location, cloning: cloning)
        }
    }

    /// Pushes `head`; false when the remote moved since `expected` (the caller retries).
    private func push(_ head: ObjectID, expected: ObjectID?, remote: String, location: RemoteLocation,
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
                outcome = try repository.push(remote: remote, refspec: "refs/heads/main:refs/heads/main", options: options)
            } catch let error as GitError where error.code == .nonFastForward {
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

    private func isMissingRepository(_ error: GitError, _ location: RemoteLocation) -> Bool {
        if case .path = location { return error.code == .notFound || error.message.contains("could not find repository") }
        return false
    }

    /// Local commits the remote has not received, as far as the last fetch knows.
    func localCommits(_ remote: String) throws -> Int {
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return 0 }
        guard let tracking = try gitCall({ try repository.resolveReference(Self.trackingRef(remote)) }) else {
            return try countCommits(head)
        }
        return try gitCall { try repository.aheadBehind(local: head, upstream: tracking).ahead }
    }

    private func countCommits(_ head: ObjectID) throws -> Int {
        var count = 0
        try gitCall { try repository.walkHistory(from: head) { _ in count += 1; return true } }
        return count
    }

    private func recordSync(remote: String, head: ObjectID) throws {
        try SyncState(lastSync: HLClock.formatInstant(ConcordEnvironment.systemClock()), lastRemoteHead: head.hex)
            .save(repository.gitDirectory, remote: remote)
    }
}
