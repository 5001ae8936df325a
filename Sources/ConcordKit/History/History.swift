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
    case unsigned
}

/// One commit of a profile's history, as the audit view shows it.
public struct HistoryEntry: Sendable {
    public let commit: String
    public let summary: String
    public let member: String
    public let device: String
    public let action: String
    /// Commit time, ISO-8601 UTC.
    public let time: String
    /// The HLC of the change, when the commit carries one.
    public let clock: String?
    public let records: [String]
    public let recordCount: Int
    public let parents: [String]
    public let signature: SignatureStatus
}

/// A profile's history, the audit trail: its commits newest first, who made each on which device,
/// whether its signature checks out, and the conflicts merges resolved.
public struct History {
    let profile: Profile
    private var repository: Repository { profile.repository }

    /// The commits newest first; with `record` ("kind/id"), only those that changed it.
    public func entries(record reference: String? = nil, limit: Int? = nil) throws -> [HistoryEntry] {
        let filter = try reference.map { text -> (kind: RecordKind, id: RecordID) in
            let (kind, id) = try profile.parseReference(text)
            return (kind, id)
        }
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return [] }
        let keys = try memberKeys()
        var entries = [HistoryEntry]()
        try gitCall {
            try repository.walkHistory(from: head) { commit in
                if let filter, try !touches(commit, filter.kind, filter.id) { return true }
                entries.append(try entry(for: commit, keys: keys))
                return limit.map { entries.count < $0 } ?? true
            }
        }
        return entries
    }

    private func touches(_ commit: Commit, _ kind: RecordKind, _ id: RecordID) throws -> Bool {
        let trailers = CommitTrailers(message: commit.message)
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

    private func entry(for commit: Commit, keys: [String: Set<SSHPublicKey>]) throws -> HistoryEntry {
        let trailers = CommitTrailers(message: commit.message)
        let member = trailers.actor ?? commit.author.name
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
            signature: try signatureStatus(commit, member: member, keys: keys)
        )
    }

    /// Verifies the SSHSIG of `commit` and checks the key belongs to `member`.
    func signatureStatus(_ commit: Commit, member: String, keys: [String: Set<SSHPublicKey>]) throws -> SignatureStatus {
        guard let signed = try repository.signature(ofCommit: commit.id) else { return .unsigned }
        guard let signer = try? SSHSignature.verify(signed.signature, message: signed.signedData) else { return .bad }
        return keys[member]?.contains(signer) == true ? .good : .unknownKey
    }

    /// Every member's public keys, by member name.
    func memberKeys() throws -> [String: Set<SSHPublicKey>] {
        Dictionary(try profile.members.list().map { ($0.name, Set($0.keys.map(\.publicKey))) }, uniquingKeysWith: { $0.union($1) })
    }
}

extension History {
    /// Conflicts resolved by merges, newest first, from the `Concord-Resolved` trailers.
    public func resolvedConflicts() throws -> [(commit: String, conflict: ResolvedConflict)] {
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return [] }
        var out = [(commit: String, conflict: ResolvedConflict)]()
        try gitCall {
            try repository.walkHistory(from: head) { commit in
                for value in CommitTrailers(message: commit.message).resolved {
                    if let conflict = ResolvedConflict(trailerValue: value) { out.append((commit.id.hex, conflict)) }
                }
                return true
            }
        }
        return out
    }
}

extension History {
    /// The bytes of record `reference` (kind/id) as of commit `hex`, or nil if it did not exist then.
    public func recordVersion(_ reference: String, atCommit hex: String) throws -> [UInt8]? {
        let (kind, id) = try profile.parseReference(reference)
        guard let commit = ObjectID(hex: hex) else { throw ConcordError.invalidInput("\(hex) is not a commit id") }
        return try gitCall { try profile.blob(Transaction.recordPath(kind, id), atCommit: commit) }
    }
}

extension Profile {
    /// This profile's history.
    public var history: History { History(profile: self) }
}
