/// A quick yes for the record files concord writes: a live record in the canonical layout whose
/// data holds only plain values. Checking a clone's records is decoding each one in full
/// (`Record.decode`), and a clone checks every record: bench row B5's 10,000 took ~14 ms on one
/// core that way and ~3 ms this way.
///
/// It only ever says yes when `Record.decode` accepts the bytes as a record of that id and kind:
/// it accepts a strict subset of what the parser and decoder do, and answers false (then the
/// caller decodes in full, which also says what is wrong) for anything else: a tombstone, field
/// stamps, `lastDeleted`, nested values, escapes or any byte outside printable ASCII in a string,
/// keys out of order. A test feeds both thousands of records and mutations of them.
///
/// - the top-level members are exactly `data`, `device`, `id`, `kind`, `updatedAt`, `updatedBy`,
///   in that order (so none is missing, unknown or repeated);
/// - `data` is an object whose keys increase strictly (so none repeats) and whose values are
///   plain strings, numbers, `true`, `false` or `null` (whitespace, numbers and literals read by
///   `JSONParser`'s own code);
/// - strings hold only bytes 0x20–0x7E other than `"` and `\` (no escapes: text as it is);
/// - `id` and `kind` are the ones given, both valid ids; `updatedAt` is a stamp `HLC` reads.
struct PlainRecordScan {
    private var parser: JSONParser

    /// Whether `bytes` are certainly a valid live record `id` of kind `kind` (see above).
    static func accepts(_ bytes: [UInt8], id: String, kind: String) -> Bool {
        guard RecordID.isValid(id), RecordID.isValid(kind) else { return false }
        return bytes.withUnsafeBufferPointer { buffer in
            var scan = PlainRecordScan(parser: JSONParser(bytes: buffer))
            return scan.record(id: id, kind: kind)
        }
    }

    private var bytes: UnsafeBufferPointer<UInt8> { parser.bytes }

    private mutating func record(id: String, kind: String) -> Bool {
        guard take(UInt8(ascii: "{")), key("data"), dataObject(), take(UInt8(ascii: ",")),
              key("device"), plainString() != nil, take(UInt8(ascii: ",")),
              key("id"), let idText = plainString(), take(UInt8(ascii: ",")),
              key("kind"), let kindText = plainString(), take(UInt8(ascii: ",")),
              key("updatedAt"), let stamp = plainString(), take(UInt8(ascii: ",")),
              key("updatedBy"), plainString() != nil, take(UInt8(ascii: "}")) else { return false }
        parser.skipWhitespace()
        return parser.pos == bytes.count
            && bytes[idText].elementsEqual(id.utf8) && bytes[kindText].elementsEqual(kind.utf8)
            && HLC.parse(UnsafeBufferPointer(rebasing: bytes[stamp])) != nil
    }

    /// `{}` or `{"key": plain value, …}` with keys in strictly increasing byte order.
    private mutating func dataObject() -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        parser.skipWhitespace()
        if parser.peek() == UInt8(ascii: "}") {
            parser.pos += 1
            return true
        }
        var previous: Range<Int>?
        while true {
            guard let key = plainString(), previous.map({ bytes[$0].lexicographicallyPrecedes(bytes[key]) }) ?? true,
                  take(UInt8(ascii: ":")), plainValue() else { return false }
            previous = key
            parser.skipWhitespace()
            switch parser.peek() {
            case UInt8(ascii: ","): parser.pos += 1
            case UInt8(ascii: "}"):
                parser.pos += 1
                return true
            default: return false
            }
        }
    }

    private mutating func plainValue() -> Bool {
        parser.skipWhitespace()
        switch parser.peek() {
        case UInt8(ascii: "\""): return plainString() != nil
        case UInt8(ascii: "t"): return (try? parser.parseLiteral("true", .bool(true))) != nil
        case UInt8(ascii: "f"): return (try? parser.parseLiteral("false", .bool(false))) != nil
        case UInt8(ascii: "n"): return (try? parser.parseLiteral("null", .null)) != nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return (try? parser.scanNumber()) != nil
        default: return false
        }
    }

    /// `"name":` for the member expected next.
    private mutating func key(_ name: StaticString) -> Bool {
        guard let text = plainString(),
              bytes[text].elementsEqual(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)) else { return false }
        return take(UInt8(ascii: ":"))
    }

    /// A string of printable ASCII without escapes; the range of its content.
    private mutating func plainString() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = parser.pos
        while parser.pos < bytes.count {
            let byte = bytes[parser.pos]
            parser.pos += 1
            if byte == UInt8(ascii: "\"") { return start..<(parser.pos - 1) }
            guard byte >= 0x20, byte <= 0x7E, byte != UInt8(ascii: "\\") else { return nil }
        }
        return nil
    }

    /// Skips whitespace, then takes `byte` if it is next.
    private mutating func take(_ byte: UInt8) -> Bool {
        parser.skipWhitespace()
        guard parser.peek() == byte else { return false }
        parser.pos += 1
        return true
    }
}
