import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

extension Sync {
    /// Creates a bare repository at `path` configured to serve Concord profiles: it checks every
    /// object it receives and refuses non-fast-forward updates and deletions.
    public static func createBareRemote(at path: URL) throws {
        if FileManager.default.fileExists(atPath: path.path),
           !((try? FileManager.default.contentsOfDirectory(atPath: path.path))?.isEmpty ?? true) {
            throw ConcordError.profileExists(path.path)
        }
        let repository = try gitCall { try Repository.create(at: path.path, bare: true) }
        try gitCall {
            try repository.setConfig("receive.fsckObjects", true)
            try repository.setConfig("receive.denyNonFastForwards", true)
            try repository.setConfig("receive.denyDeletes", true)
            try repository.setConfig("core.sharedRepository", "group")
        }
    }

    /// New-device set-up: fetches the profile at `url` into `directory` (which must be new or
    /// empty), checks its metadata and format version, checks it out, writes the git config plain
    /// git needs, and registers it in CONCORD_HOME. With `trustHost` (a `SHA256:…` fingerprint),
    /// an ssh server presenting exactly that key is trusted and recorded. On failure nothing is left behind.
    public static func clone(
        url: String, into directory: URL, identity: Identity, environment: ConcordEnvironment, trustHost: String? = nil
    ) throws -> Profile {
        let root = directory.standardizedFileURL
        var existing = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
        if existing == [".git"], Self.isLeftByAKilledClone(root) {
            // A clone killed before it finished (its process is gone): what it left is removed, as it would have.
            try? FileManager.default.removeItem(at: root.appendingPathComponent(".git"))
            existing = []
        }
        if !existing.isEmpty { throw ConcordError.profileExists(directory.path) }
        let location = try RemoteLocation(url: url)
        let createdDirectory = !FileManager.default.fileExists(atPath: root.path)
        do {
            return try cloneInto(root, location: location, identity: identity, environment: environment, trustHost: trustHost)
        } catch {
            removeUnfinishedClone(at: root, madeDirectory: createdDirectory)
            throw error
        }
    }

    /// Removes what a clone that did not finish wrote at `root`: the directory if the clone made
    /// it, else what it put into it (it was empty). For a clone that failed, or was interrupted.
    public static func removeUnfinishedClone(at root: URL, madeDirectory: Bool) {
        if madeDirectory {
            try? FileManager.default.removeItem(at: root)
        } else {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] {
                try? FileManager.default.removeItem(at: root.appendingPathComponent(name))
            }
        }
    }

    /// `.git/concord/cloning` holds the pid of the clone writing the repository, until it is done.
    private static func cloningMark(_ root: URL) -> URL { root.appendingPathComponent(".git/concord/cloning") }

    /// True when `root/.git` was left by a clone whose process is gone (killed, or the machine stopped).
    static func isLeftByAKilledClone(_ root: URL) -> Bool {
        guard let text = try? String(contentsOf: cloningMark(root), encoding: .utf8),
              let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines).dropFirst("pid ".count)) else { return false }
        return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH
    }

    private static func cloneInto(
        _ root: URL, location: RemoteLocation, identity: Identity, environment: ConcordEnvironment, trustHost: String?
    ) throws -> Profile {
        PerformanceTrace.start()
        let repository = try gitCall { try Repository.create(at: root.path, bare: false) }
        let mark = cloningMark(root)
        try FileManager.default.createDirectory(at: mark.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("pid \(getpid())\n".utf8).write(to: mark)
        try gitCall { try repository.addRemote("origin", url: location.transportURL) }
        let knownHosts = KnownHosts(home: environment.home)
        let hostName = location.knownHostsName ?? ""
        var trusted: HostKey?
        var options = TransportOptions(sshPrivateKey: identity.privateKeyPath.path, trustHostKey: { key in
            if knownHosts.verdict(host: hostName, key: key) == true { return true }
            if let trustHost, knownHosts.verdict(host: hostName, key: key) == nil, key.fingerprint == trustHost {
                trusted = key
                return true
            }
            return false
        }, stallTimeout: environment.networkTimeout,
           knownHostLines: location.knownHostsName == nil ? [] : knownHosts.lines(for: hostName))
        offerKeys(&options, identity: identity, invitationKey: environment.invitationLoginKey)
        // A profile object only to reuse the transport error mapping; replaced below.
        let provisional = Profile(root: root, repository: repository, environment: environment,
                                  info: ProfileInfo(id: "", name: "", formatVersion: concordFormatVersion, createdAt: ""), kinds: .empty)
        // Every commit is checked (IncomingCheck) before the tracking ref moves or anything is
        // checked out; the tip's profile.json is read first, so another format is named as such.
        var info: ProfileInfo?
        let changedPaths = ChangedPaths()
        let pipeline = SyncPipeline(sync: Sync(profile: provisional, repository: repository), remote: "origin", location: location, options: options)
        let admitted = try pipeline.fetchVerified(cloning: true, changedPaths: changedPaths) { tip, fetched in
            let entry = try gitCall { try fetched.entry(at: ProfilePaths.profile, inTree: try fetched.commit(tip).tree) }
            guard let entry, entry.kind == .blob,
                  try gitCall({ try fetched.objectHeader(entry.id).size }) <= ProfilePathRules.maxDocumentBytes else {
                throw ConcordError.invalidInput(.wrongRemote, "\(location.transportURL) is a git repository but not a Concord profile (no \(ProfilePaths.profile))")
            }
            let found = try readDocument { try ProfileInfo.decode(try gitCall { try fetched.blob(entry.id) }) }
            guard found.formatVersion <= concordFormatVersion else {
                throw ConcordError.newerFormat(found: found.formatVersion, supported: concordFormatVersion)
            }
            guard found.formatVersion >= oldestReadableFormatVersion else {
                throw ConcordError.olderFormat(found: found.formatVersion, oldest: oldestReadableFormatVersion)
            }
            info = found
        }
        guard let tip = admitted?.tip, let info else { throw ConcordError.emptyRemote(location.transportURL) }
        if let trusted { try knownHosts.trust(host: hostName, key: trusted) }
        let kinds = try gitCall { try repository.blob(KindsTable.path, atCommit: tip) }.flatMap { try? KindsTable.decode($0) } ?? .empty
        let profile = Profile(root: root, repository: repository, environment: environment, info: info, kinds: kinds)
        // Revocation is final: no copy is made of a profile that revokes this device's member (a
        // server shows a revoked key main as it was at the revocation); the caller removes what was fetched.
        if let mine = try profile.members.member(identity.member, at: tip), mine.status == .revoked {
            throw ConcordError.accessRemoved(member: identity.member, by: mine.revokedBy ?? "an admin", profile: info.name)
        }
        try profile.locked {
            profile.clonedRecords = try gitCall { try profile.sync.mergeLocked(tip, as: identity, fetched: admitted?.objects ?? .none) }.liveRecordsWritten
            PerformanceTrace.step("checked out")
            // Every commit was just compared with its parent: the audit index costs a walk of the commits alone.
            AuditIndex(repository: repository).update(known: changedPaths, create: true)
            PerformanceTrace.step("audit index written")
            repository.releaseCaches()
        }
        try profile.configureGit(members: try profile.members.list())
        try SyncState(lastSync: HLClock.formatInstant(ConcordEnvironment.systemClock()), lastRemoteHead: tip.hex)
            .save(repository.gitDirectory, remote: "origin")
        try ProfileRegistry(home: environment.home).register(profile)
        try? FileManager.default.removeItem(at: mark)
        PerformanceTrace.step("configured and registered")
        return profile
    }
}
