import ConcordModel
import Foundation

/// Decodes a `Decodable` value from a `JSONValue`, reading what `JSONValueEncoder` writes: integers
/// from integer lexemes (or from a number with a fraction or exponent that denotes an integer
/// exactly, as `3.0` or `1e3`; `1.5` or `1.0000000000000001` is a type mismatch),
/// floating-point numbers from any number that is finite in the type, `Date` from an ISO 8601
/// string (with or without a fraction of a second, any offset), `Data` from base64, `URL` from a
/// string, `Decimal` from a number. Members the type does not ask for are ignored (and kept on
/// save, `UnknownFields`).
public struct JSONValueDecoder: Sendable {
    /// Values handed to the decoded types through `Decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// A decoder with no user info.
    public init() {}

    /// `type` decoded from `value`; throws `DecodingError` naming the coding path that failed.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try decodeReading(type, from: value).value
    }

    /// `decode`, with what the type read of `value` (`ReadShape`).
    func decodeReading<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> (value: T, shape: ReadShape) {
        let shape = ReadShape()
        let decoder = ValueDecoder(value, codingPath: [], userInfo: userInfo.mapValues { $0 as Any }, shape: shape)
        return (try decoder.decode(type), shape)
    }
}

/// What a type read of one JSON value while decoding it: the members of an object it asked for
/// (by `decode`, `decodeIfPresent`, `contains`, `decodeNil` or a nested container), whether it
/// listed them all (`allKeys`: a dictionary or an enum's case, whose members are all its own),
/// and, below, the same for each member and array element it decoded.
final class ReadShape {
    private(set) var keys: Set<String> = []
    private(set) var readsAllKeys = false
    private(set) var members: [String: ReadShape] = [:]
    private(set) var elements: [Int: ReadShape] = [:]

    func read(_ key: String) { keys.insert(key) }
    func readAllKeys() { readsAllKeys = true }

    /// Whether the type knows member `key` of this object.
    func knows(_ key: String) -> Bool { readsAllKeys || keys.contains(key) }

    /// The shape of member `key`, made on first use.
    func member(_ key: String) -> ReadShape {
        if let shape = members[key] { return shape }
        let shape = ReadShape()
        members[key] = shape
        return shape
    }

    /// The shape of element `index`, made on first use.
    func element(_ index: Int) -> ReadShape {
        if let shape = elements[index] { return shape }
        let shape = ReadShape()
        elements[index] = shape
        return shape
    }
}

