/// A JSON document held as values, with numbers kept as their exact lexeme.
///
/// Parse with `parse(_:)` (of bytes); write with ``canonicalBytes()`` (pretty, for record
/// files) or ``canonicalLine()`` (compact, for JSON Lines). Object keys compare as Swift strings, so two
/// keys that differ only in Unicode normalization count as the same key (and the parser rejects them as
/// duplicates).
public enum JSONValue: Sendable, Equatable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, as its lexeme exactly as written (e.g. `"1.50"`, `"-0"`, `"1e3"`).
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; canonical output sorts its keys by their UTF-8 bytes.
    case object([String: JSONValue])
}

extension JSONValue {
    /// A string value.
    public init(_ s: String) { self = .string(s) }
    /// A boolean value.
    public init(_ b: Bool) { self = .bool(b) }
    /// An integer number value.
    public init(_ i: Int) { self = .number(String(i)) }
    /// An array value.
    public init(_ a: [JSONValue]) { self = .array(a) }
    /// An object value.
    public init(_ o: [String: JSONValue]) { self = .object(o) }

    /// The member `key` of an object, or `nil` if this is not an object or has no such member.
    public subscript(key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    /// The element at `index` of an array, or `nil` if this is not an array or the index is out of range.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let a) = self, a.indices.contains(index) { return a[index] }
        return nil
    }

    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The boolean, if this is `true` or `false`.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The number's lexeme, if this is a number.
    public var numberLexeme: String? {
        if case .number(let n) = self { return n }
        return nil
    }

    /// The number as an `Int`, if this is a number written as an integer that fits.
    public var intValue: Int? {
        if case .number(let n) = self { return Int(n) }
        return nil
    }

    /// The number as a `Double`, if this is a number.
    public var doubleValue: Double? {
        if case .number(let n) = self { return Double(n) }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer number.
    public init(integerLiteral value: Int) { self = .number(String(value)) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// Builds an object; if a key is repeated, the last value wins.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
}
