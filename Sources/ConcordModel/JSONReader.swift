import Dispatch
import Foundation

/// Reads one JSON document front to back without building it first: objects member by member,
/// arrays element by element, and each value as a `JSONValue`, as canonical bytes, or skipped.
/// For bulk input (a dump of thousands of records) whose values are mostly written out again.
/// The document is checked as strictly as by `JSONValue.parse(_:)` (of bytes),
/// and syntax errors are the same ``JSONParseError``s; a read of the wrong type throws one too.
public struct JSONReader: ~Copyable {
    /// What the next value is.
    public enum ValueType: Sendable {
        /// The six JSON value types.
        case object, array, string, number, bool, null
    }

    var parser: JSONParser
    private var keyStack: [String] = []

    private init(_ buffer: UnsafeBufferPointer<UInt8>) { parser = JSONParser(bytes: buffer) }

    /// Runs `body` on a reader positioned at the document's value, then checks that nothing but
    /// whitespace follows it.
    public static func read<T>(_ bytes: [UInt8], _ body: (inout JSONReader) throws -> T) throws -> T {
        try bytes.withUnsafeBufferPointer { buffer in
            var reader = JSONReader(buffer)
            try reader.run { (parser) throws(JSONParser.Failure) in
                try parser.rejectByteOrderMark()
                parser.skipWhitespace()
            }
            let value = try body(&reader)
            try reader.run { (parser) throws(JSONParser.Failure) in try parser.expectEnd() }
            return value
        }
    }

