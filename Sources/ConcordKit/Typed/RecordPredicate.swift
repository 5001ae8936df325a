import ConcordModel

/// One condition of a typed query on a top-level field of a `ConcordRecord`: `\.page == 3`,
/// `\.position >= 2`, `.hasPrefix(\.label, "p")`, `.in(\.page, [1, 3])`. The key path is turned into
/// its field name (`ConcordRecord.fields`) and the value into its JSON encoding
/// (`JSONValueEncoder`) when the predicate is made; a key path with no name, or a value that is not
/// a string, a number or a boolean (what a condition compares, `IndexQuery`), makes the query
/// fail when it runs, with `fieldNotNamed` or `invalidInput`.
public struct RecordPredicate<Root: ConcordRecord>: Sendable {
    /// The condition, or why there is none.
    let condition: Result<IndexQuery.Condition, ConcordError>

    init(_ condition: Result<IndexQuery.Condition, ConcordError>) { self.condition = condition }

    /// Strings of field `keyPath` starting with `prefix` (by UTF-8 bytes).
    public static func hasPrefix(_ keyPath: KeyPath<Root, String>, _ prefix: String) -> Self {
        Self(Root.fieldName(keyPath).map { IndexQuery.Condition($0, .prefix(prefix)) })
    }

    /// `hasPrefix` for an optional string field (a record without it does not match).
    public static func hasPrefix(_ keyPath: KeyPath<Root, String?>, _ prefix: String) -> Self {
        Self(Root.fieldName(keyPath).map { IndexQuery.Condition($0, .prefix(prefix)) })
    }

    /// Field `keyPath` equal to one of `values`.
    public static func `in`<Value: Encodable>(_ keyPath: KeyPath<Root, Value>, _ values: [Value]) -> Self {
        Self(Root.fieldName(keyPath).flatMap { field in
            Result { () throws(ConcordError) in
                var encoded = [JSONValue]()
                for value in values { encoded.append(try Root.queryValue(value, field: field)) }
                return IndexQuery.Condition(field, .isIn(encoded))
            }
        })
    }

    /// Field `keyPath` compared with `value` by `comparison`.
    static func compare<Value: Encodable>(_ keyPath: KeyPath<Root, Value>, _ value: Value,
                                          _ comparison: (JSONValue) -> IndexQuery.Comparison) -> Self {
        Self(Root.fieldName(keyPath).flatMap { field in
            Result { () throws(ConcordError) in IndexQuery.Condition(field, comparison(try Root.queryValue(value, field: field))) }
        })
    }
}

extension ConcordRecord {
    /// The data field `keyPath` is stored under (`fields`), or `fieldNotNamed`.
    static func fieldName(_ keyPath: PartialKeyPath<Self>) -> Result<String, ConcordError> {
        if let name = fields.name(of: keyPath) { return .success(name) }
        return .failure(.fieldNotNamed(type: String(describing: Self.self), keyPath: String(describing: keyPath)))
    }

    /// `value` as a query compares it: its JSON encoding, which must be a string, a number or a boolean.
    static func queryValue<Value: Encodable>(_ value: Value, field: String) throws(ConcordError) -> JSONValue {
        let encoded: JSONValue
        do { encoded = try JSONValueEncoder().encode(value) } catch {
            throw .invalidInput(.notEncodable, "the value \(field) is compared with does not encode as JSON: \(TypedCoding.describe(error))")
        }
        switch encoded {
        case .string, .number, .bool: return encoded
        case .null, .array, .object:
            throw .invalidInput(.badQuery, "a query compares strings, numbers and booleans; \(field) is compared with \(ValueDecoder.describe(encoded))")
        }
    }
}

/// `\.field == value`: the field equal to the value (a record without the field does not match).
public func == <Root: ConcordRecord, Value: Encodable>(keyPath: KeyPath<Root, Value>, value: Value) -> RecordPredicate<Root> {
    .compare(keyPath, value, IndexQuery.Comparison.equal)
}

/// `\.field != value`: the field present, of the value's type, and not equal to it.
public func != <Root: ConcordRecord, Value: Encodable>(keyPath: KeyPath<Root, Value>, value: Value) -> RecordPredicate<Root> {
    .compare(keyPath, value, IndexQuery.Comparison.notEqual)
}

/// `\.field < value` (numbers by value, strings by UTF-8 bytes, `false < true`).
public func < <Root: ConcordRecord, Value: Encodable>(keyPath: KeyPath<Root, Value>, value: Value) -> RecordPredicate<Root> {
    .compare(keyPath, value, IndexQuery.Comparison.less)
}

/// `\.field <= value`.
public func <= <Root: ConcordRecord, Value: Encodable>(keyPath: KeyPath<Root, Value>, value: Value) -> RecordPredicate<Root> {
    .compare(keyPath, value, IndexQuery.Comparison.lessOrEqual)
}

/// `\.field > value`.
public func > <Root: ConcordRecord, Value: Encodable>(keyPath: KeyPath<Root, Value>, value: Value) -> RecordPredicate<Root> {
    .compare(keyPath, value, IndexQuery.Comparison.greater)
}

/// `\.field >= value`.
public func >= <Root: ConcordRecord, Value: Encodable>(keyPath: KeyPath<Root, Value>, value: Value) -> RecordPredicate<Root> {
    .compare(keyPath, value, IndexQuery.Comparison.greaterOrEqual)
}
