extension JSONValue {
    /// The deepest nesting of arrays and objects `parse(_:)` (of bytes) accepts.
    public static let maxNestingDepth = 512

    /// Parses one JSON document from UTF-8 bytes, strictly per RFC 8259.
    ///
    /// Rejects a byte order mark, trailing data after the value, duplicate object keys, invalid escapes,
    /// lone surrogates (escaped or encoded), invalid UTF-8, raw control characters in strings, and
    /// nesting deeper than ``maxNestingDepth``.
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let result = bytes.withContiguousStorageIfAvailable { JSONParser.parse($0) }
            ?? Array(bytes).withUnsafeBufferPointer { JSONParser.parse($0) }
        return try result.get()
    }

    /// Parses one JSON document from a string; see `parse(_:)` (of bytes).
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        return try text.withUTF8 { JSONParser.parse($0) }.get()
    }
}

/// A recursive-descent parser over a contiguous UTF-8 buffer.
struct JSONParser {
    /// An internal failure at a byte offset; converted to line and column once, at the top.
    struct Failure: Error {
        let offset: Int
        let message: String
    }

    let bytes: UnsafeBufferPointer<UInt8>
    var pos = 0
    var depth = 0
    var scratch: [UInt8] = []
    /// Used by the transcoder only (see `transcodeObject`).
    var keyArena: [UInt8] = []
    var memberStack: [TranscodedMember] = []

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> {
        var parser = JSONParser(bytes: bytes)
        do throws(Failure) {
            try parser.rejectByteOrderMark()
            parser.skipWhitespace()
            let value = try parser.parseValue()
            try parser.expectEnd()
            return .success(value)
        } catch {
            return .failure(parser.locate(error))
        }
    }

