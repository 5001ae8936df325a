import ConcordModel
import Foundation
import GRDB

/// The record index's SQLite file, `.git/concord/index.sqlite`: this device's derived data, never
/// committed, rebuilt from the tree whenever it cannot be trusted. docs/index.md documents the
/// schema apps may read through `StoreReader.sql`.
///
/// Schema history (`schemaVersion` in `meta`; a file of another version is emptied and rebuilt):
/// - 1: `meta(key, value)` (`schemaVersion`, `commit`: the commit the rows reflect, `kinds`: the
///   blob of `.concord/kinds.json` in that commit's tree), `records(kind, id, data, file)` (live
///   records), `files(kind, id, size, state)` (every record file not in `records`: `deleted` or `unreadable`: what
///   `concord ls` compares the working tree with), `indexed_fields(kind, field)` and one expression index per indexed field.
/// - 2: two partial indexes that say at once whether a kind must be answered by the full scan:
///   `records_with_nul` (records whose data holds an escaped U+0000, which `json_extract` cuts) and
///   `files_unreadable` (record files that do not decode).
/// - 3: `records.has_nul` (1 when a string or key of the data holds U+0000), and `records_with_nul`
///   on it: such rows alone are evaluated in Swift, the rest of their kind still answers from SQL
///   (version 2 sent the whole kind to the full scan, for good, from one such record).
///
/// Two processes (an app and the CLI) may open it at once: WAL, a busy timeout, and every update
/// in one `BEGIN IMMEDIATE` transaction with the stamp, so a reader sees the rows of one commit and
/// a killed update leaves the previous commit's rows and stamp.
enum RecordIndexSchema {
    static let version = 3
    static let fileName = "index.sqlite"

    /// The tables of the current version.
    static let create = [
        "CREATE TABLE meta(key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) WITHOUT ROWID",
        "CREATE TABLE records(kind TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, file BLOB NOT NULL, "
            + "has_nul INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(kind, id)) WITHOUT ROWID",
        "CREATE TABLE files(kind TEXT NOT NULL, id TEXT NOT NULL, size INTEGER NOT NULL, state TEXT NOT NULL, PRIMARY KEY(kind, id)) WITHOUT ROWID",
        "CREATE TABLE indexed_fields(kind TEXT NOT NULL, field TEXT NOT NULL, PRIMARY KEY(kind, field)) WITHOUT ROWID",
        "CREATE INDEX records_with_nul ON records(kind) WHERE has_nul",
        "CREATE INDEX files_unreadable ON files(kind) WHERE state = 'unreadable'",
    ]

    /// Whether an index's schema is exactly what Concord makes, given its `sqlite_master` rows
    /// (type, name, sql) and its `indexed_fields` rows: the tables and indexes of `create`, the
    /// expression index of each indexed field, SQLite's automatic indexes (no SQL) and the
    /// statistics table `ANALYZE` makes, exactly as SQLite makes it. Only then does the read-only
    /// SQL entry trust the schema (SQLite 3.40 refuses `json_extract` in an untrusted schema's
    /// indexes); anything else in it (a trigger or view planted in the file) keeps it untrusted.
    static func isOwn(master: [(type: String, name: String, sql: String?)], indexedFields: [(kind: String, field: String)]) -> Bool {
        func normalized(_ sql: String) -> String { sql.replacingOccurrences(of: "IF NOT EXISTS ", with: "") }
        var expected = Set(create.map(normalized))
        for (kind, field) in indexedFields {
            if let sql = indexSQL(kind: kind, field: field) { expected.insert(normalized(sql)) }
        }
        return master.allSatisfy { entry in
            if entry.type == "index", entry.name.hasPrefix("sqlite_autoindex_"), entry.sql == nil { return true }
            if entry.type == "table", entry.name == "sqlite_stat1", entry.sql == "CREATE TABLE sqlite_stat1(tbl,idx,stat)" { return true }
            return entry.sql.map { expected.contains(normalized($0)) } ?? false
        }
    }

    /// Whether the schema that `rows` (a statement's rows, each as its first `columns` texts;
    /// nil when it fails) reads is Concord's own. The schema is read before `indexed_fields` is:
    /// only when all but the field indexes is exactly Concord's (no view or trigger named like a
    /// table of ours) is that table read, so nothing planted in the file runs while SQLite still
    /// trusts the schema.
    static func isOwn(reading rows: (_ sql: String, _ columns: Int32) -> [[String?]]?) -> Bool {
        guard let read = rows("SELECT type, name, sql FROM sqlite_master", 3) else { return false }
        let master = read.map { (type: $0[0] ?? "", name: $0[1] ?? "", sql: $0[2]) }
        let beyondFieldIndexes = master.filter { !($0.type == "index" && $0.name.hasPrefix("records:")) }
        guard isOwn(master: beyondFieldIndexes, indexedFields: []),
              let fields = rows("SELECT kind, field FROM indexed_fields", 2) else { return false }
        return isOwn(master: master, indexedFields: fields.map { ($0[0] ?? "", $0[1] ?? "") })
    }

