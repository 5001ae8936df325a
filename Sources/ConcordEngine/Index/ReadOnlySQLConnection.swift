// This file touches the SQLite C library (CSQLite): the read-only SQL entry's own connection, which
// GRDB does not manage (GRDB installs its own authorizer on its connections and offers no other).
internal import CSQLite
import ConcordModel
import Foundation

/// One connection to the record index's file for one statement of `RecordIndex.sql`, the entry
/// an app may hand a user's SQL to. Opened read-only (`SQLITE_OPEN_READONLY`), with the FTS3
/// tokenizer and extension loading turned off, SQLite's own authorizer allowing only what
/// `ReadOnlySQLRule` allows, each value at most `ReadOnlySQLRule.maximumValueBytes`, and a progress
/// handler that stops the statement at its time limit. Owns its handle and closes it in `deinit`.
final class ReadOnlySQLConnection {
    private let handle: OpaquePointer
    /// The statement being prepared: whether it began as a SELECT, and the first refusal.
    private var authorization = ReadOnlySQLRule.Statement()
    /// When the running statement is stopped; nil while none runs.
    private var deadline: ContinuousClock.Instant?
    /// Whether the progress handler stopped the statement.
    private var stopped = false

    /// Opens the index file at `path` read-only, the rule and the limits in place. With
    /// `trustingOwnSchema`, its schema is trusted when this very connection reads it to be
    /// Concord's own (`RecordIndexSchema.isOwn`); when it is not, the file is opened again with
    /// an untrusted schema (SQLite then refuses whatever unsafe the schema holds).
    ///
    /// The check and the statement see one snapshot of the file: a read transaction begins before
    /// the check reads the schema and lasts until the connection closes, so a schema entry
    /// another process adds after the check (a view calling what only a trusted schema may) is
    /// not there for the statement.
    init(path: String, trustingOwnSchema: Bool = false) throws {
        var handle = try Self.open(path, trustingSchema: trustingOwnSchema)
        if trustingOwnSchema, sqlite3_exec(handle, "BEGIN", nil, nil, nil) != SQLITE_OK {
            defer { sqlite3_close_v2(handle) }
            throw ConcordError.io(.open, path: path, "the record index \(path): BEGIN: \(String(cString: sqlite3_errmsg(handle)))")
        }
        let foreign = trustingOwnSchema && !Self.isOwnSchema(handle)
        if foreign {
            sqlite3_close_v2(handle)
            handle = try Self.open(path, trustingSchema: false)
        }
        self.handle = handle
        // SQLite registers a table-valued function (json_each, json_tree) in the schema the first
        // time a connection names it, and asks the authorizer to update sqlite_master for that:
        // named once here, before the authorizer, so that the user's statement asks only to read.
        do {
            try warmUp("SELECT 1 FROM json_each('[]'), json_tree('[]')")
        } catch ConcordError.io(let why) where foreign {
            throw ConcordError.invalidInput(.untrustedIndex, "the record index \(path) holds schema entries Concord does not make, which SQLite "
                                            + "refuses (\(why)); nothing was read: delete the file, and the next read builds it again")
        }
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_set_authorizer(handle, { context, action, first, second, database, inner in
            Unmanaged<ReadOnlySQLConnection>.fromOpaque(context!).takeUnretainedValue()
                .authorize(action, first, second, database, inner)
        }, context)
        sqlite3_progress_handler(handle, ReadOnlySQLRule.progressInterval, { context in
            Unmanaged<ReadOnlySQLConnection>.fromOpaque(context!).takeUnretainedValue().shouldStop() ? 1 : 0
        }, context)
    }

    deinit { sqlite3_close_v2(handle) }