/// The `Decoder` handed to one value's `init(from:)`; also its single-value container.
final class ValueDecoder: Decoder, SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]
    let shape: ReadShape

    init(_ value: JSONValue, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any], shape: ReadShape) {
        (self.value, self.codingPath, self.userInfo, self.shape) = (value, codingPath, userInfo, shape)
    }

    /// The decoder of a member or element `value` at `key` below this one.
    func child(_ value: JSONValue, at key: any CodingKey, shape: ReadShape) -> ValueDecoder {
        ValueDecoder(value, codingPath: codingPath + [key], userInfo: userInfo, shape: shape)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: Any].self, expected: "an object") }
        return KeyedDecodingContainer(ObjectDecodingContainer<Key>(members: members, decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self, expected: "an array") }
        return ArrayDecodingContainer(elements: elements, decoder: self)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    // MARK: Values

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(type, expected: "a boolean") }
        return bool
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let string) = value else { throw mismatch(type, expected: "a string") }
        return string
    }

    func decode(_ type: Double.Type) throws -> Double { try floatingPoint(type) }
    func decode(_ type: Float.Type) throws -> Float { try floatingPoint(type) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if let special = try specialValue(type) { return special }
        return try T(from: self)
    }

    /// The types JSON reads its own way (`JSONValueDecoder`); nil for any other type.
    private func specialValue<T>(_ type: T.Type) throws -> T? {
        if type == Date.self {
            let text = try decode(String.self)
            guard let date = (try? JSONValueEncoder.dateStyle.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text)) else {
                throw corrupted("\"\(text)\" is not an ISO 8601 date")
            }
            return date as? T
        }
        if type == Data.self {
            let text = try decode(String.self)
            guard let data = Data(base64Encoded: text) else { throw corrupted("the string is not base64") }
            return data as? T
        }
        if type == URL.self {
            let text = try decode(String.self)
            guard let url = URL(string: text) else { throw corrupted("\"\(text)\" is not a URL") }
            return url as? T
        }
        if type == Decimal.self {
            guard case .number(let lexeme) = value, let decimal = Decimal(string: lexeme) else { throw mismatch(type, expected: "a number") }
            return decimal as? T
        }
        return nil
    }

    private func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard case .number(let lexeme) = value else { throw mismatch(type, expected: "a number") }
        if let exact = I(lexeme) { return exact }
        // A number with a fraction or exponent (3.0, 1e3) only if it denotes an integer exactly.
        guard let digits = Self.integerDigits(lexeme) else { throw mismatch(type, expected: "an integer") }
        if let integral = I(digits) { return integral }
        throw corrupted("the number \(lexeme) does not fit in \(I.self)")
    }

    /// The integer a JSON number lexeme denotes exactly, in decimal digits (`-` for a negative
    /// one, `0` for zero): `3.0` → `3`, `1e3` → `1000`, `-2.50e1` → `-25`; nil for a lexeme that
    /// denotes no integer (`1.5`, `1.0000000000000001`, `1e-1`) or that is not a number. An integer
    /// of more than 400 digits is given as its first 400, which fit in no integer type.
    static func integerDigits(_ lexeme: String) -> String? {
        var text = Substring(lexeme), negative = false
        if text.first == "-" { negative = true; text = text.dropFirst() }
        var exponent = 0
        if let marker = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            var power = text[text.index(after: marker)...], sign = 1
            if power.first == "+" || power.first == "-" { sign = power.first == "-" ? -1 : 1; power = power.dropFirst() }
            guard !power.isEmpty, power.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            let magnitude = power.drop { $0 == "0" }
            exponent = sign * (magnitude.count > 9 ? 1_000_000_000 : Int(magnitude) ?? 0)
            text = text[..<marker]
        }
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty,
              (whole + (parts.count > 1 ? parts[1] : "")).allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        let fraction = parts.count > 1 ? parts[1] : ""
        var significand = Substring(String(whole + fraction).drop { $0 == "0" })
        exponent -= fraction.count
        while significand.last == "0" { significand = significand.dropLast(); exponent += 1 }
        if significand.isEmpty { return "0" }
        guard exponent >= 0 else { return nil }
        let zeros = String(repeating: "0", count: min(exponent, 400))
        return String((negative ? "-" : "") + significand + zeros).prefix(401).description
    }

    private func floatingPoint<F: BinaryFloatingPoint & LosslessStringConvertible>(_ type: F.Type) throws -> F {
        guard case .number(let lexeme) = value else { throw mismatch(type, expected: "a number") }
        guard let number = F(lexeme), number.isFinite else { throw corrupted("the number \(lexeme) does not fit in \(F.self)") }
        return number
    }

    // MARK: Errors

    func mismatch(_ type: Any.Type, expected: String) -> DecodingError {
        if value == .null {
            return DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "expected \(expected), found null"))
        }
        return DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(Self.describe(value))"))
    }

    func corrupted(_ reason: String) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: reason))
    }

    /// What a value is, for a message: `a string`, `the number 3.5`, `an object`.
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let bool): "the boolean \(bool)"
        case .number(let lexeme): "the number \(lexeme)"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// An object's members, read by a keyed container that notes each key asked for in the shape.
struct ObjectDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let decoder: ValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        decoder.shape.readAllKeys()
        return members.keys.compactMap { Key(stringValue: $0) }
    }

    func contains(_ key: Key) -> Bool {
        decoder.shape.read(key.stringValue)
        return members[key.stringValue] != nil
    }

    /// The decoder of member `key`; a missing member is `keyNotFound`.
    private func child(_ key: any CodingKey) throws -> ValueDecoder {
        decoder.shape.read(key.stringValue)
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
        }
        return decoder.child(value, at: key, shape: decoder.shape.member(key.stringValue))
    }

    func decodeNil(forKey key: Key) throws -> Bool { try child(key).decodeNil() }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try child(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decode(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }

    func superDecoder() throws -> any Decoder { try superDecoder(named: AnyCodingKey("super")) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try superDecoder(named: key) }

    private func superDecoder(named key: any CodingKey) throws -> any Decoder {
        decoder.shape.read(key.stringValue)
        return decoder.child(members[key.stringValue] ?? .null, at: key, shape: decoder.shape.member(key.stringValue))
    }
}

/// An array's elements, read in order by an unkeyed container; each element's shape is noted.
struct ArrayDecodingContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let decoder: ValueDecoder
    private(set) var currentIndex = 0

    init(elements: [JSONValue], decoder: ValueDecoder) { (self.elements, self.decoder) = (elements, decoder) }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The decoder of the next element, moving past it; past the end is `valueNotFound`.
    private mutating func next(_ type: Any.Type) throws -> ValueDecoder {
        let key = AnyCodingKey(index: currentIndex)
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: codingPath + [key], debugDescription: "the array has no more elements"))
        }
        defer { currentIndex += 1 }
        return decoder.child(elements[currentIndex], at: key, shape: decoder.shape.element(currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type).decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next(type).decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type).decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type).decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next(type).decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next(type).decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next(type).decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next(type).decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next(type).decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next(type).decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next(type).decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next(type).decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next(type).decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next(type).decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next([String: Any].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next([Any].self).unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next(Any.self) }
}
