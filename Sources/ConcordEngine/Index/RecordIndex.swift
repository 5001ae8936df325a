import ConcordGit
import ConcordModel
import Foundation
import GRDB

/// This device's index of the profile's live records (`.git/concord/index.sqlite`, schema in
/// `RecordIndexSchema` and docs/index.md): what `StoreReader.query`, `count` and `sql` and
/// `concord query` and `ls` read instead of every file.
///
/// Stamped with the commit its rows reflect, in the same SQLite transaction as the rows. Brought
/// up to date lazily before every read (`catchUp`): when HEAD differs from the stamp, the files
/// that differ between the two commits' trees are applied (the cost follows the records changed:
/// a write, a merge, a plain `git pull` alike); when the stamp is missing or not a commit, or the
/// kinds changed, or the file was deleted, corrupt or of another schema version, it is rebuilt
/// from HEAD's tree. A record file that does not decode is left out (a full scan names it).
package struct RecordIndex {
    let profile: Profile
    var caches: EngineCaches { profile.caches }
    let repository: Repository
    let connection: RecordIndexConnection

    /// The index file's path.
    public var path: String { repository.gitDirectory + "concord/" + RecordIndexSchema.fileName }

    /// Runs one SQL statement that reads the index (docs/index.md), with `arguments` bound to its
    /// `?`s; each row as column name → value (integers and reals as numbers, text as strings,
    /// blobs as base64 strings). Safe for SQL an app takes from its user: it runs on a connection
    /// of its own, opened read-only, and SQLite's authorizer lets through only one SELECT that
    /// reads the tables docs/index.md documents and calls the functions it lists
    /// (`ReadOnlySQLRule`); anything else is refused before it runs (`sqlRefused`, saying what),
    /// and a statement still running after `timeLimit` is stopped (`sqlStopped`). Text that is not
    /// SQL, or names what does not exist, is `invalidInput`.
    public func sql(_ sql: String, arguments: [JSONValue] = [], timeLimit: Duration = RecordIndex.sqlTimeLimit) throws -> [[String: JSONValue]] {
        try withDatabase { queue in _ = try catchUp(queue) }
        return try ReadOnlySQLConnection(path: path, trustingOwnSchema: true).rows(sql, arguments: arguments, timeLimit: timeLimit)
    }

    /// How long `sql` lets a statement run by default before it stops it: 2 s.
    public static let sqlTimeLimit: Duration = ReadOnlySQLRule.timeLimit

    /// Keeps `fields` of `kind` ready for queries: an expression index per field (this device's
    /// derived data), remembered across rebuilds of the rows. Cheap when they exist.
    public func addIndexes(kind: String, fields: [String]) throws {
        try withDatabase { queue in
            let known = try queue.read { try String.fetchAll($0, sql: "SELECT field FROM indexed_fields WHERE kind = ?", arguments: [kind]) }
            let missing = fields.filter { !known.contains($0) }
            guard !missing.isEmpty else { return }
            try queue.inTransaction(.immediate) { db in
                for field in missing {
                    try db.execute(sql: "INSERT OR IGNORE INTO indexed_fields(kind, field) VALUES (?, ?)", arguments: [kind, field])
                    if let create = RecordIndexSchema.indexSQL(kind: kind, field: field) { try db.execute(sql: create) }
                }
                try db.execute(sql: "ANALYZE")
                return .commit
            }
        }
    }

    /// Brings the index to HEAD (see the type's comment); returns the commit it now reflects.
    @discardableResult
    public func catchUp() throws -> String? {
        try withDatabase { queue in try catchUp(queue) }
    }

    // MARK: Reading

    func checkKind(_ name: String) throws {
        let kind = try profile.kind(named: name)
        guard kind.policy != .append else { throw ConcordError.invalidInput(.badQuery, "\(kind.name) is a log kind: read its entries with logEntries, not a query") }
    }

    /// `body` on the index brought to HEAD, in one read transaction.
    func reading<T>(_ body: (Database) throws -> T) throws -> T {
        try withDatabase { queue in
            _ = try catchUp(queue)
            return try queue.read(body)
        }
    }

    /// `body` with the connection; a file found corrupt is deleted, and `body` runs once more on a new one.
    private func withDatabase<T>(_ body: (DatabaseQueue) throws -> T) throws -> T {
        do {
            return try body(try connection.database(at: path))
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            connection.discard(path)
            return try body(try connection.database(at: path))
        } catch let error as DatabaseError {
            throw ConcordError.io(.open, path: path, "the record index \(path): \(error.message ?? error.description)")
        }
    }

    // MARK: Catching up

    private func catchUp(_ queue: DatabaseQueue) throws -> String? {
        var head = try gitCall { try repository.resolveReference("HEAD") }
        if try queue.read({ try Self.meta($0, "commit") }) == (head?.hex ?? "") { return head?.hex }
        PerformanceTrace.step("index: HEAD differs from the stamp")
        try queue.inTransaction(.immediate) { db in
            PerformanceTrace.step("index: write lock taken")
            // HEAD read again under the index's write lock: a process that read it before another
            // moved it must not take the stamp back to its older view.
            head = try gitCall { try repository.resolveReference("HEAD") }
            let stamp = try Self.meta(db, "commit")
            guard stamp != (head?.hex ?? "") else { return .commit }
            guard let head else {
                try db.execute(sql: "DELETE FROM records")
                try db.execute(sql: "DELETE FROM files")
                try Self.setMeta(db, "commit", "")
                return .commit
            }
            let headTree = try gitCall { try repository.commit(head).tree }
            if let kinds = try stampedKinds(db), let old = stamp.flatMap(ObjectID.init(hex:)),
               let oldTree = try? repository.commit(old).tree {
                let changes = try caches.treeChanges.files(from: oldTree, to: headTree)
                    ?? gitCall { try repository.changedFiles(from: oldTree, to: headTree) }
                PerformanceTrace.step("index: trees compared")
                if let kindsChange = changes.first(where: { $0.path.string == KindsTable.path }) {
                    try rebuild(db, headTree: headTree, kindsBlob: kindsChange.blob)
                } else {
                    try apply(db, changes: changes, kinds: kinds)
                    // The planner's row counts (`sqlite_stat1`), measured again when a table grew or shrank tenfold.
                    try db.execute(sql: "PRAGMA optimize")
                    PerformanceTrace.step("index: optimized")
                }
            } else {
                try rebuild(db, headTree: headTree, kindsBlob: nil)
            }
            try Self.setMeta(db, "commit", head.hex)
            return .commit
        }
        PerformanceTrace.step("index: committed")
        return head?.hex
    }

    /// The kinds table of the stamped commit (from the `kinds` blob in meta); nil when unknown.
    private func stampedKinds(_ db: Database) throws -> KindsTable? {
        guard let hex = try Self.meta(db, "kinds"), let blob = ObjectID(hex: hex) else { return nil }
        if let cached = connection.kinds, cached.blob == hex { return cached.table }
        guard let bytes = try? repository.blob(blob), let table = try? KindsTable.decode(bytes) else { return nil }
        connection.kinds = (hex, table)
        return table
    }

    /// Empties the rows and indexes every record file of `headTree`.
    private func rebuild(_ db: Database, headTree: ObjectID, kindsBlob: ObjectID?) throws {
        let files = try gitCall { try repository.changedFiles(from: nil, to: headTree) }
        let blob = kindsBlob ?? files.first { $0.path.string == KindsTable.path }?.blob
        let kinds = try blob.flatMap { try? KindsTable.decode(try repository.blob($0)) } ?? KindsTable([])
        try db.execute(sql: "DELETE FROM records")
        try db.execute(sql: "DELETE FROM files")
        PerformanceTrace.step("index: rebuild: \(files.count) files listed, rows emptied")
        try Self.setMeta(db, "kinds", blob?.hex ?? "")
        try apply(db, changes: files, kinds: kinds, fresh: true)
        // Without row counts the planner takes `kind = ?` on the primary key for the narrowest
        // search and reads a whole kind; with them, an expression index serves `IN` and ranges.
        try db.execute(sql: "ANALYZE")
        PerformanceTrace.step("index: analyzed")
    }

    /// Applies changed files: each record file of a record kind is deleted from the rows, then
    /// inserted again: into `records` when its new version is a live record that decodes, into
    /// `files` when it is a tombstone or does not decode.
    private func apply(_ db: Database, changes: [(path: TreePath, before: ObjectID?, blob: ObjectID?)],
                       kinds: KindsTable, fresh: Bool = false) throws {
        var entries = [(kind: String, id: String, blob: ObjectID?)]()
        for change in changes {
            guard let (kind, fileName) = kinds.kind(forPath: change.path.string), kind.policy != .append,
                  fileName.hasSuffix(".json") else { continue }
            entries.append((kind.name, String(fileName.dropLast(5)), change.blob))
        }
        PerformanceTrace.step("index: \(entries.count) record files changed")
        let rows = try fileRows(entries.map(\.id), entries.map(\.blob))
        PerformanceTrace.step("index: blobs read and decoded")
        let delete = try db.cachedStatement(sql: "DELETE FROM records WHERE kind = ? AND id = ?")
        let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO records(kind, id, data, file, has_nul) VALUES (?, ?, ?, ?, ?)")
        let deleteFile = try db.cachedStatement(sql: "DELETE FROM files WHERE kind = ? AND id = ?")
        let insertFile = try db.cachedStatement(sql: "INSERT OR REPLACE INTO files(kind, id, size, state) VALUES (?, ?, ?, ?)")
        var pairs = Array(zip(entries, rows))
        // Rows inserted in key order fill the B-tree's pages in turn (files come in bucket order).
        if fresh { pairs.sort { keyPrecedes(($0.0.kind, $0.0.id), ($1.0.kind, $1.0.id)) } }
        for (entry, row) in pairs {
            if !fresh {
                try delete.execute(arguments: [entry.kind, entry.id])
                try deleteFile.execute(arguments: [entry.kind, entry.id])
            }
            switch row {
            case (_, .live(let data, let file, let hasNul))?: try insert.execute(arguments: [entry.kind, entry.id, data, file, hasNul])
            case (let size, let other)?: try insertFile.execute(arguments: [entry.kind, entry.id, size, other.state])
            case nil: break
            }
        }
        PerformanceTrace.step("index: rows written")
    }

    /// Each blob read and made a row (nil for none); in shares on every core when there are
    /// many (a rebuild), each share with its own repository (libgit2's rule: one per thread).
    private func fileRows(_ ids: [String], _ blobs: [ObjectID?]) throws -> [(size: Int, row: FileRow)?] {
        guard blobs.count >= 4_096 else {
            return try gitCall { try zip(ids, blobs).map { id, blob in try blob.map { let bytes = try repository.blob($0); return (bytes.count, Self.row(id: id, bytes: bytes)) } } }
        }
        let gitDirectory = repository.gitDirectory
        let parts = Parallel.shares(of: blobs.count, minimumPerShare: 2_048) { range in
            Result { () throws -> [(size: Int, row: FileRow)?] in
                let repository = try Repository.open(gitDirectory)
                return try range.map { index in
                    try blobs[index].map { let bytes = try repository.blob($0); return (bytes.count, Self.row(id: ids[index], bytes: bytes)) }
                }
            }
        }
        return try gitCall { try parts.flatMap { try $0.get() } }
    }

    /// What a record file holds, as the index keeps it.
    enum FileRow: Sendable {
        /// A live record: its data in compact canonical JSON, the file's bytes, and whether a
        /// string or key of the data holds U+0000 (`records.has_nul`).
        case live(data: String, file: Data, hasNul: Bool)
        case tombstone
        /// A file that does not decode, or whose id is not its name.
        case unreadable

        /// `files.state`.
        var state: String {
            switch self {
            case .live: "live"
            case .tombstone: "deleted"
            case .unreadable: "unreadable"
            }
        }
    }

    /// A record file's row.
    private static func row(id: String, bytes: [UInt8]) -> FileRow {
        guard let record = try? ConcordModel.Record.decode(bytes), record.id.rawValue == id else { return .unreadable }
        guard let data = record.data else { return .tombstone }
        return .live(data: String(decoding: JSONValue.object(data).canonicalLine(), as: UTF8.self), file: Data(bytes),
                     hasNul: data.contains { holdsNul($0.key) || holdsNul($0.value) })
    }

    /// Whether a string of `value` (a key included) holds U+0000.
    private static func holdsNul(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): holdsNul(text)
        case .array(let values): values.contains(where: holdsNul)
        case .object(let members): members.contains { holdsNul($0.key) || holdsNul($0.value) }
        case .null, .bool, .number: false
        }
    }

    private static func holdsNul(_ text: String) -> Bool { text.utf8.contains(0) }

    private static func meta(_ db: Database, _ key: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
    }

    private static func setMeta(_ db: Database, _ key: String, _ value: String) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", arguments: [key, value])
    }
}

/// Whether key `a` sorts before `b` in SQLite's BINARY order (UTF-8 bytes).
private func keyPrecedes(_ a: (kind: String, id: String), _ b: (kind: String, id: String)) -> Bool {
    if a.kind != b.kind { return a.kind.utf8.lexicographicallyPrecedes(b.kind.utf8) }
    return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
}
