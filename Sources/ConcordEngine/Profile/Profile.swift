import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// One profile: a git repository of JSON records (a child's board, a screenplay, a recipe source...).
///
/// Reads come from the working tree (the files a person sees); every write is one signed commit
/// made under the profile lock and moved onto the branch by compare-and-swap.
package final class Profile {
    /// The profile's working directory.
    public let root: URL
    let repository: Repository
    package let environment: ConcordEnvironment
    /// What this profile's engine remembers between steps (`EngineCaches`), shared with the other
    /// profiles of the same engine (a store's queues and watcher, its bound sync engine).
    package let caches: EngineCaches
    /// The profile's id, name and format version (`.concord/profile.json`).
    public let info: ProfileInfo
    /// The profile's kinds, as the working tree's `.concord/kinds.json` has them: read at open, and
    /// again whenever that file changed (`KindsFile`: this engine's `Records.addKinds`, a sync, another process).
    public internal(set) var kinds: KindsTable {
        get { kindsFile.current }
        set { kindsFile.replace(with: newValue) }
    }
    private let kindsFile: KindsFile
    /// For a profile made by `clone`: how many live records it brought.
    public internal(set) var clonedRecords = 0
    /// The record index's open connection (`RecordIndex`), opened on first use.
    let indexConnection = RecordIndexConnection()

    init(root: URL, repository: Repository, environment: ConcordEnvironment, info: ProfileInfo, kinds: KindsTable,
         caches: EngineCaches = EngineCaches()) {
        self.root = root
        self.repository = repository
        self.environment = environment
        self.caches = caches
        repository.indexLockTimeout = environment.gitLockTimeout
        repository.failIndexAfterBranchMove = environment.failIndexAfterBranchMove
        self.info = info
        kindsFile = KindsFile(path: root.appendingPathComponent(KindsTable.path).path, table: kinds)
    }

    /// The working directory path with a trailing slash.
    var rootPath: String { root.path.hasSuffix("/") ? root.path : root.path + "/" }

    /// Opens the profile in `directory`, refusing anything that is not one or is of a newer format.
    public static func open(at directory: URL, environment: ConcordEnvironment) throws -> Profile {
        try open(at: directory, environment: environment, caches: EngineCaches())
    }

    /// `open(at:environment:)` for an engine that already has its caches (`caches`).
    package static func open(at directory: URL, environment: ConcordEnvironment, caches: EngineCaches) throws -> Profile {
        let root = directory.standardizedFileURL
        let profileFile = root.appendingPathComponent(ProfilePaths.profile)
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent(".git").path),
              let profileBytes = try? Data(contentsOf: profileFile) else {
            throw ConcordError.notAProfile(directory.path)
        }
        let info = try readDocument { try ProfileInfo.decode(Array(profileBytes)) }
        guard info.formatVersion <= concordFormatVersion else {
            throw ConcordError.newerFormat(found: info.formatVersion, supported: concordFormatVersion)
        }
        guard info.formatVersion >= oldestReadableFormatVersion else {
            throw ConcordError.olderFormat(found: info.formatVersion, oldest: oldestReadableFormatVersion)
        }
        let kindsBytes = (try? Data(contentsOf: root.appendingPathComponent(ProfilePaths.kinds))).map(Array.init) ?? []
        let kinds: KindsTable
        do { kinds = try KindsTable.decode(kindsBytes) } catch {
            throw ConcordError.corruptRecord(path: ProfilePaths.kinds, reason: error.localizedDescription)
        }
        let repository = try gitCall { try Repository.open(root.path) }
        return Profile(root: root, repository: repository, environment: environment, info: info, kinds: kinds, caches: caches)
    }

    /// Creates a new profile in `directory` (which must not hold a repository yet) whose first
    /// member, an admin, is `identity`; writes the first signed commit.
    public static func create(
        at directory: URL, name: String, template: Template, identity: Identity, environment: ConcordEnvironment
    ) throws -> Profile {
        let root = directory.standardizedFileURL
        if FileManager.default.fileExists(atPath: root.appendingPathComponent(".git").path) {
            throw ConcordError.profileExists(directory.path)
        }
        guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 200 else {
            throw ConcordError.invalidInput(.badName, "profile name must be 1–200 characters")
        }
        let repository = try gitCall { try Repository.create(at: root.path, bare: false) }
        let clock = HLClock(wallClock: environment.wallClock)
        let stamp = clock.next(after: nil)
        let info = ProfileInfo(id: UUID().uuidString.lowercased(), name: name, formatVersion: concordFormatVersion,
                               createdAt: HLClock.formatInstant(stamp.wallMillis))
        let creator = Member(name: identity.member, role: .admin, status: .active,
                             keys: [KeyProof.key(device: identity.device, identity.key.publicKey, member: identity.member,
                                                 profileID: info.id, signedBy: identity)],
                             addedBy: identity.member, addedAt: info.createdAt)
        let kinds = template.kinds
        let files: [(String, [UInt8])] = [
            (ProfilePaths.profile, info.json.canonicalBytes()),
            (ProfilePaths.kinds, kinds.canonicalBytes()),
            (ProfilePaths.member(identity.member), creator.json.canonicalBytes()),
            (ProfilePaths.gitattributes, Array(kinds.gitattributes().utf8)),
        ]
        let profile = Profile(root: root, repository: repository, environment: environment, info: info, kinds: kinds)
        try profile.configureGit(members: [creator])
        let writer = CommitWriter(profile: profile, repository: repository, identity: identity)
        let first = try writer.commit(
            files: files.map { FileChange(path: $0.0, bytes: $0.1) },
            message: CommitMessage(summary: "profile \"\(name)\": created", actor: identity, action: .created,
                                   stamp: stamp, references: []),
            expectedHead: nil)
        try profile.clock.save(stamp, seen: first)
        try? AuditIndex(repository: repository).catchUp(to: first)
        try ProfileRegistry(home: environment.home).register(profile)
        return profile
    }

    /// Writes what plain git needs into `.git/config` and the allowed-signers file generated
    /// from the members, so `git verify-commit` and `git log --show-signature` work.
    func configureGit(members: [Member]) throws {
        let signersPath = repository.gitDirectory + "concord/allowed_signers"
        // A revoked member's keys stay, valid only before the revocation, so plain git still shows their
        // earlier commits as good (git compares the date the signer chose: `concord verify` is the authority).
        let entries = members.flatMap { member -> [(principal: String, key: SSHPublicKey, validBefore: String?)] in
            var validBefore: String?
            if member.status == .revoked {
                guard let revokedAt = member.revokedAt, let stamp = Self.gitTimestamp(revokedAt) else { return [] }
                validBefore = stamp
            }
            return member.keys.map { (principal: member.name, key: $0.publicKey, validBefore: validBefore) }
        }
        try FileManager.default.createDirectory(atPath: repository.gitDirectory + "concord", withIntermediateDirectories: true)
        try Data(AllowedSigners.render(entries: entries).utf8).write(to: URL(fileURLWithPath: signersPath), options: .atomic)
        try gitCall {
            try repository.setConfig("gpg.format", "ssh")
            try repository.setConfig("gpg.ssh.allowedSignersFile", signersPath)
            if let executable = environment.driverExecutable {
                try repository.setConfig("merge.concord.name", MergeDriverConfig.name)
                try repository.setConfig("merge.concord.driver", MergeDriverConfig.command(executable: executable))
            }
        }
    }

    /// `2026-01-01T10:00:00.000Z` as an allowed-signers time, `20260101100000Z`; nil if it is not such an instant.
    static func gitTimestamp(_ instant: String) -> String? {
        guard HLClock.parseInstant(instant) != nil else { return nil }
        let digits = instant.prefix(19).filter(\.isNumber)
        return digits.count == 14 ? digits + "Z" : nil
    }

    /// Deletes this device's copy of the profile (its directory, repository included) and its
    /// entry in the profile registry: what a revoked member's device does. Commits that never
    /// reached `remote` are not lost silently: the records and log entries they changed (and only
    /// those: `Records.exportUnsent`) are first saved as a dump under `$CONCORD_HOME/saved/`, whose
    /// path is returned (nil when there was nothing unsent).
    /// `removedBecause` keeps the profile listed in the registry as removed, with that reason
    /// (a revocation); nil forgets it (the member left). `savingUnsent` false saves nothing (the
    /// Admin deleting the profile everywhere).
    @discardableResult
    public func removeLocalCopy(unsentTo remote: String, removedBecause reason: String? = nil, savingUnsent: Bool = true) throws -> URL? {
        var saved: URL?
        let unsent = try savingUnsent && sync.localCommits(remote) > 0 ? records.exportUnsent(to: remote) : nil
        if let unsent, !unsent.records.isEmpty || !unsent.logs.isEmpty {
            let directory = environment.home.appendingPathComponent("saved")
            let stamp = HLClock.formatInstant(environment.wallClock()).replacingOccurrences(of: ":", with: "")
            let file = directory.appendingPathComponent("\(info.id)-\(stamp).json")
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try Data(unsent.canonicalBytes()).write(to: file, options: .atomic)
            } catch let error as ConcordError {
                throw error
            } catch {
                throw ConcordError.io(.write, path: file.path, "could not save the unsent edits to \(file.path) (\(error.localizedDescription)); the copy was kept")
            }
            saved = file
        }
        try locked {
            let registry = ProfileRegistry(home: environment.home)
            try reason.map { try registry.markRemoved(path: root.path, reason: $0) } ?? registry.unregister(path: root.path)
            do { try FileManager.default.removeItem(at: root) } catch {
                throw ConcordError.io(.delete, path: root.path, "could not delete \(root.path): \(error.localizedDescription)")
            }
        }
        return saved
    }

    /// The kind named `name`, or an error listing the kinds this profile has.
    public func kind(named name: String) throws -> RecordKind {
        guard let kind = kinds.kind(named: name) else {
            throw ConcordError.unknownKind(name, known: kinds.kinds.map(\.name))
        }
        return kind
    }

    /// The kind named `name` (`unknownKind` otherwise), or every kind when `name` is nil.
    public func kinds(selecting name: String?) throws -> [RecordKind] {
        try name.map { [try kind(named: $0)] } ?? kinds.kinds
    }
}

/// `text` as a path git's rules allow (the only kind the git layer writes), or an error naming it.
func treePath(_ text: String) throws -> TreePath {
    do { return try TreePath(text) } catch { throw ConcordError.invalidInput(.badName, error.description) }
}

/// Runs a git-layer call, turning its `GitError` into a `ConcordError` with libgit2's message.
package func gitCall<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as GitError {
        throw ConcordError.git(error)
    } catch let held as IndexLockHeld {
        throw ConcordError.gitIndexLocked(held.lockPath)
    }
}

extension Repository {
    /// `holdingIndexLock` (git's `index.lock` held from before the branch moves until the index
    /// follows it, see `IndexLock`), a lock another process held too long reported as
    /// `ConcordError.gitIndexLocked`; the body's own `GitError`s pass unchanged, so a branch that
    /// moved meanwhile is still retried.
    func holdingGitIndexLock<T>(_ body: () throws -> T) throws -> T {
        do {
            return try holdingIndexLock(body)
        } catch let held as IndexLockHeld {
            throw ConcordError.gitIndexLocked(held.lockPath)
        }
    }
}