    /// The type of the value at the reading position; nil if none starts there (reading it throws).
    public var nextType: ValueType? {
        switch parser.peek() {
        case UInt8(ascii: "{"): .object
        case UInt8(ascii: "["): .array
        case UInt8(ascii: "\""): .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): .bool
        case UInt8(ascii: "n"): .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): .number
        default: nil
        }
    }

    /// Reads an object, calling `member` with each key and the reader at that key's value. A value
    /// `member` leaves unread is skipped (and still checked). Duplicate keys are an error.
    public mutating func readObject(_ member: (String, inout JSONReader) throws -> Void) throws {
        try expect(.object)
        if try run({ (parser) throws(JSONParser.Failure) in try parser.openContainer(closing: UInt8(ascii: "}")) }) { return }
        // The keys read so far sit on `keyStack` above `base` (objects read inside a member's
        // value push theirs above and take them off again), so reading an object allocates nothing.
        let base = keyStack.count
        defer { keyStack.removeSubrange(base...) }
        var keySet: Set<String>? = nil
        while true {
            let first = keyStack.count == base
            let (key, keyOffset) = try run { (parser) throws(JSONParser.Failure) in
                try parser.expectKey(first: first)
                let offset = parser.pos
                let key = try parser.parseString()
                try parser.expectColon()
                return (key, offset)
            }
            try readOne { reader in try member(key, &reader) }
            if keyStack.count - base >= 16, keySet == nil { keySet = Set(keyStack[base...]) }
            let repeated = keySet != nil ? !keySet!.insert(key).inserted : keyStack[base...].contains(key)
            if repeated {
                throw parser.locate(JSONParser.Failure(offset: keyOffset, message: "duplicate key \(quoted(key)) in object"))
            }
            keyStack.append(key)
            if try run({ (parser) throws(JSONParser.Failure) in try parser.nextMember(closing: UInt8(ascii: "}")) }) { return }
        }
    }

    /// Reads an array, calling `element` with each index and the reader at that element. An element
    /// `element` leaves unread is skipped (and still checked).
    public mutating func readArray(_ element: (Int, inout JSONReader) throws -> Void) throws {
        try expect(.array)
        if try run({ (parser) throws(JSONParser.Failure) in try parser.openContainer(closing: UInt8(ascii: "]")) }) { return }
        var index = 0
        while true {
            try readOne { reader in try element(index, &reader) }
            index += 1
            if try run({ (parser) throws(JSONParser.Failure) in try parser.nextMember(closing: UInt8(ascii: "]")) }) { return }
        }
    }

    /// Reads a large array (`minimumBytes` or more of text from its start to the document's end)
    /// as two halves on two threads, split at
    /// an element boundary near its middle: `element` is called with the half (0 or 1), the
    /// element's index and the reader at it, from both threads at once, so it may only touch
    /// state of its own half. Returns false, with nothing consumed, when the array is small or a
    /// half fails; the caller then discards what the halves made and reads the array with
    /// `readArray`, which reports any error exactly.
    public mutating func readArrayInHalves(minimumBytes: Int = 256 << 10,
                                           _ element: (_ half: Int, _ index: Int, inout JSONReader) throws -> Void) -> Bool {
        let start = parser.pos, bytes = parser.bytes
        guard nextType == .array, bytes.count - start >= minimumBytes,
              let (split, firstCount) = Self.middleBoundary(of: bytes, arrayAt: start) else { return false }
        let depth = parser.depth + 1
        let ends = UncheckedBox<[Int?]>([nil, nil])
        withoutActuallyEscaping(element) { element in
            let work = UncheckedBox(element), text = UncheckedBox(bytes)
            DispatchQueue.concurrentPerform(iterations: 2) { half in
                var reader = JSONReader(text.value)
                reader.parser.depth = depth
                reader.parser.pos = half == 0 ? start + 1 : split + 1
                var index = half == 0 ? 0 : firstCount
                do {
                    while true {
                        try reader.run { (parser) throws(JSONParser.Failure) in parser.skipWhitespace() }
                        try reader.readOne { reader in try work.value(half, index, &reader) }
                        index += 1
                        try reader.run { (parser) throws(JSONParser.Failure) in parser.skipWhitespace() }
                        if half == 0 && reader.parser.pos >= split { break }
                        if try reader.run({ (parser) throws(JSONParser.Failure) in try parser.nextMember(closing: UInt8(ascii: "]")) }) { break }
                    }
                } catch {
                    return   // read again in order, for the exact error
                }
                ends.set(half, reader.parser.pos)
            }
        }
        guard ends.value[0] == split, let end = ends.value[1] else { return false }
        parser.pos = end
        return true
    }

    /// The comma between two elements of the array at `start` nearest to the middle of the array,
    /// and how many elements come before it; nil if the array has fewer than two elements, or the
    /// scan (which follows strings and nesting only) finds no end to it.
    static func middleBoundary(of bytes: UnsafeBufferPointer<UInt8>, arrayAt start: Int) -> (comma: Int, count: Int)? {
        var depth = 0, index = start
        var commas = [Int]()
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                while index < bytes.count && bytes[index] != UInt8(ascii: "\"") {
                    index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
                }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 {
                    let middle = start + (index - start) / 2
                    guard !commas.isEmpty else { return nil }
                    var low = 0, high = commas.count - 1   // the first comma at or after the middle, else the last
                    while low < high {
                        let probe = (low + high) / 2
                        if commas[probe] < middle { low = probe + 1 } else { high = probe }
                    }
                    return (commas[low], low + 1)
                }
            case UInt8(ascii: ",") where depth == 1:
                commas.append(index)
            default:
                break
            }
            index += 1
        }
        return nil
    }

    /// Reads a string.
    public mutating func readString() throws -> String {
        try expect(.string)
        return try run { (parser) throws(JSONParser.Failure) in try parser.parseString() }
    }

    /// Reads any value as a `JSONValue`.
    public mutating func readValue() throws -> JSONValue {
        try run { (parser) throws(JSONParser.Failure) in try parser.parseValue() }
    }

    /// Reads any value straight into its canonical form, as `canonicalBytes()` (without the final
    /// newline) writes it `indent` levels deep, or as `canonicalLine()` when `pretty` is false.
    public mutating func readCanonical(indent: Int = 0, pretty: Bool = true) throws -> [UInt8] {
        try run { (parser) throws(JSONParser.Failure) in
            var out = [UInt8]()
            out.reserveCapacity(256)
            try parser.transcodeValue(indent: indent, pretty: pretty, into: &out)
            return out
        }
    }

    /// Skips any value, checking it.
    public mutating func skipValue() throws {
        var discarded = [UInt8]()
        try run { (parser) throws(JSONParser.Failure) in try parser.transcodeValue(indent: 0, pretty: false, into: &discarded) }
    }

    /// Describes the value at the reading position for an error message: `an object`, `a string`, ….
    public var nextTypeDescription: String { Self.describe(nextType) }

    /// Throws `error` unless a value of `type` comes next; a value of another type is read
    /// first, so a syntax error in it (a file cut short) is what gets reported.
    public mutating func expect(_ type: ValueType, else error: @autoclosure () -> Error) throws {
        guard nextType != type else { return }
        try skipValue()
        throw error()
    }

    // MARK: Internals

    private mutating func readOne(_ body: (inout JSONReader) throws -> Void) throws {
        let start = parser.pos
        try body(&self)
        if parser.pos == start { try skipValue() }
    }

    private mutating func expect(_ type: ValueType) throws {
        guard nextType == type else {
            // Let the parser name what is wrong (bad syntax), else say which type was expected.
            if nextType == nil { _ = try readValue() }
            throw parser.locate(parser.fail("expected \(Self.describe(type)), found \(nextTypeDescription)"))
        }
    }

    private static func describe(_ type: ValueType?) -> String {
        switch type {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        case nil: "no value"
        }
    }

    /// Runs a parser step, turning its failure into a located `JSONParseError`.
    private mutating func run<T>(_ step: (inout JSONParser) throws(JSONParser.Failure) -> T) throws(JSONParseError) -> T {
        do throws(JSONParser.Failure) { return try step(&parser) } catch { throw parser.locate(error) }
    }
}

/// A value two workers share: read-only, or written at distinct indices under a lock.
private final class UncheckedBox<Value>: @unchecked Sendable {   // unchecked: `readArrayInHalves` gives each worker its half only; `set` writes under `lock`
    private(set) var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }

    func set<Element>(_ index: Int, _ element: Element) where Value == [Element] {
        lock.withLock { value[index] = element }
    }
}
