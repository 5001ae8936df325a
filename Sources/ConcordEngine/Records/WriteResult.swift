import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// The outcome of one write: the commit made (nil when nothing changed) and what changed.
public struct WriteResult<Value> {
    /// What the transaction's closure returned.
    public let value: Value
    /// The commit made (hex), nil when nothing changed.
    public let commit: String?
    /// Every record and entry the commit changed.
    public let changes: [RecordChange]
}

/// A write's result crosses tasks when its value does (`ConcordStore.write` in `async` code).
extension WriteResult: Sendable where Value: Sendable {}

extension Records {
    /// How many times a write is rebuilt when another writer moved the branch first.
    static let maxWriteAttempts = 20

    /// The message of a write's commit: one line naming the record, or how many, and its trailers.
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
