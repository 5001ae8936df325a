import ConcordModel
import Foundation

/// Encodes an `Encodable` value as a `JSONValue`, the form `Transaction.put` writes as canonical
/// JSON, so an app's typed records and the CLI's JSON make identical bytes.
///
/// How values are written:
/// - integers (`Int`, `Int8`…`UInt64`) exactly, as decimal digits;
/// - `Double` and `Float` in Swift's shortest round-trip form (`2.5`, `3.0`, `1e-05`, `1e+20`);
///   NaN and the infinities are refused (`EncodingError.invalidValue`), JSON has no such numbers;
/// - `Decimal` as its decimal digits (NaN refused);
/// - `Date` as an ISO 8601 string in UTC to the millisecond (`2026-01-01T14:30:00.000Z`):
///   finer fractions are cut, and such strings sort as the dates do;
/// - `Data` as a base64 string (standard alphabet, padded); `URL` as its absolute string;
/// - `nil` optionals are left out (`encodeIfPresent`), an explicit `encodeNil` is `null`;
/// - dictionaries with `String` or `Int` keys as objects, other collections as arrays.
public struct JSONValueEncoder: Sendable {
    /// Values handed to the encoded types through `Encoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

    /// An encoder with no user info.
    public init() {}

    /// `value` as a JSON value; throws `EncodingError` for what JSON cannot hold, or what `value`
    /// itself throws.
    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        try ValueEncoder.node(for: value, codingPath: [], userInfo: userInfo.mapValues { $0 as Any }).resolved(at: [])
    }

    /// The ISO 8601 form dates are written in and read from.
    static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}

/// A value being encoded: finished, or a container still filled through its reference, or an
/// encoder handed out by `superEncoder` whose value is read at the end.
enum EncodedNode {
    case value(JSONValue)
    case object(EncodedObject)
    case array(EncodedArray)
    case deferred(ValueEncoder)

    /// The finished JSON value; an encoder that encoded nothing is an error at `path`.
    func resolved(at path: [any CodingKey]) throws -> JSONValue {
        switch self {
        case .value(let value): return value
        case .object(let object):
            var members = [String: JSONValue](minimumCapacity: object.members.count)
            for (key, node) in object.members { members[key] = try node.resolved(at: path + [AnyCodingKey(key)]) }
            return .object(members)
        case .array(let array):
            return .array(try array.elements.enumerated().map { try $1.resolved(at: path + [AnyCodingKey(index: $0)]) })
        case .deferred(let encoder):
            guard let node = encoder.node else {
                throw EncodingError.invalidValue((), .init(codingPath: path, debugDescription: "the value encoded nothing"))
            }
            return try node.resolved(at: path)
        }
    }
}

/// An object's members while it is encoded (a reference, so nested containers fill it in place).
final class EncodedObject {
    var members: [String: EncodedNode] = [:]
}

/// An array's elements while it is encoded.
final class EncodedArray {
    var elements: [EncodedNode] = []
}

/// A coding key made at run time: an object member's name or an array index.
struct AnyCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(_ string: String) { (stringValue, intValue) = (string, nil) }
    init(index: Int) { (stringValue, intValue) = ("Index \(index)", index) }
    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}

/// The `Encoder` handed to one value's `encode(to:)`.
final class ValueEncoder: Encoder {
    let codingPath: [any CodingKey]
    let userInfo: [CodingUserInfoKey: Any]
    /// What the value encoded so far.
    var node: EncodedNode?

    init(codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) {
        (self.codingPath, self.userInfo) = (codingPath, userInfo)
    }