    /// The expression index on `field` of `kind`'s records, named `records:<kind>:<field>`; nil
    /// for a field SQLite's JSON paths cannot name (`IndexQuerySQL.hasPath`).
    static func indexSQL(kind: String, field: String) -> String? {
        guard IndexQuerySQL.hasPath(field) else { return nil }
        let name = "\"" + "records:\(kind):\(field)".replacingOccurrences(of: "\"", with: "\"\"") + "\""
        return "CREATE INDEX IF NOT EXISTS \(name) ON records(\(IndexQuerySQL.valueSQL(field))) WHERE kind = \(IndexQuerySQL.literal(kind))"
    }
}

/// This profile's open connection to its record index: opened on first use, kept by the
/// `Profile` (one per profile object, used on its queue only), opened again when the file was
/// deleted or replaced meanwhile, deleted and made anew when it is not a database.
final class RecordIndexConnection {
    private var queue: DatabaseQueue?
    private var inode: (device: UInt64, inode: UInt64)?
    /// The kinds table of the last `kinds` blob read, by blob id.
    var kinds: (blob: String, table: KindsTable)?

    /// The connection to the file at `path`, made ready (schema of this version).
    func database(at path: String) throws -> DatabaseQueue {
        if let queue, let inode, Self.inode(of: path).map({ $0 == inode }) == true { return queue }
        close()
        do {
            return try open(path)
        } catch let error as DatabaseError where error.resultCode == .SQLITE_NOTADB || error.resultCode == .SQLITE_CORRUPT {
            close()
            Self.removeFiles(path)
            return try open(path)
        }
    }

    /// Forgets the connection (the next use opens the file again).
    func close() {
        try? queue?.close()
        (queue, inode, kinds) = (nil, nil, nil)
    }

    /// Closes the connection and deletes the file and its WAL files (a corrupt index).
    func discard(_ path: String) {
        close()
        Self.removeFiles(path)
    }

    private func open(_ path: String) throws -> DatabaseQueue {
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(30)
        configuration.label = "concord.index"
        // ANALYZE samples at most this many rows per index: the planner needs proportions, not exact counts.
        // A 16 MiB page cache (SQLite's default is 2 MiB): a rebuild's 100,000 rows stay in memory until written.
        // `synchronous = NORMAL`: in WAL mode a commit is not synced to disk; a power cut may lose the
        // last updates, never the file's consistency, and the stamp goes back with them (derived data).
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA analysis_limit = 1000; PRAGMA cache_size = -16384; PRAGMA synchronous = NORMAL")
        }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try Self.prepareSchema(queue)
        (self.queue, inode) = (queue, Self.inode(of: path))
        return queue
    }

    /// Makes the file's schema this version's: creates it in an empty file, and empties and
    /// recreates it in a file of another version.
    private static func prepareSchema(_ queue: DatabaseQueue) throws {
        if try queue.read({ try currentVersion($0) }) == RecordIndexSchema.version { return }
        try queue.inTransaction(.immediate) { db in
            guard try currentVersion(db) != RecordIndexSchema.version else { return .commit }
            let objects = try Row.fetchAll(db, sql: "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")
            for object in objects {
                let (type, name): (String, String) = (object["type"], object["name"])
                try db.execute(sql: "DROP \(type == "view" ? "VIEW" : "TABLE") IF EXISTS \"\(name.replacingOccurrences(of: "\"", with: "\"\""))\"")
            }
            for statement in RecordIndexSchema.create { try db.execute(sql: statement) }
            try db.execute(sql: "INSERT INTO meta(key, value) VALUES ('schemaVersion', ?)", arguments: [String(RecordIndexSchema.version)])
            return .commit
        }
    }

    /// The file's `schemaVersion`, nil when it has none.
    private static func currentVersion(_ db: Database) throws -> Int? {
        guard try db.tableExists("meta") else { return nil }
        return try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'schemaVersion'").flatMap { Int($0) }
    }

    private static func inode(of path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    private static func removeFiles(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
    }
}
