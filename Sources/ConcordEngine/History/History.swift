import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// Whether a commit's signature checks out against the profile's members.
public enum SignatureStatus: String, Sendable, Codable {
    /// Signed by a key that belongs to the commit's author, who is a member.
    case good
    /// A valid signature by a key no member of the author's name holds.
    case unknownKey = "unknown-key"
    /// The signature does not match the commit's content.
    case bad
    /// The commit carries no signature.
    case unsigned
}

/// One commit of a profile's history, as the audit view shows it.
public struct HistoryEntry: Sendable {
    /// The commit's id (hex).
    public let commit: String
    /// The commit message's first line.
    public let summary: String
    /// The acting member (`Concord-Actor`).
    public let member: String
    /// The device that made the commit (`Concord-Device`).
    public let device: String
    /// What the commit did (`Concord-Action`: `added`, `updated`, `merged`, …), as its trailer says it.
    public let action: String
    /// `action`, typed; nil for a commit Concord did not make (a plain `git commit`) or an action
    /// this version does not know.
    public var changeAction: ChangeAction? { ChangeAction(rawValue: action) }
    /// Commit time, ISO-8601 UTC.
    public let time: String
    /// The HLC of the change, when the commit carries one.
    public let clock: String?
    /// The records it changed (`kind/id`), as its trailers list them (possibly fewer than `recordCount`).
    public let records: [String]
    /// How many records it changed.
    public let recordCount: Int
    /// Its parents' ids (hex): two for a merge.
    public let parents: [String]
    /// Whether its signature is good, and by a key of whom.
    public let signature: SignatureStatus
    /// The member whose key signed the commit, when a member's key did: the device's owner, who may
    /// differ from `member` when another member acted on that device (`concord switch`).
    public let signedBy: String?
    /// What changed in each listed record (lww and delete-wins kinds), against the first parent:
    /// filled in by `History.entries` for the entries it returns.
    public internal(set) var changes: [AuditChange] = []
    /// The commit's time in seconds since 1970.
    public let seconds: Int64
}

/// What one commit did to one record: its fields (the top-level keys of `data`) with their old
/// and new values; a record added shows only new values, a deleted one none.
public struct AuditChange: Sendable, Equatable {
    /// The record (`kind/id`).
    public let record: String
    /// `added`, `edited`, `deleted` (or `restored`: a tombstone brought back).
    public let action: String
    /// Its top-level fields that changed, with old and new values.
    public let fields: [FieldChange]
    /// For a log entry an import added: when, by whom and on which device it was first written.
    public var origin: WriteStamp? = nil
}

/// One field of a record before and after a commit (nil: absent).
public struct FieldChange: Sendable, Equatable {
    /// The field's name.
    public let field: String
    /// Its value before the commit (nil: absent).
    public let old: JSONValue?
    /// Its value after the commit (nil: absent).
    public let new: JSONValue?
}

/// Which commits `History.entries` returns: all of them by default.
public struct HistoryFilter: Sendable {
    /// Only commits that changed this record (`kind/id`).
    public var record: String?
    /// Only commits by this member (the acting member, `Concord-Actor`).
    public var member: String?
    /// Only commits made at or after / before this time (seconds since 1970).
    public var since: Int64?
    /// Only commits made before this time (seconds since 1970).
    public var until: Int64?
    /// At most this many entries, newest first.
    public var limit: Int?

    /// A filter; every criterion left nil lets every commit through.
    public init(record: String? = nil, member: String? = nil, since: Int64? = nil, until: Int64? = nil, limit: Int? = nil) {
        self.record = record
        self.member = member
        self.since = since
        self.until = until
        self.limit = limit
    }
}

