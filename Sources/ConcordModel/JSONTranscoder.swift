import Foundation

extension JSONValue {
    /// The canonical form of the JSON text `bytes`: exactly `parse(bytes).canonicalBytes()` (or, with
    /// `pretty: false`, `canonicalLine()`), and the same errors, but made in one pass without
    /// building the values. For bulk input, where most values are only to be written out again.
    public static func canonicalize(_ bytes: some Collection<UInt8>, pretty: Bool = true) throws(JSONParseError) -> [UInt8] {
        func run(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<[UInt8], JSONParseError> {
            var parser = JSONParser(bytes: buffer)
            do throws(JSONParser.Failure) {
                try parser.rejectByteOrderMark()
                parser.skipWhitespace()
                var out = [UInt8]()
                out.reserveCapacity(buffer.count + buffer.count / 4)
                try parser.transcodeValue(indent: 0, pretty: pretty, into: &out)
                try parser.expectEnd()
                if pretty { out.append(0x0A) }
                return .success(out)
            } catch {
                return .failure(parser.locate(error))
            }
        }
        let result = bytes.withContiguousStorageIfAvailable(run) ?? Array(bytes).withUnsafeBufferPointer(run)
        return try result.get()
    }
}

/// One member of an object being transcoded: its decoded key (in `JSONParser.keyArena`) and its
/// `"key": value` text (in the output).
struct TranscodedMember {
    var key: Range<Int>
    var text: Range<Int>
}

extension JSONParser {
    /// Writes the value at `pos` to `out` as `CanonicalWriter.write(parseValue(), indent:)` would,
    /// throwing the same failures at the same offsets as `parseValue()`.
    mutating func transcodeValue(indent: Int, pretty: Bool, into out: inout [UInt8]) throws(Failure) {
        guard pos < bytes.count else { throw fail("unexpected end of input; expected a value") }
        switch bytes[pos] {
        case UInt8(ascii: "{"): try transcodeObject(indent: indent, pretty: pretty, into: &out)
        case UInt8(ascii: "["): try transcodeArray(indent: indent, pretty: pretty, into: &out)
        case UInt8(ascii: "\""): try transcodeString(into: &out)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = pos
            try skipScalar()
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<pos]))
        default: throw fail("unexpected \(describeCurrent()); expected a value")
        }
    }

    /// Skips a literal or number at `pos` (validating it), whose text is already canonical.
    mutating func skipScalar() throws(Failure) {
        switch bytes[pos] {
        case UInt8(ascii: "t"): _ = try parseLiteral("true", .null)
        case UInt8(ascii: "f"): _ = try parseLiteral("false", .null)
        case UInt8(ascii: "n"): _ = try parseLiteral("null", .null)
        default: _ = try scanNumber()
        }
    }

    mutating func transcodeArray(indent: Int, pretty: Bool, into out: inout [UInt8]) throws(Failure) {
        if try openContainer(closing: UInt8(ascii: "]")) {
            out.append(contentsOf: "[]".utf8)
            return
        }
        out.append(UInt8(ascii: "["))
        while true {
            Self.newline(indent + 1, pretty: pretty, into: &out)
            try transcodeValue(indent: indent + 1, pretty: pretty, into: &out)
            if try nextMember(closing: UInt8(ascii: "]")) { break }
            out.append(UInt8(ascii: ","))
        }
        Self.newline(indent, pretty: pretty, into: &out)
        out.append(UInt8(ascii: "]"))
    }

    /// Members are written in document order, separators included; if their keys were not in
    /// canonical order, the members' texts are then put in order. Keys are decoded into
    /// `keyArena` and members listed in `memberStack`, both used as stacks by nested objects.
    mutating func transcodeObject(indent: Int, pretty: Bool, into out: inout [UInt8]) throws(Failure) {
        if try openContainer(closing: UInt8(ascii: "}")) {
            out.append(contentsOf: "{}".utf8)
            return
        }
        let membersBase = memberStack.count, keysBase = keyArena.count
        defer {
            memberStack.removeSubrange(membersBase...)
            keyArena.removeSubrange(keysBase...)
        }
        let objectStart = out.count
        out.append(UInt8(ascii: "{"))
        var sorted = true
        // Keys compare as Swift strings (Unicode equivalence), as `parseObject` compares them;
        // byte comparison gives the same answer while every key is ASCII.
        var keySet: Set<String>? = nil, asciiKeys = true
        while true {
            try expectKey(first: memberStack.count == membersBase)
            let keyOffset = pos
            let keyStart = keyArena.count
            let plainKey = try decodeKey()
            let keyEnd = pos
            let key = keyStart..<keyArena.count
            if asciiKeys { asciiKeys = keyArena.withUnsafeBufferPointer { arena in arena[key].allSatisfy { $0 < 0x80 } } }
            try expectColon()
            if memberStack.count > membersBase { out.append(UInt8(ascii: ",")) }
            Self.newline(indent + 1, pretty: pretty, into: &out)
            let textStart = out.count
            if plainKey {
                // Without escapes, control characters or quotes, the key's text is its canonical form.
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[keyOffset..<keyEnd]))
            } else {
                keyArena.withUnsafeBufferPointer { arena in
                    CanonicalWriter.appendQuoted(UnsafeBufferPointer(rebasing: arena[key]), to: &out)
                }
            }
            out.append(UInt8(ascii: ":"))
            if pretty { out.append(0x20) }
            try transcodeValue(indent: indent + 1, pretty: pretty, into: &out)
            if isDuplicate(key, among: membersBase, asciiKeys: asciiKeys, set: &keySet) {
                throw Failure(offset: keyOffset, message: "duplicate key \(quoted(keyString(key))) in object")
            }
            if let last = memberStack.last, memberStack.count > membersBase, !keyPrecedes(last.key, key) { sorted = false }
            memberStack.append(TranscodedMember(key: key, text: textStart..<out.count))
            if try nextMember(closing: UInt8(ascii: "}")) { break }
        }
        if !sorted { reorderMembers(from: membersBase, objectStart: objectStart, indent: indent, pretty: pretty, into: &out) }
        Self.newline(indent, pretty: pretty, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// Appends the decoded key at `pos` to `keyArena` (moved out meanwhile, as `decodeString` mutates the parser).
    /// Returns whether the key had no escapes.
    private mutating func decodeKey() throws(Failure) -> Bool {
        var arena = [UInt8]()
        swap(&arena, &keyArena)
        defer { swap(&arena, &keyArena) }
        return try decodeString(into: &arena)
    }

    /// Rewrites the object begun at `objectStart` with its members in key order.
    private mutating func reorderMembers(from base: Int, objectStart: Int, indent: Int, pretty: Bool, into out: inout [UInt8]) {
        var members = Array(memberStack[base...])
        members.sort { keyPrecedes($0.key, $1.key) }
        var text = [UInt8]()
        text.reserveCapacity(out.count - objectStart)
        text.append(UInt8(ascii: "{"))
        out.withUnsafeBufferPointer { written in
            for (index, member) in members.enumerated() {
                if index > 0 { text.append(UInt8(ascii: ",")) }
                Self.newline(indent + 1, pretty: pretty, into: &text)
                text.append(contentsOf: UnsafeBufferPointer(rebasing: written[member.text]))
            }
        }
        out.replaceSubrange(objectStart..., with: text)
    }

    /// Whether the key just read repeats an earlier key of the object whose members start at `base`.
    /// While all keys are ASCII (`asciiKeys`) and few, bytes are compared; else Swift strings.
    private func isDuplicate(_ key: Range<Int>, among base: Int, asciiKeys: Bool, set: inout Set<String>?) -> Bool {
        if set == nil, asciiKeys, memberStack.count - base < 16 {
            return keyArena.withUnsafeBufferPointer { arena in
                memberStack[base...].contains { $0.key.count == key.count && memcmp(arena.baseAddress! + $0.key.lowerBound, arena.baseAddress! + key.lowerBound, key.count) == 0 }
            }
        }
        if set == nil { set = Set(memberStack[base...].map { keyString($0.key) }) }
        return !set!.insert(keyString(key)).inserted
    }

    private func keyString(_ key: Range<Int>) -> String { String(decoding: keyArena[key], as: UTF8.self) }

    /// The canonical key order: by UTF-8 bytes (as `utf8Precedes`).
    private func keyPrecedes(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        keyArena.withUnsafeBufferPointer { arena in
            let common = min(a.count, b.count)
            let order = common == 0 ? 0 : memcmp(arena.baseAddress! + a.lowerBound, arena.baseAddress! + b.lowerBound, common)
            return order != 0 ? order < 0 : a.count < b.count
        }
    }

    /// Writes the string at `pos` with canonical escapes. One without escapes is copied as it is.
    mutating func transcodeString(into out: inout [UInt8]) throws(Failure) {
        let start = pos + 1
        if try skipPlainString() {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<(pos - 1)]))
            out.append(UInt8(ascii: "\""))
            return
        }
        try decodeEscapedRest(quote: start - 1, contentStart: start)
        scratch.withUnsafeBufferPointer { CanonicalWriter.appendQuoted($0, to: &out) }
    }

    /// Skips the string at `pos` if it has no escapes (validating it) and returns true; returns
    /// false at the first backslash, leaving `pos` somewhere inside the string.
    mutating func skipPlainString() throws(Failure) -> Bool {
        let quote = pos
        pos += 1
        // Eight bytes at a time while none is a quote, a backslash, a control character or
        // non-ASCII (each of which the byte loop below handles).
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while pos + 8 <= bytes.count {
                let word = raw.loadUnaligned(fromByteOffset: pos, as: UInt64.self)
                if Self.hasSpecialByte(word) { break }
                pos += 8
            }
        }
        while pos < bytes.count {
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                pos += 1
                return true
            } else if b == UInt8(ascii: "\\") {
                return false
            } else if b < 0x20 {
                throw controlCharacter(b)
            } else if b < 0x80 {
                pos += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw Failure(offset: quote, message: "unterminated string")
    }

    /// Whether any byte of `word` is `"`, `\`, below 0x20 or above 0x7F (the classic SWAR tests:
    /// a byte's top bit survives `(x - 0x01…) & ~x` only if some byte of `x` was zero, or below
    /// the subtracted value; a false positive only sends the bytes to the byte loop).
    @inline(__always) static func hasSpecialByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let zeroByte = { (x: UInt64) in (x &- ones) & ~x & high }
        let control = (word &- ones &* 0x20) & ~word & high
        return (zeroByte(quote) | zeroByte(backslash) | control | (word & high)) != 0
    }

    /// Appends the decoded bytes of the string at `pos` to `target`.
    /// Returns whether the string had no escapes (so its text, quotes included, is canonical).
    @discardableResult
    mutating func decodeString(into target: inout [UInt8]) throws(Failure) -> Bool {
        let quote = pos, start = pos + 1
        if try skipPlainString() {
            target.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<(pos - 1)]))
            return true
        }
        try decodeEscapedRest(quote: quote, contentStart: start)
        target.append(contentsOf: scratch)
        return false
    }

    @inline(__always) static func newline(_ indent: Int, pretty: Bool, into out: inout [UInt8]) {
        if pretty { CanonicalWriter.appendNewline(indent, to: &out) }
    }
}
