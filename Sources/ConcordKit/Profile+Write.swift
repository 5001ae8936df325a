import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// The outcome of one write: the commit made (nil when nothing changed) and what changed.
public struct WriteResult<Value> {
    public let value: Value
    public let commit: String?
    public let changes: [RecordChange]
}

extension Profile {
    /// How many times a write is rebuilt when another writer moved the branch first.
    static let maxWriteAttempts = 20

    /// Runs `body` in a transaction and commits everything it wrote as ONE signed commit by
    /// `identity`. Nothing is committed (and nothing changes on disk) if `body` throws or writes
    /// nothing. The branch moves by compare-and-swap; if it moved meanwhile (a plain git commit,
    /// another process), the transaction is rebuilt on the new tip.
    @discardableResult
    public func write<Value>(
        as identity: Identity, action: ChangeAction? = nil, _ body: (Transaction) throws -> Value
    ) throws -> WriteResult<Value> {
        let lock = try lock()
        defer { withExtendedLifetime(lock) {} }
        var attempt = 0
        while true {
            attempt += 1
            let head = try gitCall { try repository.resolveReference("HEAD") }
            let baseTree = try head.map { id in try gitCall { try repository.commit(id).tree } }
            let transaction = Transaction(profile: self, identity: identity, baseTree: baseTree)
            let value = try body(transaction)
            PerformanceTrace.step("changes staged")
            guard !transaction.isEmpty, let stamp = transaction.lastStamp else {
                return WriteResult(value: value, commit: nil, changes: [])
            }
            let message = Self.message(for: transaction.changes, action: action, identity: identity, stamp: stamp)
            do {
                let commit = try CommitWriter(profile: self, identity: identity)
                    .commit(files: transaction.files, message: message, expectedHead: head)
                try saveClock(stamp)
                return WriteResult(value: value, commit: commit.hex, changes: transaction.changes)
            } catch let error as GitError where (error.code == .modified || error.code == .exists || error.code == .locked)
                        && attempt < Self.maxWriteAttempts {
                usleep(useconds_t.random(in: 1_000...20_000))
                continue
            } catch let error as GitError {
                throw ConcordError.git(error)
            }
        }
    }

    /// Refuses `identity` unless it is an active member whose role may write `kind`.
    func authorize(_ identity: Identity, toWrite kind: RecordKind) throws {
        let member = try activeMember(identity)
        guard member.role >= kind.writers else {
            throw ConcordError.notAllowed(member: identity.member, role: member.role, action: "writing \(kind.name)",
                                          needs: kind.writers, profile: info.name)
        }
    }

    /// The active member `identity` is, checked by name AND device key: a key the member never
    /// registered (someone else's identity under the same name, or a device not yet added) is refused.
    func activeMember(_ identity: Identity) throws -> Member {
        guard let member = try members().first(where: { $0.name == identity.member }), member.status == .active else {
            throw ConcordError.notAMember(member: identity.member, profile: info.name)
        }
        guard member.keys.contains(where: { $0.publicKey == identity.key.publicKey }) else {
            throw ConcordError.keyNotRegistered(member: identity.member, fingerprint: identity.key.publicKey.fingerprint, profile: info.name)
        }
        return member
    }

    static func message(for changes: [RecordChange], action: ChangeAction?, identity: Identity, stamp: HLC) -> CommitMessage {
        let actions = Set(changes.map(\.action))
        let chosen = action ?? (actions.count == 1 ? actions.first! : .updated)
        let summary: String
        if changes.count == 1, let only = changes.first {
            summary = "\(only.reference): \(only.action.rawValue)"
        } else {
            summary = "\(changes.count) records: \(chosen.rawValue)"
        }
        // Each record once; past `maxListedRecords` only their number is written.
        var seen = Set<RecordKey>(minimumCapacity: changes.count), references = [String]()
        for change in changes where seen.insert(RecordKey(kind: change.kind, id: change.id)).inserted {
            if references.count <= CommitMessage.maxListedRecords { references.append(change.reference) }
        }
        return CommitMessage(summary: summary, actor: identity, action: chosen, stamp: stamp,
                             references: seen.count > CommitMessage.maxListedRecords ? [] : references, recordCount: seen.count)
    }
}

/// A record named by kind and id, as a set member.
private struct RecordKey: Hashable {
    let kind: String
    let id: String
}
