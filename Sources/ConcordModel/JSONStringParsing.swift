extension JSONParser {
    /// Parses a string starting at the opening quote at `pos`; validates UTF-8 and escapes.
    mutating func parseString() throws(Failure) -> String {
        let quote = pos, start = pos + 1
        if try skipPlainString() {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(pos - 1)]), as: UTF8.self)
        }
        try decodeEscapedRest(quote: quote, contentStart: start)
        return String(decoding: scratch, as: UTF8.self)
    }

    /// Decodes a string whose first escape is at `pos` into `scratch`, from its content start to
    /// past its closing quote.
    mutating func decodeEscapedRest(quote: Int, contentStart: Int) throws(Failure) {
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[contentStart..<pos]))
        while pos < bytes.count {
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                return
            } else if b == UInt8(ascii: "\\") {
                try parseEscape()
            } else if b < 0x20 {
                throw controlCharacter(b)
            } else if b < 0x80 {
                scratch.append(b)
                pos += 1
            } else {
                let start = pos
                try skipUTF8Sequence()
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<pos]))
            }
        }
        throw Failure(offset: quote, message: "unterminated string")
    }

    /// Decodes the escape at `pos` (a backslash) into `scratch`.
    mutating func parseEscape() throws(Failure) {
        let start = pos
        guard pos + 1 < bytes.count else { throw fail("unterminated escape sequence") }
        let c = bytes[pos + 1]
        switch c {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(c)
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4(at: start + 2)
            pos = start + 6
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                guard pos + 1 < bytes.count, bytes[pos] == UInt8(ascii: "\\"), bytes[pos + 1] == UInt8(ascii: "u"),
                    let low = try? hex4(at: pos + 2), low >= 0xDC00 && low <= 0xDFFF
                else {
                    throw Failure(offset: start, message: "lone surrogate \\u\(hex4String(scalar)); a high surrogate must be followed by a low one")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                pos += 6
            } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                throw Failure(offset: start, message: "lone surrogate \\u\(hex4String(scalar)); a low surrogate must follow a high one")
            }
            appendUTF8(scalar)
            return
        default:
            let shown = c >= 0x21 && c < 0x7F ? "'\\\(Character(Unicode.Scalar(c)))'" : "backslash before byte 0x\(hex2(c))"
            throw fail("invalid escape \(shown); use one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX")
        }
        pos += 2
    }

    /// Reads four hex digits at `offset`.
    func hex4(at offset: Int) throws(Failure) -> UInt32 {
        guard offset + 4 <= bytes.count else {
            throw Failure(offset: offset - 2, message: "invalid \\u escape; expected 4 hex digits")
        }
        var value: UInt32 = 0
        for i in offset..<(offset + 4) {
            let b = bytes[i]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw Failure(offset: offset - 2, message: "invalid \\u escape; expected 4 hex digits")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    func hex4String(_ v: UInt32) -> String {
        hex2(UInt8(v >> 8)).uppercased() + hex2(UInt8(v & 0xFF)).uppercased()
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            scratch.append(UInt8(scalar))
        case ..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | (scalar >> 12) & 0x3F))
            scratch.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// Skips one multi-byte UTF-8 sequence at `pos`, rejecting overlong forms, surrogates and
    /// scalars above U+10FFFF.
    mutating func skipUTF8Sequence() throws(Failure) {
        let lead = bytes[pos]
        var need = 0
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: need = 1
        case 0xE0: need = 2; low = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: need = 2
        case 0xED: need = 2; high = 0x9F
        case 0xF0: need = 3; low = 0x90
        case 0xF1...0xF3: need = 3
        case 0xF4: need = 3; high = 0x8F
        default: throw fail("invalid UTF-8 byte 0x\(hex2(lead)) in string")
        }
        for i in 1...need {
            let at = pos + i
            guard at < bytes.count else { throw fail("truncated UTF-8 sequence in string") }
            let b = bytes[at]
            let ok = i == 1 ? (b >= low && b <= high) : (b & 0xC0 == 0x80)
            if !ok { throw fail("invalid UTF-8 sequence in string") }
        }
        pos += need + 1
    }

    func controlCharacter(_ b: UInt8) -> Failure {
        fail("control character U+00\(hex2(b).uppercased()) in string; escape it (e.g. \\n or \\u00\(hex2(b)))")
    }
}