    /// The node of `value`: the types JSON writes its own way (`JSONValueEncoder`), else what its
    /// `encode(to:)` makes.
    static func node<T: Encodable>(for value: T, codingPath: [any CodingKey], userInfo: [CodingUserInfoKey: Any]) throws -> EncodedNode {
        if let special = try specialValue(value, codingPath: codingPath) { return .value(special) }
        let encoder = ValueEncoder(codingPath: codingPath, userInfo: userInfo)
        try value.encode(to: encoder)
        guard let node = encoder.node else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "\(T.self) encoded nothing"))
        }
        return node
    }

    private static func specialValue<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> JSONValue? {
        switch value {
        case let json as JSONValue: return json
        case let date as Date: return .string(JSONValueEncoder.dateStyle.format(date))
        case let data as Data: return .string(data.base64EncodedString())
        case let url as URL: return .string(url.absoluteString)
        case let decimal as Decimal:
            guard !decimal.isNaN else { throw invalid(value, codingPath, "NaN is not a JSON number") }
            return .number(decimal.description)
        default: return nil
        }
    }

    static func invalid(_ value: Any, _ codingPath: [any CodingKey], _ reason: String) -> EncodingError {
        EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: reason))
    }

    /// A floating-point number in its shortest round-trip form; NaN and infinities refused.
    static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F, _ codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else { throw invalid(value, codingPath, "\(value) is not a JSON number") }
        return .number(value.description)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: EncodedObject
        if case .object(let existing)? = node { object = existing } else {
            object = EncodedObject()
            node = .object(object)
        }
        return KeyedEncodingContainer(ObjectEncodingContainer(object: object, encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: EncodedArray
        if case .array(let existing)? = node { array = existing } else {
            array = EncodedArray()
            node = .array(array)
        }
        return ArrayEncodingContainer(array: array, encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { SingleValueEncoding(encoder: self) }

    /// The node of a child value at `key` below this encoder's path.
    func child<T: Encodable>(_ value: T, at key: any CodingKey) throws -> EncodedNode {
        try Self.node(for: value, codingPath: codingPath + [key], userInfo: userInfo)
    }
}

/// An object's members, written by a keyed container.
struct ObjectEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: EncodedObject
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: JSONValue, _ key: Key) { object.members[key.stringValue] = .value(value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try ValueEncoder.number(value, codingPath + [key]), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(try ValueEncoder.number(value, codingPath + [key]), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.members[key.stringValue] = try encoder.child(value, at: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let nested = EncodedObject()
        object.members[key.stringValue] = .object(nested)
        let child = ValueEncoder(codingPath: codingPath + [key], userInfo: encoder.userInfo)
        return KeyedEncodingContainer(ObjectEncodingContainer<NestedKey>(object: nested, encoder: child))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = EncodedArray()
        object.members[key.stringValue] = .array(nested)
        return ArrayEncodingContainer(array: nested, encoder: ValueEncoder(codingPath: codingPath + [key], userInfo: encoder.userInfo))
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: AnyCodingKey("super")) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let child = ValueEncoder(codingPath: codingPath + [key], userInfo: encoder.userInfo)
        object.members[key.stringValue] = .deferred(child)
        return child
    }
}

/// An array's elements, written by an unkeyed container.
struct ArrayEncodingContainer: UnkeyedEncodingContainer {
    let array: EncodedArray
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }
    var count: Int { array.elements.count }

    private var nextKey: AnyCodingKey { AnyCodingKey(index: array.elements.count) }
    private func append(_ value: JSONValue) { array.elements.append(.value(value)) }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try ValueEncoder.number(value, codingPath + [nextKey])) }
    mutating func encode(_ value: Float) throws { append(try ValueEncoder.number(value, codingPath + [nextKey])) }
    mutating func encode(_ value: Int) throws { append(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { append(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { append(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { append(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { append(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { append(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { append(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { append(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { append(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { append(.number(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        array.elements.append(try encoder.child(value, at: nextKey))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let nested = EncodedObject()
        let child = ValueEncoder(codingPath: codingPath + [nextKey], userInfo: encoder.userInfo)
        array.elements.append(.object(nested))
        return KeyedEncodingContainer(ObjectEncodingContainer<NestedKey>(object: nested, encoder: child))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = EncodedArray()
        let child = ValueEncoder(codingPath: codingPath + [nextKey], userInfo: encoder.userInfo)
        array.elements.append(.array(nested))
        return ArrayEncodingContainer(array: nested, encoder: child)
    }

    mutating func superEncoder() -> any Encoder {
        let child = ValueEncoder(codingPath: codingPath + [nextKey], userInfo: encoder.userInfo)
        array.elements.append(.deferred(child))
        return child
    }
}

/// A single value, written straight into its encoder's node.
struct SingleValueEncoding: SingleValueEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: JSONValue) { encoder.node = .value(value) }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(value)) }
    mutating func encode(_ value: Double) throws { set(try ValueEncoder.number(value, codingPath)) }
    mutating func encode(_ value: Float) throws { set(try ValueEncoder.number(value, codingPath)) }
    mutating func encode(_ value: Int) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { set(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { set(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { set(.number(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.node = try ValueEncoder.node(for: value, codingPath: codingPath, userInfo: encoder.userInfo)
    }
}
