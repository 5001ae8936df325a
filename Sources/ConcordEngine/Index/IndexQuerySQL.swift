import ConcordModel
import Foundation
import GRDB

/// An `IndexQuery` as SQL over the record index's `records` table, with exactly the query's
/// reference semantics (`IndexQuery.matches`, `precedes`):
/// - a field is read with `json_extract(data, '$."field"')`, the expression the kind's indexes are
///   built on (`RecordIndexSchema.indexSQL`), so SQLite can use them; `json_type` of the same path
///   keeps a comparison to values of the query value's JSON type (`true` is 1 to `json_extract`,
///   and must not equal the number 1);
/// - strings compare by their UTF-8 bytes (SQLite's BINARY collation: equal only when the same
///   Unicode scalars, as `IndexQuery` defines it), numbers numerically (both
///   exactly as `IndexQuery.compare` does: 64-bit integers exactly, others as doubles), booleans
///   as 0 and 1;
/// - the ordering is the type rank (`IndexQuery.rank`), then the value (arrays and objects as
///   their compact JSON, which is what `json_extract` returns for them), then the id.
/// A field name SQLite's JSON paths cannot name (`hasPath`: empty, or with a `"`, a `\`, a control
/// character or a character outside ASCII) is read with a `json_each` subquery instead: right, but
/// no index serves it. SQLite 3.40's `json_extract` cuts a string at U+0000, so the rows whose data
/// holds one (`records.has_nul`) are left out here (`withoutNul`) and evaluated in Swift
/// (`IndexPlan`); a kind with a record file that does not decode is answered by the full scan.
struct IndexQuerySQL {
    /// The statement's text and its arguments.
    let sql: String
    let arguments: StatementArguments

    /// The SELECT of `query`'s page: the columns `file`, then `id`; `withoutNul`: of the rows
    /// without U+0000 only.
    static func select(_ query: IndexQuery, withoutNul: Bool = false) -> IndexQuerySQL {
        var builder = Builder()
        let filter = builder.filter(query, withoutNul: withoutNul)
        var order = query.ordering.map { key -> String in
            let direction = key.descending ? " DESC" : ""
            return "\(rankSQL(key.field))\(direction), \(valueSQL(key.field))\(direction)"
        }
        order.append("id")
        var sql = "SELECT file, id FROM records WHERE \(filter) ORDER BY \(order.joined(separator: ", "))"
        if query.limit != nil || query.offset > 0 {
            sql += " LIMIT \(max(query.limit ?? -1, -1)) OFFSET \(max(query.offset, 0))"
        }
        return IndexQuerySQL(sql: sql, arguments: StatementArguments(builder.arguments))
    }

    /// How many records `query`'s page holds (its limit and offset apply).
    static func count(_ query: IndexQuery, withoutNul: Bool = false) -> IndexQuerySQL {
        guard query.limit != nil || query.offset > 0 else {
            var builder = Builder()
            let filter = builder.filter(query, withoutNul: withoutNul)
            return IndexQuerySQL(sql: "SELECT count(*) FROM records WHERE \(filter)", arguments: StatementArguments(builder.arguments))
        }
        let page = select(query, withoutNul: withoutNul)
        return IndexQuerySQL(sql: "SELECT count(*) FROM (\(page.sql))", arguments: page.arguments)
    }

    /// A SQL string literal.
    static func literal(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }

    /// Whether SQLite's JSON path `$."field"` names `field`: not empty, printable ASCII only, no `"`
    /// and no `\`. SQLite compares a path with a key as the JSON text writes it (escaped), so a
    /// name with a backslash, a control character or (escaped by some writers) other characters
    /// would never match; those are read with `json_each`, which compares the key itself.
    static func hasPath(_ field: String) -> Bool {
        !field.isEmpty && field.utf8.allSatisfy { (0x20...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
    }

    /// The field's value as `json_extract` gives it (SQL NULL when missing or JSON null).
    static func valueSQL(_ field: String) -> String {
        hasPath(field) ? "json_extract(data, \(literal("$.\"\(field)\"")))"
            : "(SELECT value FROM json_each(data) WHERE key = \(literal(field)))"
    }

    /// The field's JSON type as `json_type` names it (SQL NULL when missing).
    static func typeSQL(_ field: String) -> String {
        hasPath(field) ? "json_type(data, \(literal("$.\"\(field)\"")))"
            : "(SELECT type FROM json_each(data) WHERE key = \(literal(field)))"
    }

    /// `IndexQuery.rank` in SQL.
    static func rankSQL(_ field: String) -> String {
        "(CASE \(typeSQL(field)) WHEN 'false' THEN 1 WHEN 'true' THEN 2 WHEN 'integer' THEN 3 WHEN 'real' THEN 3 "
            + "WHEN 'text' THEN 4 WHEN 'array' THEN 5 WHEN 'object' THEN 5 ELSE 0 END)"
    }

    /// The WHERE clause's terms and their arguments, built in order.
    struct Builder {
        var arguments: [DatabaseValueConvertible?] = []

        mutating func filter(_ query: IndexQuery, withoutNul: Bool = false) -> String {
            var terms = ["kind = \(IndexQuerySQL.literal(query.kind))"]
            if withoutNul { terms.append("NOT has_nul") }
            for condition in query.conditions { terms.append(term(condition)) }
            return terms.joined(separator: " AND ")
        }

        /// One condition: the value compared (the indexed expression), then the type kept.
        mutating func term(_ condition: IndexQuery.Condition) -> String {
            let value = IndexQuerySQL.valueSQL(condition.field)
            switch condition.comparison {
            case .equal(let other): return compare(condition.field, value, "=", other)
            case .notEqual(let other): return compare(condition.field, value, "<>", other)
            case .less(let other): return compare(condition.field, value, "<", other)
            case .lessOrEqual(let other): return compare(condition.field, value, "<=", other)
            case .greater(let other): return compare(condition.field, value, ">", other)
            case .greaterOrEqual(let other): return compare(condition.field, value, ">=", other)
            case .prefix(let text): return prefix(condition.field, value, text)
            case .isIn(let values): return isIn(condition.field, value, values)
            }
        }

        /// One of `values`: `IN` over all of them (what the index serves; `true` is 1 there), then
        /// the exact test per JSON type.
        mutating func isIn(_ field: String, _ value: String, _ values: [JSONValue]) -> String {
            let comparable = values.compactMap { Self.sqlValue($0) }
            guard !comparable.isEmpty else { return "0" }
            var groups = [String: [DatabaseValueConvertible]]()
            var order = [String]()
            for (argument, types) in comparable {
                if groups[types] == nil { order.append(types) }
                groups[types, default: []].append(argument)
            }
            arguments.append(contentsOf: comparable.map { Optional($0.0) })
            let sql = "(\(value) IN (\(comparable.map { Self.placeholder($0.0) }.joined(separator: ", ")))"
            guard order.count > 1 else { return sql + " AND \(IndexQuerySQL.typeSQL(field)) IN (\(order[0])))" }
            let exact = order.map { types -> String in
                arguments.append(contentsOf: groups[types]!.map { Optional($0) })
                return "(\(IndexQuerySQL.typeSQL(field)) IN (\(types)) AND \(value) IN (\(groups[types]!.map(Self.placeholder).joined(separator: ", "))))"
            }
            return sql + " AND (" + exact.joined(separator: " OR ") + "))"
        }

        /// `value op other` for values of `other`'s type; false when `other` is of no comparable type.
        mutating func compare(_ field: String, _ value: String, _ op: String, _ other: JSONValue) -> String {
            guard let (argument, types) = Self.sqlValue(other) else { return "0" }
            arguments.append(argument)
            return "(\(value) \(op) \(Self.placeholder(argument)) AND \(IndexQuerySQL.typeSQL(field)) IN (\(types)))"
        }

        /// Strings starting with `text`: a range the index serves, then the bytes checked exactly.
        mutating func prefix(_ field: String, _ value: String, _ text: String) -> String {
            var sql = "(\(IndexQuerySQL.typeSQL(field)) = 'text'"
            guard !text.isEmpty else { return sql + ")" }
            let start = Self.text(text)
            arguments.append(start)
            sql += " AND \(value) >= \(Self.placeholder(start))"
            if let upper = Self.successor(text).map(Self.text) {
                arguments.append(upper)
                sql += " AND \(value) < \(Self.placeholder(upper))"
            }
            arguments.append(text.utf8.count)
            arguments.append(Data(text.utf8))
            return sql + " AND substr(CAST(\(value) AS BLOB), 1, ?) = ?)"
        }

        /// The least string above every string that starts with `text` (its last scalar raised by
        /// one; UTF-8's byte order is the scalars' order); nil when there is none.
        static func successor(_ text: String) -> String? {
            var scalars = Array(text.unicodeScalars)
            while let last = scalars.popLast() {
                var next = last.value + 1
                if next == 0xD800 { next = 0xE000 }
                if let scalar = Unicode.Scalar(next) {
                    scalars.append(scalar)
                    var result = String.UnicodeScalarView()
                    result.append(contentsOf: scalars)
                    return String(result)
                }
            }
            return nil
        }

        /// Text as an argument: a string holding U+0000 as its UTF-8 bytes (GRDB binds a string
        /// up to its first U+0000), which `placeholder` makes text again.
        static func text(_ text: String) -> DatabaseValueConvertible {
            text.utf8.contains(0) ? Data(text.utf8) : text
        }

        /// An argument's `?`: `CAST(? AS TEXT)` for text bound as bytes (`text`), which keeps every
        /// byte, U+0000 included, and compares as text.
        static func placeholder(_ argument: DatabaseValueConvertible) -> String {
            argument is Data ? "CAST(? AS TEXT)" : "?"
        }

        /// A JSON value as a SQL argument with the `json_type` names of its type; nil for null,
        /// arrays and objects, which no condition matches.
        static func sqlValue(_ value: JSONValue) -> (DatabaseValueConvertible, String)? {
            switch value {
            case .number(let text):
                switch IndexQuery.numericValue(text) {
                case .integer(let integer)?: return (integer, "'integer', 'real'")
                case .double(let double)?: return (double, "'integer', 'real'")
                case nil: return nil
                }
            case .string(let text): return (Self.text(text), "'text'")
            case .bool(let flag): return (flag ? 1 : 0, "'true', 'false'")
            case .null, .array, .object: return nil
            }
        }
    }
}
