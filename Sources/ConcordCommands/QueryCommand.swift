import ArgumentParser
import ConcordKit
import Foundation

struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "List the records of a kind that match conditions, in an order, a page at a time (from this device's index).",
        discussion: """
            Each --where is FIELD OP VALUE on a top-level field of the records' data, with OP one of
            = != < <= > >= and ^= (strings starting with VALUE, always text). VALUE is read as JSON (3, true,
            "3") and otherwise taken as a string. A field compares only with values of the same
            JSON type: page=3 does not match "3". Records come in --order-by order (a missing field
            first), ties by id, so pages are stable. Examples:
              concord query vocabulary --where page=3 --order-by position
              concord query vocabulary --where 'label^=pu' --order-by page --desc --limit 10 --offset 20
            """)

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The record kind.") var kind: String
    @Option(name: .customLong("where"), help: ArgumentHelp("A condition, FIELD=VALUE (also != < <= > >= ^=); repeatable, all must hold.", valueName: "condition"))
    var conditions: [String] = []
    @Option(name: .customLong("order-by"), help: ArgumentHelp("Order by this field; repeatable (later ones break ties).", valueName: "field"))
    var orderBy: [String] = []
    @Flag(help: "Descending order (for every --order-by field; ties stay by id, ascending).") var desc = false
    @Option(help: "At most this many records.") var limit: Int?
    @Option(help: "Skip this many records first.") var offset: Int = 0
    @Flag(help: "Print only how many records match (after --offset and --limit).") var count = false
    @Flag(help: "Print the records as a JSON array of their files' JSON.") var json = false

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if offset < 0 { throw ValidationError("--offset must be 0 or more") }
        for condition in conditions { _ = try Self.condition(condition) }
    }

    func run() throws {
        let query = IndexQuery(kind: kind, conditions: try conditions.map(Self.condition),
                               ordering: orderBy.map { IndexQuery.Ordering($0, descending: desc) }, limit: limit, offset: offset)
        let store = try profile.open()
        if count {
            let total = try store.read { try $0.count(query) }
            if json { try printJSON(["count": total]) } else { print(total) }
            return
        }
        let records = try store.read { try $0.query(query) }
        if json {
            try printJSON(records.map(\.jsonValue))
        } else {
            for record in records {
                print("\(record.kind)/\(record.id) \(String(decoding: JSONValue(record.data ?? [:]).canonicalLine(), as: UTF8.self))")
            }
        }
    }

    /// The operators of --where, longest first where one starts another.
    static let operators: [(text: String, make: @Sendable (JSONValue, String) -> IndexQuery.Comparison)] = [
        ("!=", { value, _ in .notEqual(value) }), ("<=", { value, _ in .lessOrEqual(value) }), (">=", { value, _ in .greaterOrEqual(value) }),
        ("^=", { value, raw in .prefix(value.stringValue ?? raw) }),
        ("=", { value, _ in .equal(value) }), ("<", { value, _ in .less(value) }), (">", { value, _ in .greater(value) }),
    ]

    /// One --where: the field before the first operator, the value after it (JSON, else a string).
    static func condition(_ text: String) throws -> IndexQuery.Condition {
        let found = operators.compactMap { op in text.range(of: op.text).map { (op, $0) } }
            .min { ($0.1.lowerBound, -$0.0.text.count) < ($1.1.lowerBound, -$1.0.text.count) }
        guard let (op, range) = found, range.lowerBound > text.startIndex else {
            throw ValidationError("--where \(text): write FIELD=VALUE (or FIELD!=, <, <=, >, >=, ^= VALUE), e.g. --where page=3")
        }
        let field = String(text[..<range.lowerBound])
        let rawValue = String(text[range.upperBound...])
        let value = (try? JSONValue.parse(rawValue)) ?? .string(rawValue)
        return IndexQuery.Condition(field, op.make(value, rawValue))
    }
}
