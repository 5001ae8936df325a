/// A query on the live records of one kind, as the local index answers it and as a full scan of
/// the records answers it the same (`matches`, `precedes`: the reference semantics).
///
/// Semantics, on the top-level fields of a record's data:
/// - strings, field names included, are equal only when they are the same Unicode scalars (the
///   same UTF-8 bytes), as SQLite compares them: not Swift's `==`, which takes canonically
///   equivalent spellings as equal. "é" as U+00E9 is not "e" + U+0301, and the Angstrom sign
///   U+212B is not "Å" U+00C5. Strings order by their UTF-8 bytes (the scalars' order).
/// - a condition compares a field only with values of the same JSON type: numbers numerically
///   (as SQLite does: an integer that fits in 64 bits exactly, any other number as a double, and an
///   integer against a double exactly; `numericValue`), strings by their UTF-8 bytes, booleans by equality (`false < true` for ranges); a record whose
///   field is missing, `null` or of another type does not match. `prefix` matches strings only.
/// - ordering puts, per field, a missing field or `null` first, then `false`, `true`, numbers (by
///   value), strings (by UTF-8 bytes), then arrays and objects (by the bytes of their compact
///   canonical JSON, `canonicalLine()`, which is what SQLite's `json_extract` gives for them);
///   `descending` reverses that. Ties are broken by the record id's UTF-8 bytes, ascending, so pages
///   are stable.
public struct IndexQuery: Sendable, Hashable {
    /// How one field is compared.
    public enum Comparison: Sendable, Hashable {
        case equal(JSONValue)
        case notEqual(JSONValue)
        case less(JSONValue)
        case lessOrEqual(JSONValue)
        case greater(JSONValue)
        case greaterOrEqual(JSONValue)
        /// Strings starting with the given text.
        case prefix(String)
        /// Equal to one of the values.
        case isIn([JSONValue])
    }

    /// One condition: a top-level field and its comparison. All conditions must hold.
    public struct Condition: Sendable, Hashable {
        /// The top-level field compared.
        public var field: String
        /// How it is compared.
        public var comparison: Comparison
        /// A condition on `field`.
        public init(_ field: String, _ comparison: Comparison) { (self.field, self.comparison) = (field, comparison) }
    }

    /// One ordering key.
    public struct Ordering: Sendable, Hashable {
        /// The top-level field ordered by.
        public var field: String
        /// Whether larger values come first.
        public var descending: Bool
        /// An ordering by `field`, ascending unless `descending`.
        public init(_ field: String, descending: Bool = false) { (self.field, self.descending) = (field, descending) }
    }

    /// The kind queried.
    public var kind: String
    /// The conditions, all of which must hold.
    public var conditions: [Condition]
    /// The ordering keys, most significant first; ties are broken by id.
    public var ordering: [Ordering]
    /// At most this many records; nil: all.
    public var limit: Int?
    /// Records skipped before the first returned.
    public var offset: Int

    /// A query on `kind`'s live records: all of them, ordered by id, unless told otherwise.
    public init(kind: String, conditions: [Condition] = [], ordering: [Ordering] = [], limit: Int? = nil, offset: Int = 0) {
        (self.kind, self.conditions, self.ordering, self.limit, self.offset) = (kind, conditions, ordering, limit, offset)
    }

    /// The fields the query reads (conditions, then ordering), each once.
    public var fields: [String] {
        var seen = Set<String>()
        return (conditions.map(\.field) + ordering.map(\.field)).filter { seen.insert($0).inserted }
    }

    // MARK: The reference semantics (a full scan)

    /// Whether a record with `data` satisfies every condition.
    public func matches(_ data: [String: JSONValue]) -> Bool {
        conditions.allSatisfy { Self.holds($0.comparison, Self.field($0.field, of: data)) }
    }

    /// The value of the field named exactly `name` (the same scalars: a Swift dictionary finds a
    /// canonically equivalent key too); nil when there is none.
    public static func field(_ name: String, of data: [String: JSONValue]) -> JSONValue? {
        guard let index = data.index(forKey: name), data[index].key.utf8.elementsEqual(name.utf8) else { return nil }
        return data[index].value
    }

    /// Whether record (`idA`, `a`) comes before (`idB`, `b`) in this query's order.
    public func precedes(_ a: [String: JSONValue], id idA: String, _ b: [String: JSONValue], id idB: String) -> Bool {
        for key in ordering {
            let order = Self.sortOrder(Self.field(key.field, of: a), Self.field(key.field, of: b))
            if order != 0 { return key.descending ? order > 0 : order < 0 }
        }
        return utf8Precedes(idA, idB)
    }

