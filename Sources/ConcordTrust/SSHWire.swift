import Foundation

/// Builds SSH wire-format data: big-endian `uint32`s and length-prefixed `string`s (RFC 4251 §5).
struct SSHWriter {
    private(set) var bytes: [UInt8] = []

    mutating func uint32(_ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
    }

    mutating func string(_ value: [UInt8]) {
        uint32(UInt32(value.count))
        bytes += value
    }

    mutating func string(_ value: String) {
        string(Array(value.utf8))
    }

    mutating func raw(_ value: [UInt8]) {
        bytes += value
    }
}

/// Reads SSH wire-format data; every read past the end throws the error the reader was made with,
/// so each format reports truncation in its own terms.
struct SSHReader {
    private let bytes: [UInt8]
    private var offset = 0
    private let truncated: TrustError

    init(_ bytes: [UInt8], truncated: TrustError) {
        self.bytes = bytes
        self.truncated = truncated
    }

    var isAtEnd: Bool { offset == bytes.count }

    /// The bytes not read yet.
    var remaining: [UInt8] { Array(bytes[offset...]) }

    mutating func raw(_ count: Int) throws(TrustError) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw truncated }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func uint32() throws(TrustError) -> UInt32 {
        try raw(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func string() throws(TrustError) -> [UInt8] {
        let length = try uint32()
        guard length <= UInt32(Int32.max) else { throw truncated }
        return try raw(Int(length))
    }

    /// A `string` decoded as UTF-8 (invalid sequences are repaired, which only matters for messages).
    mutating func text() throws(TrustError) -> String {
        String(decoding: try string(), as: UTF8.self)
    }
}

/// PEM-like armor as OpenSSH writes it: a BEGIN line, base64 wrapped at 70 columns, an END line.
enum Armor {
    static let columns = 70

    /// Wraps `bytes` between `-----BEGIN <label>-----` and `-----END <label>-----`; every line,
    /// the END line included, ends with `\n` (as ssh-keygen writes it).
    static func wrap(_ bytes: [UInt8], label: String) -> String {
        let encoded = Data(bytes).base64EncodedString()
        var text = "-----BEGIN \(label)-----\n"
        var line = encoded[...]
        while !line.isEmpty {
            text += line.prefix(columns) + "\n"
            line = line.dropFirst(columns)
        }
        return text + "-----END \(label)-----\n"
    }

    /// Finds the armor labelled `label` in `text` and decodes its base64 body.
    ///
    /// Tolerates CRLF line ends, leading and trailing blanks on each line (git indents the
    /// continuation lines of a header by one space) and text before or after the armor.
    /// - Parameter failure: turns a reason into the caller's error.
    static func unwrap(
        _ text: String, label: String, failure: (String) -> TrustError
    ) throws(TrustError) -> [UInt8] {
        // Lines are split and trimmed on the UTF-8 bytes: splitting the text into Characters was
        // ~13% of verifying a commit's signature (bench row B7). The lines are the same: a line end
        // (LF, CR, CRLF) is always a Character of its own, and a line that is the BEGIN or END
        // line, or base64, is ASCII either way (a CRLF only adds an empty line, which changes neither).
        let lines = Array(text.utf8).split(omittingEmptySubsequences: false) { $0 == 0x0A || $0 == 0x0D }.map(trimmingBlanks)
        let beginLine = "-----BEGIN \(label)-----", endLine = "-----END \(label)-----"
        guard let begin = lines.firstIndex(where: { $0.elementsEqual(beginLine.utf8) }) else {
            throw failure("no '-----BEGIN \(label)-----' line")
        }
        guard let end = lines[(begin + 1)...].firstIndex(where: { $0.elementsEqual(endLine.utf8) }) else {
            throw failure("no '-----END \(label)-----' line; the text is truncated")
        }
        let body = Array(lines[(begin + 1)..<end].joined())
        guard !body.isEmpty else { throw failure("empty body") }
        guard let data = Data(base64Encoded: Data(body)) else { throw failure("invalid base64 body") }
        return Array(data)
    }

    /// `line` without leading and trailing spaces and tabs.
    private static func trimmingBlanks(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var line = line
        while let first = line.first, first == 0x20 || first == 0x09 { line = line.dropFirst() }
        while let last = line.last, last == 0x20 || last == 0x09 { line = line.dropLast() }
        return line
    }
}
