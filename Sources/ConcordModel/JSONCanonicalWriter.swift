import Foundation

extension JSONValue {
    /// The canonical pretty form used for record files.
    ///
    /// Object keys sorted by their UTF-8 bytes, 2-space indent, `"key": value`, one array element per line,
    /// `{}` and `[]` for empty containers, numbers as their lexeme, and a trailing newline. Strings escape
    /// only `"`, `\` and U+0000–U+001F (`\b \f \n \r \t`, else `\u00xx`); all else is raw UTF-8.
    public func canonicalBytes() -> [UInt8] {
        var writer = CanonicalWriter(pretty: true)
        writer.out.reserveCapacity(256)
        writer.write(self, indent: 0)
        writer.out.append(0x0A)
        return writer.out
    }

    /// The canonical compact form used for JSON Lines: the same rules as ``canonicalBytes()`` on one line,
    /// with no spaces and no trailing newline, e.g. `{"a":1,"b":[1,2]}`.
    public func canonicalLine() -> [UInt8] {
        var out: [UInt8] = []
        appendCanonicalLine(to: &out)
        return out
    }

    /// Appends ``canonicalLine()`` to `buffer`, for writing many lines into one buffer.
    public func appendCanonicalLine(to buffer: inout [UInt8]) {
        var writer = CanonicalWriter(pretty: false)
        swap(&writer.out, &buffer)
        writer.out.reserveCapacity(writer.out.count + 128)
        writer.write(self, indent: 0)
        swap(&writer.out, &buffer)
    }

    /// ``canonicalLine()`` as a `String`.
    public var canonicalLineString: String { String(decoding: canonicalLine(), as: UTF8.self) }
}

/// Whether `a` sorts before `b` by UTF-8 bytes (the canonical key order).
func utf8Precedes(_ a: String, _ b: String) -> Bool {
    let fast = a.utf8.withContiguousStorageIfAvailable { pa in
        b.utf8.withContiguousStorageIfAvailable { pb -> Bool in
            let n = min(pa.count, pb.count)
            if n > 0, let baseA = pa.baseAddress, let baseB = pb.baseAddress {
                let c = memcmp(baseA, baseB, n)
                if c != 0 { return c < 0 }
            }
            return pa.count < pb.count
        }
    }
    if let fast, let result = fast { return result }
    return a.utf8.lexicographicallyPrecedes(b.utf8)
}

/// Appends canonical JSON to one growing byte buffer.
struct CanonicalWriter {
    let pretty: Bool
    var out: [UInt8] = []

    init(pretty: Bool) { self.pretty = pretty }

    mutating func write(_ value: JSONValue, indent: Int) {
        switch value {
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool(let b):
            out.append(contentsOf: b ? "true".utf8 : "false".utf8)
        case .number(let lexeme):
            out.append(contentsOf: lexeme.utf8)
        case .string(let s):
            writeString(s)
        case .array(let elements):
            guard !elements.isEmpty else {
                out.append(contentsOf: "[]".utf8)
                return
            }
            out.append(UInt8(ascii: "["))
            for (i, element) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                write(element, indent: indent + 1)
            }
            newline(indent)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else {
                out.append(contentsOf: "{}".utf8)
                return
            }
            out.append(UInt8(ascii: "{"))
            for (i, member) in members.sorted(by: { utf8Precedes($0.key, $1.key) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1)
                writeString(member.key)
                out.append(UInt8(ascii: ":"))
                if pretty { out.append(0x20) }
                write(member.value, indent: indent + 1)
            }
            newline(indent)
            out.append(UInt8(ascii: "}"))
        }
    }

    @inline(__always) mutating func newline(_ indent: Int) {
        guard pretty else { return }
        Self.appendNewline(indent, to: &out)
    }

    /// A newline and `indent` levels of 2-space indentation, appended byte by byte (a generic
    /// `repeatElement` append costs several times more per record).
    @inline(__always) static func appendNewline(_ indent: Int, to out: inout [UInt8]) {
        out.append(0x0A)
        for _ in 0..<(indent * 2) { out.append(0x20) }
    }

    mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { Self.appendQuoted($0, to: &out) }
    }

    /// Appends `utf8` as a canonical JSON string: quoted, escaping only `"`, `\\` and control characters.
    static func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        for i in 0..<utf8.count {
            let b = utf8[i]
            if b >= 0x20 && b != UInt8(ascii: "\"") && b != UInt8(ascii: "\\") { continue }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
            appendEscape(b, to: &out)
            runStart = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        out.append(UInt8(ascii: "\""))
    }

    static func appendEscape(_ b: UInt8, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(b)
        case 0x08: out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "f"))
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        default:
            let hex = Array("0123456789abcdef".utf8)
            out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 0xF)]])
        }
    }
}