/// A profile's history, the audit trail: its commits newest first, who made each on which device,
/// whether its signature checks out, and the conflicts merges resolved.
package struct History {
    package let profile: Profile
    package let repository: Repository
    package var caches: EngineCaches { profile.caches }

    /// The commits newest first; with `record` ("kind/id"), only those that changed it.
    public func entries(record reference: String? = nil, limit: Int? = nil) throws -> [HistoryEntry] {
        try entries(HistoryFilter(record: reference, limit: limit))
    }

    /// The commits `filter` lets through, newest first, each with what it changed in its records.
    public func entries(_ filter: HistoryFilter) throws -> [HistoryEntry] {
        try entries(filter, index: nil)
    }

    /// `entries(filter)`, reading a record's commits from `index` (the audit index as
    /// `auditIndex()` returned it) when given, so that a caller that also needs it reads it once.
    private func entries(_ filter: HistoryFilter, index preread: [UInt8]?) throws -> [HistoryEntry] {
        let record = try filter.record.map { text -> (kind: RecordKind, id: RecordID) in
            let (kind, id) = try profile.records.parseReference(text)
            return (kind, id)
        }
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return [] }
        let keys = MemberKeysAtCommit(repository: repository, caches: caches)
        var entries = [HistoryEntry]()
        let visit = { (commit: Commit) throws -> Bool in
            if let since = filter.since, commit.author.time < since { return true }
            if let until = filter.until, commit.author.time >= until { return true }
            // Each commit's trailers are read once, for the filters and the entry.
            let trailers = CommitTrailers(message: commit.message)
            if let record, try !touches(commit, trailers: trailers, record.kind, record.id) { return true }
            var entry = try entry(for: commit, trailers: trailers, keys: try keys.keys(for: commit))
            // Who did it is who signed it (or acted on the signer's device): never the author field alone.
            if let member = filter.member, entry.member != member { return true }
            // A merge names no records in its trailers: what it changed on its first parent's side is its own.
            entry.changes = try changes(of: commit, records: commit.parents.count > 1 ? try mergedRecords(commit) : entry.records)
            // An import's log entries, each with who first wrote it.
            if entry.action == ChangeAction.imported.rawValue { entry.changes += try importedEntries(of: commit, records: entry.records) }
            entries.append(entry)
            return filter.limit.map { entries.count < $0 } ?? true
        }
        try gitCall {
            guard let record else {
                // Newest first by the signers' clocks, not in the order of the history (docs/audit.md).
                for id in try repository.commitsByDate(from: head) where try !visit(repository.commit(id)) { break }
                return
            }
            // One record: only the commits the audit index says changed its file (a log kind: any of its day files).
            let index = try preread ?? AuditIndex(repository: repository).read(upTo: head)
            let hits = record.kind.policy == .append ? AuditIndex.commits(in: index, path: record.kind.directory + "/", prefix: true)
                : AuditIndex.commits(in: index, path: Transaction.recordPath(record.kind, record.id))
            for hit in hits where try !visit(repository.commit(hit.commit)) { break }
        }
        return entries
    }

    /// What `commit` changed in each of `references` that is a record of an lww or delete-wins
    /// kind, against its first parent (log entries are appended whole: nothing to compare).
    private func changes(of commit: Commit, records references: [String]) throws -> [AuditChange] {
        let parentTree = try commit.parents.first.map { try repository.commit($0).tree }
        return try references.compactMap { reference -> AuditChange? in
            guard let (kind, id) = try? profile.records.parseReference(reference), kind.policy != .append else { return nil }
            let path = Transaction.recordPath(kind, id)
            func record(in tree: ObjectID?) throws -> JSONValue? {
                guard let tree, let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob else { return nil }
                return try? JSONValue.parse(try repository.blob(entry.id))
            }
            let before = try record(in: parentTree), after = try record(in: commit.tree)
            let wasLive = before != nil && before?["deleted"]?.boolValue != true
            let isLive = after != nil && after?["deleted"]?.boolValue != true
            let action = isLive ? (wasLive ? "edited" : (before == nil ? "added" : "restored")) : "deleted"
            guard isLive else { return AuditChange(record: reference, action: action, fields: []) }
            let old = wasLive ? before?["data"]?.objectValue ?? [:] : [:], new = after?["data"]?.objectValue ?? [:]
            let fields = Set(old.keys).union(new.keys).sorted().compactMap { field -> FieldChange? in
                old[field] == new[field] ? nil : FieldChange(field: field, old: old[field], new: new[field])
            }
            return AuditChange(record: reference, action: action, fields: fields)
        }
    }

    /// The records (`kind/id`) merge `commit` changed against its first parent (at most 1,000).
    private func mergedRecords(_ commit: Commit) throws -> [String] {
        let parentTree = try repository.commit(commit.parents[0]).tree
        return try repository.changedFiles(from: parentTree, to: commit.tree).lazy.compactMap { file -> String? in
            guard case .success(.record(let kind, let id)) = ProfilePathRules.classify(Array(file.path.string.utf8), kinds: self.profile.kinds)
            else { return nil }
            return "\(kind.name)/\(id)"
        }.prefix(1_000).sorted()
    }

    private func touches(_ commit: Commit, trailers: CommitTrailers, _ kind: RecordKind, _ id: RecordID) throws -> Bool {
        if kind.policy == .append {
            if trailers.records.contains("\(kind.name)/\(id)") { return true }
            // Big commits list a count instead of each record: look for the entry in the day files they changed.
            guard trailers.recordCount != nil || !commit.parents.isEmpty && trailers.records.isEmpty else { return false }
            return try addsLogEntry(commit, kind, id)
        }
        let path = Transaction.recordPath(kind, id)
        let mine = try repository.entry(at: path, inTree: commit.tree)?.id
        guard let parent = commit.parents.first else { return mine != nil }
        let before = try repository.entry(at: path, inTree: repository.commit(parent).tree)?.id
        return mine != before
    }

    /// True when `commit` added entry `id` to one of `kind`'s day files (compared with its first parent).
    private func addsLogEntry(_ commit: Commit, _ kind: RecordKind, _ id: RecordID) throws -> Bool {
        let parentTree = try commit.parents.first.map { try repository.commit($0).tree }
        for file in try repository.changedFiles(from: parentTree, to: commit.tree)
        where file.path.string.hasPrefix(kind.directory + "/") && file.path.string.hasSuffix(".jsonl") {
            guard let blob = file.blob, let entries = try? LogEntry.parseLogFile(try repository.blob(blob)),
                  entries.contains(where: { $0.id == id }) else { continue }
            let before = try parentTree.flatMap { try repository.entry(at: file.path.string, inTree: $0) }
                .flatMap { try? LogEntry.parseLogFile(try repository.blob($0.id)) } ?? []
            if !before.contains(where: { $0.id == id }) { return true }
        }
        return false
    }

    private func entry(for commit: Commit, trailers: CommitTrailers, keys: [String: Set<SSHPublicKey>]) throws -> HistoryEntry {
        let claimed = trailers.actor ?? commit.author.name
        let (signature, signedBy) = try signatureStatus(commit, member: claimed, keys: keys)
        // The member shown is the signer, or the member its Concord-Actor trailer names acting on the
        // signer's device (the validity rule holds that to the switch rules). An author field or
        // trailer no member's signature backs is shown as a claim, never as who did it.
        let member: String
        if let signedBy {
            member = trailers.actor ?? signedBy
        } else {
            member = "unverified (claims \(claimed))"
        }
        return HistoryEntry(
            commit: commit.id.hex,
            summary: String(commit.message.prefix { $0 != "\n" }),
            member: member,
            device: trailers.device ?? "",
            action: trailers.action ?? "",
            time: HLClock.formatInstant(commit.author.time * 1000),
            clock: trailers.clock,
            records: trailers.records,
            recordCount: trailers.recordCount ?? trailers.records.count,
            parents: commit.parents.map(\.hex),
            signature: signature,
            signedBy: signedBy,
            seconds: commit.author.time
        )
    }

    /// Verifies the SSHSIG of `commit` and finds the member whose key it is: `member`'s own, or the
    /// owner's of the device `member` acted on (`concord switch`). Whether such a commit was allowed
    /// is the validity rule's to say (`concord verify`); this names who signed.
    func signatureStatus(_ commit: Commit, member: String, keys: [String: Set<SSHPublicKey>]) throws -> (SignatureStatus, String?) {
        guard let signed = try repository.signature(ofCommit: commit.id) else { return (.unsigned, nil) }
        guard let signer = try? SSHSignature.verify(signed.signature, message: signed.signedData) else { return (.bad, nil) }
        if keys[member]?.contains(signer) == true { return (.good, member) }
        guard let owner = keys.first(where: { $0.value.contains(signer) })?.key else { return (.unknownKey, nil) }
        return (.good, owner)
    }

}

