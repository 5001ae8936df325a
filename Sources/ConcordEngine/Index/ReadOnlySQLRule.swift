/// What the record index's read-only SQL entry (`RecordIndex.sql`) runs, decided by SQLite's own
/// authorizer action by action as a statement is compiled (`ReadOnlySQLConnection` asks): one
/// SELECT that reads the index's documented tables (`tables`), calls only `functions`, and may
/// recurse (a recursive CTE), since the time limit stops it. Everything else is refused with the
/// reason: pragmas (statements and `pragma_…` table-valued functions), ATTACH and DETACH,
/// transactions and savepoints, any write or schema change, SQLite's own schema and other virtual
/// tables (`dbstat`, FTS), and every function not listed (`fts3_tokenizer`, `load_extension`,
/// `readfile`, `sqlite_version`, `random`, `zeroblob`, `printf`…). docs/index.md states the rule.
package enum ReadOnlySQLRule {
    /// How long a statement may run before it is stopped: `RecordIndex.sql`'s default.
    package static let timeLimit: Duration = .seconds(2)
    /// Every how many SQLite VM steps the time is looked at.
    static let progressInterval: Int32 = 1_000
    /// The largest string, blob or row a statement may make or read (SQLite's `SQLITE_LIMIT_LENGTH`;
    /// a record is at most 1 MiB, so no row of the index comes near it).
    static let maximumValueBytes: Int32 = 16 << 20

    /// The tables a statement may read: the index's documented ones, and the table-valued JSON functions.
    static let tables: Set<String> = ["records", "files", "meta", "indexed_fields", "json_each", "json_tree"]

    /// The functions a statement may call: pure functions of their arguments (SQLite's core scalar
    /// ones, the JSON ones, the date and time ones, math), the aggregates and the window functions.
    /// Left out: whatever reads or sets the connection's state or the build (`changes`,
    /// `sqlite_version`, `sqlite_compileoption_used`…), loads code or touches files
    /// (`load_extension`, `fts3_tokenizer`, `readfile`, `writefile`), random values, and whatever
    /// makes a large value from a small argument (`zeroblob`, `randomblob`, `printf`'s widths).
    static let functions: Set<String> = [
        // Core scalar functions.
        "abs", "char", "coalesce", "glob", "hex", "ifnull", "iif", "instr", "length", "like", "likelihood", "likely", "lower",
        "ltrim", "max", "min", "nullif", "octet_length", "quote", "replace", "round", "rtrim", "sign", "substr", "substring",
        "trim", "typeof", "unhex", "unicode", "unlikely", "upper",
        // Aggregates.
        "avg", "count", "group_concat", "string_agg", "sum", "total",
        // Window functions.
        "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value",
        "last_value", "nth_value",
        // JSON (SQLite's `->` and `->>` operators are functions of those names).
        "json", "json_array", "json_array_length", "json_extract", "json_insert", "json_object", "json_patch", "json_quote",
        "json_remove", "json_replace", "json_set", "json_type", "json_valid", "json_group_array", "json_group_object",
        "json_each", "json_tree", "->", "->>",
        // Dates and times.
        "date", "time", "datetime", "julianday", "unixepoch", "strftime",
        // Math.
        "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh", "degrees", "exp",
        "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians", "sin", "sinh", "sqrt", "tan",
        "tanh", "trunc",
    ]

    /// An authorizer action, as the rule tells them apart.
    enum Action: Equatable {
        /// The statement is a SELECT (also reported for each subquery).
        case select
        /// `column` of `table` in `database` is read; for `count(*)`, the empty column of a
        /// table, view or CTE with no database.
        case read(table: String, column: String, database: String?)
        /// A function is called.
        case function(String)
        /// A CTE is recursive.
        case recursive
        /// A `PRAGMA` statement, or a `pragma_…` table-valued function.
        case pragma(String)
        /// BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE.
        case transaction
        /// ATTACH or DETACH.
        case attach
        /// An INSERT, UPDATE or DELETE on `table`.
        case write(table: String)
        /// Anything else: a schema change (CREATE, DROP, ALTER, REINDEX, ANALYZE) or other.
        case other
    }

    /// The decisions made while one statement is compiled: the first refusal is its reason.
    struct Statement {
        /// Why the statement is refused, from the first action refused.
        private(set) var refusal: String?
        /// Whether the statement began as a SELECT (its first action); nil before any action.
        private(set) var isSelect: Bool?

        /// Whether `action` is allowed; records the reason when it is not.
        mutating func allows(_ action: Action) -> Bool {
            if isSelect == nil { isSelect = action == .select }
            guard let reason = ReadOnlySQLRule.reason(refusing: action, inSelect: isSelect == true) else { return true }
            if refusal == nil { refusal = reason }
            return false
        }
    }

    /// Why `action` is refused, nil when it is allowed. `inSelect`: the statement began as a
    /// SELECT, so an update of SQLite's schema table is SQLite registering a table-valued function
    /// or virtual table it names (json_each and json_tree are registered before the statement).
    static func reason(refusing action: Action, inSelect: Bool) -> String? {
        switch action {
        case .select, .recursive: return nil
        case .read(let table, let column, let database):
            if database == nil || database == "main", tables.contains(table) { return nil }
            // Rows counted, no column read: a CTE's or a subquery's (a virtual table other than
            // json_each and json_tree is refused as SQLite registers it, before this).
            if database == nil, column.isEmpty, !table.lowercased().hasPrefix("sqlite_") { return nil }
            return "it reads \(table), which is not one of the index's tables (\(tables.sorted().joined(separator: ", ")))"
        case .function(let name):
            if functions.contains(name.lowercased()) { return nil }
            return "it calls \(name)(), which the read-only SQL entry does not allow"
        case .pragma(let name): return "it runs PRAGMA \(name), and pragmas are not run"
        case .transaction: return "it begins or ends a transaction or savepoint, and each statement runs on its own"
        case .attach: return "it attaches or detaches a database, and only the index is read"
        case .write(let table) where inSelect && ["sqlite_master", "sqlite_schema"].contains(table):
            return "it names a table-valued function or virtual table (pragma_…, dbstat…), and of those only json_each and json_tree are read"
        case .write(let table): return "it writes \(table), and the index is read-only"
        case .other: return "it is not a SELECT"
        }
    }
}
