import ConcordModel
import Foundation

extension Records {
    /// The live records of `query.kind` that `query` selects, in its order (`IndexQuery`'s
    /// semantics), read by a full scan of the kind's files. Throws `unknownKind` for a kind the
    /// profile lacks and `invalidInput` for a log kind (logs are read with `logEntries`).
    public func scan(_ query: IndexQuery) throws -> [Record] {
        let kind = try profile.kind(named: query.kind)
        guard kind.policy != .append else { throw ConcordError.invalidInput(.badQuery, "\(kind.name) is a log kind: read its entries with logEntries, not a query") }
        var live: [String: Record] = [:]
        var rows: [(id: String, data: [String: JSONValue])] = []
        for path in profile.workingTree.recordFiles(of: kind) {
            guard let record = try profile.workingTree.readRecord(path), let data = record.data else { continue }
            live[record.id.rawValue] = record
            rows.append((record.id.rawValue, data))
        }
        return query.evaluate(rows).compactMap { live[$0.id] }
    }
}