    /// The page of `records` (id, data) this query returns: the matching ones, ordered, offset, limited.
    public func evaluate(_ records: [(id: String, data: [String: JSONValue])]) -> [(id: String, data: [String: JSONValue])] {
        let sorted = records.filter { matches($0.data) }.sorted { precedes($0.data, id: $0.id, $1.data, id: $1.id) }
        let page = sorted.dropFirst(offset)
        return Array(limit.map { page.prefix($0) } ?? page)
    }

    static func holds(_ comparison: Comparison, _ value: JSONValue?) -> Bool {
        guard let value, value != .null else { return false }
        switch comparison {
        case .equal(let other): return compare(value, other) == 0
        case .notEqual(let other): return compare(value, other).map { $0 != 0 } ?? false
        case .less(let other): return compare(value, other).map { $0 < 0 } ?? false
        case .lessOrEqual(let other): return compare(value, other).map { $0 <= 0 } ?? false
        case .greater(let other): return compare(value, other).map { $0 > 0 } ?? false
        case .greaterOrEqual(let other): return compare(value, other).map { $0 >= 0 } ?? false
        case .prefix(let text):
            guard case .string(let string) = value else { return false }
            return string.utf8.starts(with: text.utf8)
        case .isIn(let values): return values.contains { compare(value, $0) == 0 }
        }
    }

    /// -1, 0 or 1 for two values of the same comparable type (number, string, boolean); nil otherwise.
    static func compare(_ a: JSONValue, _ b: JSONValue) -> Int? {
        switch (a, b) {
        case (.number(let x), .number(let y)):
            guard let x = numericValue(x), let y = numericValue(y) else { return nil }
            return x.compare(y)
        case (.string(let x), .string(let y)):
            return x.utf8.elementsEqual(y.utf8) ? 0 : (utf8Precedes(x, y) ? -1 : 1)
        case (.bool(let x), .bool(let y)):
            return x == y ? 0 : (!x ? -1 : 1)
        default:
            return nil
        }
    }

    /// The rank of a value's type in an ordering: missing or null, false, true, number, string, other.
    static func rank(_ value: JSONValue?) -> Int {
        switch value {
        case nil, .null?: 0
        case .bool(false)?: 1
        case .bool(true)?: 2
        case .number?: 3
        case .string?: 4
        case .array?, .object?: 5
        }
    }

    /// -1, 0 or 1: where `a` sorts against `b` for one ordering key (ascending).
    static func sortOrder(_ a: JSONValue?, _ b: JSONValue?) -> Int {
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        guard let a, let b else { return 0 }
        if ra == 5 {
            let (x, y) = (a.canonicalLine(), b.canonicalLine())
            return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        }
        return compare(a, b) ?? 0
    }

    /// A JSON number as SQLite's JSON functions read it: an integer literal (no fraction, no
    /// exponent) that fits in 64 bits as that integer, any other as a double; nil if not a number.
    public static func numericValue(_ text: String) -> Number? {
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }),
           let integer = Int64(text) {
            return .integer(integer)
        }
        return Double(text).map(Number.double)
    }

    /// A number as SQLite holds it.
    public enum Number: Sendable, Hashable {
        /// An integer literal that fits in 64 bits.
        case integer(Int64)
        /// Any other number (a fraction, an exponent, or an integer too large for 64 bits).
        case double(Double)

        /// -1, 0 or 1, exactly (an integer against a double compares as SQLite does, without rounding).
        func compare(_ other: Number) -> Int {
            switch (self, other) {
            case (.integer(let x), .integer(let y)): return x < y ? -1 : (x > y ? 1 : 0)
            case (.double(let x), .double(let y)): return x < y ? -1 : (x > y ? 1 : 0)
            case (.integer(let x), .double(let y)): return Self.compare(x, y)
            case (.double(let x), .integer(let y)): return -Self.compare(y, x)
            }
        }

        /// An integer against a double, exactly.
        static func compare(_ integer: Int64, _ double: Double) -> Int {
            if double.isNaN { return 1 }
            if double >= 9_223_372_036_854_775_808.0 { return -1 }
            if double < -9_223_372_036_854_775_808.0 { return 1 }
            let whole = double.rounded(.down)
            let wholeInteger = Int64(whole)
            if integer != wholeInteger { return integer < wholeInteger ? -1 : 1 }
            return double > whole ? -1 : 0
        }
    }
}
