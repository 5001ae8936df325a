import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// What one `sync` did.
public struct SyncReport: Sendable {
    /// The remote synced with.
    public let remote: String
    /// How many commits arrived from it.
    public let received: Int
    /// How many commits were sent to it.
    public let sent: Int
    /// The files the sync changed in the working tree.
    public let changedFiles: [String]
    /// Conflicts the merge resolved by the kinds' policies.
    public let resolved: [ResolvedConflict]
    /// Files the merge could not resolve.
    public let unresolved: [UnresolvedFile]
    /// main's tip afterwards (hex).
    public let head: String
    /// How many rounds it took (a remote that moved meanwhile is synced again).
    public let attempts: Int
    /// What the user should know although the sync succeeded (the remote's main was deleted or
    /// rewound, and this device restored it).
    public var warnings: [String] = []
    /// Changes by members who lost their rights concurrently that the merge left out.
    public var leftOut: [LeftOutChange] = []
    /// Members two Admins added at once with different keys: admitted by neither.
    public var contested: [String] = []
    /// Membership decisions the merges this sync made left out: made on a copy older than the
    /// remote main's, they do not count (`FallenDecision.line(for:)` says so).
    public var fallen: [FallenDecision] = []
    /// The writes the merges this sync brought in (received, or made here) left out, each field with
    /// its own author (`LostEdit`), recomputed from the merges' parents and trees.
    public var lost: [LostEdit] = []
    /// Those of them that were this identity's member's own writes: what the loser is told, even
    /// when their sync only fast-forwarded to a merge someone else made.
    public var yours: [LostEdit] = []
}

/// Where this profile stands against one remote.
public struct SyncStatus: Sendable {
    /// The remote's name.
    public let remote: String
    /// Its URL.
    public let url: String
    /// Commits here that the remote does not have yet.
    public let ahead: Int
    /// Commits the remote had at the last fetch that are not here yet.
    public let behind: Int
    /// When this device last synced with it (ISO-8601 UTC), nil if never.
    public let lastSync: String?
}

/// What every step of a sync needs of the profile's remotes: where one is, how to reach it, what a
/// failure to reach it means, how far this device is ahead of it.
extension Sync {
    /// How many times a sync fetches, merges and pushes again when the remote moved meanwhile.
    static let maxSyncAttempts = 10
    /// A path remote's branch lock older than this was left by a killed push.
    static let staleRemoteLockAge: TimeInterval = 60

    /// How long ago the file at `path` was last modified; nil when it cannot be read.
    static func age(ofFile path: String) -> TimeInterval? {
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else { return nil }
        return Date().timeIntervalSince(modified)
    }

    /// The remote-tracking ref of `remote`'s main branch.
    static func trackingRef(_ remote: String) -> String { "refs/remotes/\(remote)/main" }

    // MARK: Internals

    /// Where `remote` is, from its URL in `.git/config`.
    package func remoteLocation(_ remote: String) throws -> RemoteLocation {
        guard let url = try gitCall({ try repository.remoteURL(remote) }) else { throw ConcordError.unknownRemote(remote) }
        return try RemoteLocation(url: url)
    }

    /// How to reach `remote` as `identity`: its keys, the known hosts, the stall timeout, the cancellation.
    package func transportOptions(for identity: Identity, remote: String, location: RemoteLocation) -> TransportOptions {
        let knownHosts = KnownHosts(home: environment.home)
        let hostName = location.knownHostsName ?? ""
        var options = TransportOptions(sshPrivateKey: identity.privateKeyPath.path, trustHostKey: { key in
            knownHosts.verdict(host: hostName, key: key) == true
        }, stallTimeout: environment.networkTimeout,
           knownHostLines: location.knownHostsName == nil ? [] : knownHosts.lines(for: hostName))
        Self.offerKeys(&options, identity: identity, invitationKey: environment.invitationLoginKey)
        // The environment's (a sync engine's stop), else the thread's (a store's cancelled task): kept by the init.
        if let cancellation = environment.transferCancellation { options.cancellation = cancellation }
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

    /// This device's main and what it last fetched of `remote`'s (nil where there is none yet):
    /// two ref reads, cheap enough for every tick of a watch.
    package func heads(remote: String) throws -> (head: ObjectID?, tracking: ObjectID?) {
        try gitCall { (try repository.resolveReference("HEAD"), try repository.resolveReference(Self.trackingRef(remote))) }
    }

    /// When this device last synced with `remote`, nil before the first sync.
    package func lastSync(remote: String) -> String? {
        SyncState.load(repository.gitDirectory, remote: remote).lastSync
    }

    /// Local commits the remote has not received, as far as the last fetch knows.
    package func localCommits(_ remote: String) throws -> Int {
        let (head, tracking) = try heads(remote: remote)
        guard let head else { return 0 }
        guard let tracking else { return try countCommits(head) }
        return try gitCall { try repository.aheadBehind(local: head, upstream: tracking).ahead }
    }

    /// How many commits `head` has in its history.
    func countCommits(_ head: ObjectID) throws -> Int {
        var count = 0
        try gitCall { try repository.walkHistory(from: head) { _ in count += 1; return true } }
        return count
    }

    /// Records that `head` is what `remote` had at this sync (`concord status`).
    func recordSync(remote: String, head: ObjectID) throws {
        try SyncState(lastSync: HLClock.formatInstant(ConcordEnvironment.systemClock()), lastRemoteHead: head.hex)
            .save(repository.gitDirectory, remote: remote)
    }
}