    /// A read-only handle on `path`, configured: off whatever SQLite was built with (Debian's
    /// enables the two-argument fts3_tokenizer, which reads and writes a code pointer), defensive,
    /// the schema trusted only when `trustingSchema`, the limits set.
    private static func open(_ path: String, trustingSchema: Bool) throws -> OpaquePointer {
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, SQLITE_OPEN_READONLY, nil)
        guard let handle = opened else { throw ConcordError.io(.open, path: path, "the record index \(path): sqlite3_open_v2 failed (\(code))") }
        guard code == SQLITE_OK else {
            defer { sqlite3_close_v2(handle) }
            throw ConcordError.io(.open, path: path, "the record index \(path): sqlite3_open_v2: \(String(cString: sqlite3_errmsg(handle)))")
        }
        guard concord_sqlite3_db_config(handle, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0) == 0,
              concord_sqlite3_db_config(handle, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0) == 0,
              sqlite3_enable_load_extension(handle, 0) == SQLITE_OK else {
            sqlite3_close_v2(handle)
            throw ConcordError.io(.open, path: path, "the record index \(path): sqlite3_db_config could not turn off the FTS3 tokenizer or extension loading")
        }
        _ = concord_sqlite3_db_config(handle, SQLITE_DBCONFIG_DEFENSIVE, 1)
        _ = concord_sqlite3_db_config(handle, SQLITE_DBCONFIG_TRUSTED_SCHEMA, trustingSchema ? 1 : 0)
        sqlite3_limit(handle, SQLITE_LIMIT_LENGTH, ReadOnlySQLRule.maximumValueBytes)
        sqlite3_limit(handle, SQLITE_LIMIT_ATTACHED, 0)
        sqlite3_busy_timeout(handle, 30_000)
        return handle
    }

    /// Runs `sql`, one statement the rule allows, with `arguments` bound to its `?`s, stopped
    /// after `timeLimit`; each row as column name → value (the first of columns named alike).
    func rows(_ sql: String, arguments: [JSONValue], timeLimit: Duration) throws -> [[String: JSONValue]] {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        let parameters = Int(sqlite3_bind_parameter_count(statement))
        guard parameters == arguments.count else {
            throw ConcordError.invalidInput(.badQuery, "SQL: the statement has \(parameters) parameters and \(arguments.count) arguments were given")
        }
        for (index, argument) in arguments.enumerated() { try bind(argument, at: Int32(index + 1), of: statement) }
        let columns = (0..<sqlite3_column_count(statement)).map { String(cString: sqlite3_column_name(statement, $0)) }
        (deadline, stopped) = (.now + timeLimit, false)
        defer { deadline = nil }
        var rows: [[String: JSONValue]] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else {
                if stopped { throw ConcordError.sqlStopped(after: timeLimit) }
                throw ConcordError.invalidInput(.badQuery, "SQL: \(lastMessage)")
            }
            var row: [String: JSONValue] = [:]
            for (index, name) in columns.enumerated() where row[name] == nil {
                row[name] = value(of: statement, column: Int32(index))
            }
            rows.append(row)
        }
    }

    // MARK: Preparing

    private func prepare(_ sql: String) throws -> OpaquePointer {
        let text = Array(sql.utf8CString)
        return try text.withUnsafeBufferPointer { buffer -> OpaquePointer in
            let (base, length) = (buffer.baseAddress!, buffer.count - 1)
            var tail: UnsafePointer<CChar>?
            guard let statement = try compile(base, length: length, tail: &tail) else {
                throw ConcordError.invalidInput(.badQuery, "SQL: the text holds no statement")
            }
            let isSelect = authorization.isSelect == true
            do {
                // A statement SQLite asks nothing about (VACUUM) is no SELECT either.
                guard isSelect, sqlite3_stmt_readonly(statement) != 0 else { throw ConcordError.sqlRefused("it is not a SELECT") }
                // Whatever follows the first statement must be blanks or comments.
                if let tail, tail - base < length {
                    var rest: UnsafePointer<CChar>?
                    if let second = try compile(tail, length: length - (tail - base), tail: &rest) {
                        sqlite3_finalize(second)
                        throw ConcordError.sqlRefused("it holds more than one statement; run them one at a time")
                    }
                }
            } catch {
                sqlite3_finalize(statement)
                throw error
            }
            return statement
        }
    }

    /// One statement compiled under the rule; nil for text holding only blanks and comments.
    private func compile(_ text: UnsafePointer<CChar>, length: Int, tail: inout UnsafePointer<CChar>?) throws -> OpaquePointer? {
        authorization = ReadOnlySQLRule.Statement()
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v2(handle, text, Int32(length), &statement, &tail)
        guard code == SQLITE_OK else {
            sqlite3_finalize(statement)
            if let refusal = authorization.refusal { throw ConcordError.sqlRefused(refusal) }
            throw ConcordError.invalidInput(.badQuery, "SQL: \(lastMessage)")
        }
        return statement
    }

    /// Whether the schema `handle` reads (before any authorizer is set) is Concord's own; false
    /// when it cannot be read.
    private static func isOwnSchema(_ handle: OpaquePointer) -> Bool {
        RecordIndexSchema.isOwn { sql, columns in texts(handle, sql, columns: columns) }
    }

    /// The rows of `sql` on `handle`, each as its first `columns` texts; nil when it fails.
    private static func texts(_ handle: OpaquePointer, _ sql: String, columns: Int32) -> [[String?]]? {
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else { return nil }
        var rows = [[String?]]()
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return rows }
            guard code == SQLITE_ROW else { return nil }
            rows.append((0..<columns).map { sqlite3_column_text(statement, $0).map { String(cString: $0) } })
        }
    }

    private func warmUp(_ sql: String) throws {
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            throw ConcordError.io(.read, path: nil, "the record index: sqlite3_prepare_v2: \(lastMessage)")
        }
    }

    // MARK: The callbacks

    /// SQLite's authorizer: the action as `ReadOnlySQLRule` names it, and its decision.
    private func authorize(_ code: Int32, _ first: UnsafePointer<CChar>?, _ second: UnsafePointer<CChar>?,
                           _ database: UnsafePointer<CChar>?, _ inner: UnsafePointer<CChar>?) -> Int32 {
        let (first, second, database) = (first.map(String.init(cString:)), second.map(String.init(cString:)), database.map(String.init(cString:)))
        let action: ReadOnlySQLRule.Action
        switch code {
        case SQLITE_SELECT: action = .select
        case SQLITE_READ: action = .read(table: first ?? "", column: second ?? "", database: database)
        case SQLITE_FUNCTION: action = .function(second ?? "")
        case SQLITE_RECURSIVE: action = .recursive
        case SQLITE_PRAGMA: action = .pragma(first ?? "")
        case SQLITE_TRANSACTION, SQLITE_SAVEPOINT: action = .transaction
        case SQLITE_ATTACH, SQLITE_DETACH: action = .attach
        case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE: action = .write(table: first ?? "")
        default: action = .other
        }
        return authorization.allows(action) ? SQLITE_OK : SQLITE_DENY
    }

    private func shouldStop() -> Bool {
        guard let deadline, ContinuousClock.now >= deadline else { return false }
        stopped = true
        return true
    }

    // MARK: Values

    private func bind(_ value: JSONValue, at index: Int32, of statement: OpaquePointer) throws {
        let code: Int32
        switch value {
        case .null: code = sqlite3_bind_null(statement, index)
        case .bool(let flag): code = sqlite3_bind_int64(statement, index, flag ? 1 : 0)
        case .number(let text):
            switch IndexQuery.numericValue(text) {
            case .integer(let integer)?: code = sqlite3_bind_int64(statement, index, integer)
            case .double(let double)?: code = sqlite3_bind_double(statement, index, double)
            case nil: throw ConcordError.invalidInput(.badQuery, "SQL argument \(text) is not a number")
            }
        case .string(let text): code = bindText(text, at: index, of: statement)
        case .array, .object: code = bindText(String(decoding: value.canonicalLine(), as: UTF8.self), at: index, of: statement)
        }
        guard code == SQLITE_OK else { throw ConcordError.invalidInput(.badQuery, "SQL argument \(index): \(lastMessage)") }
    }

    private func bindText(_ text: String, at index: Int32, of statement: OpaquePointer) -> Int32 {
        let bytes = Array(text.utf8CString)
        return bytes.withUnsafeBufferPointer { concord_sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count - 1)) }
    }

    /// A column's value: integers and reals as numbers (a real that is not finite as null), text as
    /// a string, a blob as its base64 text, NULL as null.
    private func value(of statement: OpaquePointer, column: Int32) -> JSONValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .number(String(sqlite3_column_int64(statement, column)))
        case SQLITE_FLOAT:
            let double = sqlite3_column_double(statement, column)
            return double.isFinite ? .number("\(double)") : .null
        case SQLITE_TEXT:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard let text = sqlite3_column_text(statement, column) else { return .string("") }
            return .string(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard let blob = sqlite3_column_blob(statement, column) else { return .string("") }
            return .string(Data(bytes: blob, count: count).base64EncodedString())
        default: return .null
        }
    }

    private var lastMessage: String { String(cString: sqlite3_errmsg(handle)) }
}