/// The members' public keys a commit is read against, by member name: those of its parent's
/// membership and of its own tree (the rule's view, not today's): a member who has since left, their
/// keys removed, still signed their earlier commits, and an acceptance's key is in its own tree.
/// Cached by the members directories' tree ids, which most commits leave alone.
package final class MemberKeysAtCommit {
    private let repository: Repository
    private let caches: EngineCaches
    private var cache = [[ObjectID?]: [String: Set<SSHPublicKey>]]()

    init(repository: Repository, caches: EngineCaches) {
        (self.repository, self.caches) = (repository, caches)
    }

    package func keys(for commit: Commit) throws -> [String: Set<SSHPublicKey>] {
        let trees = [try commit.parents.first.map { try repository.commit($0).tree }, commit.tree].compactMap { $0 }
        let directories = try trees.map { try repository.entry(at: ProfilePaths.membersDirectory, inTree: $0)?.id }
        if let known = cache[directories] { return known }
        var keys = [String: Set<SSHPublicKey>]()
        for tree in trees {
            for member in try CommitAuthorizer.membership(in: repository, tree: tree, caches: caches).members.values {
                keys[member.name, default: []].formUnion(member.keys.map(\.publicKey))
            }
        }
        cache[directories] = keys
        return keys
    }
}

/// Which lost writes `History.lostEdits` lists.
public struct LostEditFilter: Sendable {
    /// Only this record (`kind/id`).
    public var record: String?
    /// Only writes this member made (`conflicts --mine`).
    public var member: String?
    /// Only merges dated at or after this (seconds since 1970).
    public var since: Int64?
    /// Only the merges among these commits (a sync's new commits), when given.
    public var merges: Set<String>?

