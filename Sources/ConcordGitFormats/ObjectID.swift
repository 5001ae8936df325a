/// A git object id (SHA-1, 20 bytes) as a value, held inline: no allocation, one word to hash.
/// A sync or clone keeps tens of thousands of ids in sets and dictionaries, where an id held as
/// an array cost an allocation, reference counting and a 20-byte hash each.
public struct ObjectID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 20 bytes as big-endian words, so comparing the words compares the bytes.
    private let high: UInt64
    private let middle: UInt64
    private let low: UInt32

    /// Wraps 20 raw bytes (e.g. a SHA-1 digest, or an id inside a tree or index entry).
    package init(raw: UnsafeRawBufferPointer) {
        (high, middle, low) = Self.words(raw)
    }

    package init(bytes: [UInt8]) {
        (high, middle, low) = bytes.withUnsafeBytes(Self.words)
    }

    package init(bytes: ArraySlice<UInt8>) {
        (high, middle, low) = bytes.withUnsafeBytes(Self.words)
    }

    private static func words(_ raw: UnsafeRawBufferPointer) -> (UInt64, UInt64, UInt32) {
        precondition(raw.count == 20, "an object id has 20 bytes")
        return (UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)),
                UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self)))
    }

    /// Parses 40 hex digits.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 40 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(20)
        var index = 0
        while index < 40 {
            guard let high = Self.nibble(utf8[index]), let low = Self.nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        self.init(bytes: out)
    }

    /// The 20 bytes.
    public var bytes: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(20)
        append(to: &out)
        return out
    }

    /// Appends the 20 bytes to `out` (as trees, pack indexes and the index file store ids).
    public func append(to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: middle >> UInt64(shift))) }
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: low >> UInt32(shift))) }
    }

    /// The first byte (a pack index's fan-out bucket).
    public var firstByte: UInt8 { UInt8(truncatingIfNeeded: high >> 56) }

    /// The 40-digit lower-case hex form git prints.
    public var hex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(40)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The first 7 hex digits, as git abbreviates.
    public var short: String { String(hex.prefix(7)) }

    public var description: String { hex }

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool {
        (lhs.high, lhs.middle, lhs.low) < (rhs.high, rhs.middle, rhs.low)
    }

    /// An id is a SHA-1 digest: its first eight bytes are as good a hash as all twenty.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(high)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
