import ConcordModel
import Foundation
import GRDB

/// How the index answers `query` and `count` for one kind (`RecordIndex.plan`).
enum IndexPlan: Equatable {
    /// From SQL, but for `rowsInSwift` rows whose data holds U+0000 (`records.has_nul`): SQLite
    /// 3.40's `json_extract` cuts a string there (`"admin\u{0}-not"` would equal `"admin"`), so
    /// those rows are decoded and evaluated by the reference semantics (`IndexQuery.matches`,
    /// `precedes`) and merged into SQL's answer in the query's order.
    case index(rowsInSwift: Int)
    /// By the full scan (`Records.scan`): a record file of the kind does not decode, and a query
    /// names it, as the scan does, rather than leave it out.
    case scan
}

extension RecordIndex {
    /// The live records of a kind that `query` selects, in its order (`IndexQuery`'s semantics,
    /// as `Records.scan` gives them). Throws `unknownKind` or `invalidInput` (a log kind) as `scan` does.
    public func query(_ query: IndexQuery) throws -> [ConcordModel.Record] {
        try checkKind(query.kind)
        let page = try reading { db -> [ConcordModel.Record]? in
            guard try !Self.needsScan(db, kind: query.kind) else { return nil }
            let withNul = try Self.recordsWithNul(db, kind: query.kind)
            guard !withNul.isEmpty else { return try Self.records(db, IndexQuerySQL.select(query), kind: query.kind) }
            // SQL's first offset + limit rows without those, merged with them, hold the page.
            var widened = query
            (widened.offset, widened.limit) = (0, Self.limit(of: query).flatMap { limit in
                let (sum, overflow) = limit.addingReportingOverflow(max(query.offset, 0))
                return overflow ? nil : sum
            })
            let rest = try Self.records(db, IndexQuerySQL.select(widened, withoutNul: true), kind: query.kind)
            let merged = Self.merge(rest, Self.selected(withNul, by: query), in: query)
            let tail = merged.dropFirst(max(query.offset, 0))
            return Array(Self.limit(of: query).map { tail.prefix($0) } ?? tail)
        }
        return try page ?? profile.records.scan(query)
    }

    /// How many live records of a kind `query` selects (its limit and offset apply).
    public func count(_ query: IndexQuery) throws -> Int {
        try checkKind(query.kind)
        let counted = try reading { db -> Int? in
            guard try !Self.needsScan(db, kind: query.kind) else { return nil }
            let withNul = try Self.recordsWithNul(db, kind: query.kind)
            guard !withNul.isEmpty else {
                let statement = IndexQuerySQL.count(query)
                return try Int.fetchOne(db, sql: statement.sql, arguments: statement.arguments) ?? 0
            }
            var all = query
            (all.offset, all.limit) = (0, nil)
            let statement = IndexQuerySQL.count(all, withoutNul: true)
            let total = try (Int.fetchOne(db, sql: statement.sql, arguments: statement.arguments) ?? 0)
                + withNul.count { query.matches($0.data ?? [:]) }
            let left = max(total - max(query.offset, 0), 0)
            return Self.limit(of: query).map { min($0, left) } ?? left
        }
        return try counted ?? profile.records.scan(query).count
    }

    /// The plan `query` and `count` follow for `kind` now.
    func plan(kind: String) throws -> IndexPlan {
        try reading { db in
            try Self.needsScan(db, kind: kind) ? .scan : .index(rowsInSwift: Self.recordsWithNul(db, kind: kind).count)
        }
    }

    /// Whether `kind` must be answered by the full scan: one of its record files does not decode
    /// (one lookup in the partial index `files_unreadable`).
    static func needsScan(_ db: Database, kind: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM files WHERE kind = ? AND state = 'unreadable')", arguments: [kind]) ?? false
    }

    /// The records of `kind` whose data holds U+0000 (one lookup in the partial index
    /// `records_with_nul`; usually none).
    private static func recordsWithNul(_ db: Database, kind: String) throws -> [ConcordModel.Record] {
        try records(db, IndexQuerySQL(sql: "SELECT file, id FROM records WHERE kind = ? AND has_nul", arguments: [kind]), kind: kind)
    }

    /// Those of `records` that `query`'s conditions select, in its order.
    private static func selected(_ records: [ConcordModel.Record], by query: IndexQuery) -> [ConcordModel.Record] {
        records.filter { query.matches($0.data ?? [:]) }.sorted { precedes($0, $1, in: query) }
    }

    /// The records of `statement`'s rows (`file`, then `id`).
    private static func records(_ db: Database, _ statement: IndexQuerySQL, kind: String) throws -> [ConcordModel.Record] {
        try Row.fetchAll(db, sql: statement.sql, arguments: statement.arguments).map { row in
            let bytes: Data = row[0]
            do { return try ConcordModel.Record.decode(bytes) } catch {
                throw ConcordError.corruptRecord(path: "index.sqlite: \(kind)/\(row[1] as String)", reason: error.localizedDescription)
            }
        }
    }

    /// Two lists in `query`'s order as one.
    private static func merge(_ a: [ConcordModel.Record], _ b: [ConcordModel.Record], in query: IndexQuery) -> [ConcordModel.Record] {
        var merged = [ConcordModel.Record]()
        merged.reserveCapacity(a.count + b.count)
        var (i, j) = (a.startIndex, b.startIndex)
        while i < a.endIndex, j < b.endIndex {
            if precedes(b[j], a[i], in: query) {
                merged.append(b[j])
                j += 1
            } else {
                merged.append(a[i])
                i += 1
            }
        }
        return merged + a[i...] + b[j...]
    }

    private static func precedes(_ a: ConcordModel.Record, _ b: ConcordModel.Record, in query: IndexQuery) -> Bool {
        query.precedes(a.data ?? [:], id: a.id.rawValue, b.data ?? [:], id: b.id.rawValue)
    }

    /// The query's limit as SQL reads it (a negative one is none).
    private static func limit(of query: IndexQuery) -> Int? {
        query.limit.flatMap { $0 < 0 ? nil : $0 }
    }
}