    /// A filter; every criterion left nil lets every lost write through.
    public init(record: String? = nil, member: String? = nil, since: Int64? = nil, merges: Set<String>? = nil) {
        (self.record, self.member, self.since, self.merges) = (record, member, since, merges)
    }
}

extension History {
    /// The writes merges did not keep, newest merge first, each field with its own author and commit
    /// (`LostEdit`), recomputed from each merge's parents, base and tree: the audit index names the
    /// merges where both sides changed a record, and only those are read.
    public func lostEdits(_ filter: LostEditFilter = LostEditFilter()) throws -> [LostEdit] {
        guard let index = try auditIndex() else { return [] }
        return try lostEdits(filter, index: index)
    }

    private func lostEdits(_ filter: LostEditFilter, index: [UInt8]) throws -> [LostEdit] {
        let record = try filter.record.map { text -> String in
            let (kind, id) = try profile.records.parseReference(text)
            return "\(kind.name)/\(id)"
        }
        let hits = AuditIndex.commits(in: index, path: "=" + (record ?? ""), prefix: record == nil)
        var out = [LostEdit]()
        try gitCall {
            for hit in hits {
                if let since = filter.since, hit.time < since { continue }
                if let merges = filter.merges, !merges.contains(hit.commit.hex) { continue }
                out += try LostEdit.inMerge(repository.commit(hit.commit), repository: repository, caches: caches).filter { edit in
                    (record.map { edit.record == $0 } ?? true) && (filter.member.map { edit.loser.member == $0 } ?? true)
                }
            }
        }
        return out
    }
}

extension History {
    /// The audit index brought up to HEAD (`AuditIndex.read(upTo:)`); nil when there are no commits.
    private func auditIndex() throws -> [UInt8]? {
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return nil }
        return try gitCall { try AuditIndex(repository: repository).read(upTo: head) }
    }
}

/// One version of a record, as `concord history` shows it: the commit that wrote it, and the writes
/// of it that merges did not keep.
public struct RecordVersion: Sendable {
    /// The commit that wrote this version.
    public let entry: HistoryEntry
    /// The writes this version made that merges left out (a field each, or its delete): empty when
    /// every write of it was kept or overwritten by a later one that had seen it.
    public let lost: [LostEdit]
    /// The first merge that left a write of it out, with the write kept in its place.
    public var lostIn: (merge: String, winner: MergeSide)? { lost.first.map { ($0.merge, $0.winner) } }
}

extension History {
    /// Every version of record `reference` (kind/id), newest first, including versions that lost an
    /// lww or delete-wins merge, each with the writes of it that merges left out (`lostEdits`).
    public func versions(of reference: String) throws -> [RecordVersion] {
        // The audit index is read once, for the merges and the versions.
        guard let index = try auditIndex() else { return [] }
        var losses = [String: [LostEdit]]()
        for edit in try lostEdits(LostEditFilter(record: reference), index: index) {
            if let commit = edit.loserCommit { losses[commit, default: []].append(edit) }
        }
        return try entries(HistoryFilter(record: reference), index: index).map { entry in
            RecordVersion(entry: entry, lost: entry.parents.count < 2 ? losses[entry.commit] ?? [] : [])
        }
    }

    /// The bytes of record `reference` (kind/id) as of commit `hex`, or nil if it did not exist then.
    public func recordVersion(_ reference: String, atCommit hex: String) throws -> [UInt8]? {
        let (kind, id) = try profile.records.parseReference(reference)
        guard let commit = ObjectID(hex: hex) else { throw ConcordError.invalidInput(.badName, "\(hex) is not a commit id") }
        return try gitCall { try repository.blob(Transaction.recordPath(kind, id), atCommit: commit) }
    }
}

extension History {
    /// The first commit of this profile's history (the trust anchor an invitation pins).
    func rootCommit() throws -> ObjectID {
        try gitCall {
            guard let head = try repository.resolveReference("HEAD") else {
                throw GitError(function: "rootCommit", code: .notFound, message: "the profile has no commits")
            }
            return try repository.rootCommit(of: head)
        }
    }
}
