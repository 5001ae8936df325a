/// A git object id (SHA-1, 20 bytes) as a value.
public struct ObjectID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Wraps 20 raw bytes (e.g. a SHA-1 digest).
    package init(bytes: [UInt8]) {
        self.bytes = bytes
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
        bytes = out
    }

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

    public static func < (lhs: ObjectID, rhs: ObjectID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