    func rejectByteOrderMark() throws(Failure) {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            throw Failure(offset: 0, message: "unexpected byte order mark; save the file as UTF-8 without one")
        }
    }

    /// Checks that only whitespace follows the document's value.
    mutating func expectEnd() throws(Failure) {
        skipWhitespace()
        if pos < bytes.count {
            throw Failure(offset: pos, message: "unexpected \(describeCurrent()) after the JSON value")
        }
    }

    // MARK: Values

    mutating func parseValue() throws(Failure) -> JSONValue {
        guard pos < bytes.count else { throw fail("unexpected end of input; expected a value") }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
        case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
        case UInt8(ascii: "n"): return try parseLiteral("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected \(describeCurrent()); expected a value")
        }
    }

    mutating func parseObject() throws(Failure) -> JSONValue {
        if try openContainer(closing: UInt8(ascii: "}")) { return .object([:]) }
        // A record's envelope and its data (depth 1 and 2) hold several members: made at a size
        // that takes them without growing (growing rehashes every key: half the parse time).
        var members = [String: JSONValue](minimumCapacity: depth <= 2 ? 8 : 0)
        while true {
            try expectKey(first: members.isEmpty)
            let keyStart = pos
            let key = try parseString()
            try expectColon()
            let value = try parseValue()
            if members.updateValue(value, forKey: key) != nil {
                throw Failure(offset: keyStart, message: "duplicate key \(quoted(key)) in object")
            }
            if try nextMember(closing: UInt8(ascii: "}")) { return .object(members) }
        }
    }

    mutating func parseArray() throws(Failure) -> JSONValue {
        var elements: [JSONValue] = []
        if try openContainer(closing: UInt8(ascii: "]")) { return .array(elements) }
        while true {
            elements.append(try parseValue())
            if try nextMember(closing: UInt8(ascii: "]")) { return .array(elements) }
        }
    }

    // MARK: Containers (shared by the parser, the transcoder and `JSONReader`)

    /// Enters the object or array whose opening bracket is at `pos`; returns true if it is empty,
    /// with its `closing` bracket consumed too.
    mutating func openContainer(closing: UInt8) throws(Failure) -> Bool {
        try enterContainer()
        pos += 1
        skipWhitespace()
        guard peek() == closing else { return false }
        pos += 1
        depth -= 1
        return true
    }

    /// Checks that an object key starts at `pos`.
    func expectKey(first: Bool) throws(Failure) {
        guard peek() == UInt8(ascii: "\"") else {
            throw fail(first ? "expected '\"' to begin an object key, or '}'" : "expected '\"' to begin an object key")
        }
    }

    /// Consumes the `:` after an object key, and the whitespace around it.
    mutating func expectColon() throws(Failure) {
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else { throw fail("expected ':' after object key") }
        pos += 1
        skipWhitespace()
    }

    /// After a member or element: consumes `,` (returning false) or the container's `closing`
    /// bracket (returning true).
    mutating func nextMember(closing: UInt8) throws(Failure) -> Bool {
        skipWhitespace()
        let object = closing == UInt8(ascii: "}")
        switch peek() {
        case UInt8(ascii: ","):
            pos += 1
            skipWhitespace()
            if peek() == closing {
                throw fail(object ? "expected an object key after ','; trailing commas are not allowed"
                                  : "expected a value after ','; trailing commas are not allowed")
            }
            return false
        case closing:
            pos += 1
            depth -= 1
            return true
        default:
            throw fail(object ? "expected ',' or '}' after object member" : "expected ',' or ']' after array element")
        }
    }

    private mutating func enterContainer() throws(Failure) {
        depth += 1
        if depth > JSONValue.maxNestingDepth {
            throw fail("nesting deeper than \(JSONValue.maxNestingDepth) levels")
        }
    }

    mutating func parseLiteral(_ word: StaticString, _ value: JSONValue) throws(Failure) -> JSONValue {
        let n = word.utf8CodeUnitCount
        let w = UnsafeBufferPointer(start: word.utf8Start, count: n)
        guard pos + n <= bytes.count, bytes[pos..<(pos + n)].elementsEqual(w) else {
            throw fail("unexpected \(describeCurrent()); expected a value")
        }
        pos += n
        return value
    }

    mutating func parseNumber() throws(Failure) -> JSONValue {
        let lexeme = try scanNumber()
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[lexeme]), as: UTF8.self))
    }

    /// Skips a number at `pos`, validating it; returns where its lexeme lies.
    mutating func scanNumber() throws(Failure) -> Range<Int> {
        let start = pos
        if peek() == UInt8(ascii: "-") { pos += 1 }
        switch peek() {
        case UInt8(ascii: "0"):
            pos += 1
            if isDigit(peek()) { throw fail("leading zeros are not allowed in numbers") }
        case UInt8(ascii: "1")...UInt8(ascii: "9"):
            skipDigits()
        default:
            throw fail("expected a digit in number")
        }
        if peek() == UInt8(ascii: ".") {
            pos += 1
            guard isDigit(peek()) else { throw fail("expected a digit after '.' in number") }
            skipDigits()
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            pos += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { pos += 1 }
            guard isDigit(peek()) else { throw fail("expected a digit in number exponent") }
            skipDigits()
        }
        return start..<pos
    }

    // MARK: Helpers

    /// The byte at `pos`, or 0 at the end of input (0 is never valid where a lookahead is tested).
    @inline(__always) func peek() -> UInt8 { pos < bytes.count ? bytes[pos] : 0 }

    @inline(__always) func isDigit(_ b: UInt8) -> Bool { b &- UInt8(ascii: "0") < 10 }

    @inline(__always) mutating func skipDigits() {
        while pos < bytes.count, isDigit(bytes[pos]) { pos += 1 }
    }

    @inline(__always) mutating func skipWhitespace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x0A, 0x0D, 0x09: pos += 1
            default: return
            }
        }
    }

    func fail(_ message: String) -> Failure { Failure(offset: pos, message: message) }

    /// Names the byte at `pos` for an error message.
    func describeCurrent() -> String {
        guard pos < bytes.count else { return "end of input" }
        let b = bytes[pos]
        if b >= 0x21 && b < 0x7F { return "character '\(Character(Unicode.Scalar(b)))'" }
        return "byte 0x\(hex2(b))"
    }

    /// Converts a byte offset into a 1-based line and Unicode-scalar column.
    func locate(_ failure: Failure) -> JSONParseError {
        var line = 1
        var column = 1
        for i in 0..<min(failure.offset, bytes.count) {
            let b = bytes[i]
            if b == 0x0A {
                line += 1
                column = 1
            } else if b & 0xC0 != 0x80 {
                column += 1
            }
        }
        return JSONParseError(line: line, column: column, message: failure.message)
    }
}

/// Two lowercase hex digits.
func hex2(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: [digits[Int(b >> 4)], digits[Int(b & 0xF)]], as: UTF8.self)
}
