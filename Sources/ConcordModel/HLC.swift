/// A hybrid logical clock timestamp: wall-clock milliseconds plus a counter that orders events within
/// one millisecond.
///
/// The string form `2026-01-01T10:00:00.001Z-0000` is fixed-width, so comparing strings byte by byte
/// gives the same order as comparing values (`wallMillis`, then `counter`).
public struct HLC: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The largest counter value.
    public static let maxCounter = 9999
    /// The earliest representable instant, 0000-01-01T00:00:00.000Z, in Unix milliseconds.
    public static let minWallMillis = CivilTime.minMillis
    /// The latest representable instant, 9999-12-31T23:59:59.999Z, in Unix milliseconds.
    public static let maxWallMillis = CivilTime.maxMillis

    /// Unix time in milliseconds, UTC.
    public let wallMillis: Int64
    /// Orders events within one millisecond, `0...9999`.
    public let counter: Int

    /// Creates a timestamp. Values outside the representable range (years 0000–9999, counter 0–9999)
    /// are clamped into it so the string form always sorts correctly.
    public init(wallMillis: Int64, counter: Int = 0) {
        self.wallMillis = min(max(wallMillis, Self.minWallMillis), Self.maxWallMillis)
        self.counter = min(max(counter, 0), Self.maxCounter)
    }

    /// Parses the exact string form `yyyy-mm-ddThh:mm:ss.mmmZ-cccc`; returns `nil` for anything else.
    public init?(parsing text: String) {
        var text = text
        guard let parsed = text.withUTF8(Self.parse) else { return nil }
        self = parsed
    }

    /// The stamp whose text is `bytes`, as `init(parsing:)` reads it.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> HLC? {
        guard bytes.count == 29, let (ms, length) = CivilTime.parseInstant(bytes, exactFraction: true),
            length == 24, bytes[24] == UInt8(ascii: "-")
        else { return nil }
        var counter = 0
        for i in 25..<29 {
            let d = bytes[i] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            counter = counter * 10 + Int(d)
        }
        return HLC(wallMillis: ms, counter: counter)
    }

    /// `2026-01-01T10:00:00.001Z-0000`.
    public var description: String {
        var out: [UInt8] = []
        out.reserveCapacity(29)
        append(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// The length of ``description``: always 29 bytes, as the values are clamped into range.
    static let textLength = 29

    /// Writes ``description``'s 29 bytes at `target`.
    func write(to target: UnsafeMutablePointer<UInt8>) {
        var text = [UInt8]()
        text.reserveCapacity(Self.textLength)
        append(to: &text)
        text.withUnsafeBufferPointer { target.update(from: $0.baseAddress!, count: Self.textLength) }
    }

    /// Appends ``description``'s bytes to `out`.
    func append(to out: inout [UInt8]) {
        CivilTime.appendInstant(wallMillis, to: &out)
        out.append(UInt8(ascii: "-"))
        CivilTime.appendDigits(Int64(counter), width: 4, to: &out)
    }

    /// Ordered by wall time, then counter.
    public static func < (lhs: HLC, rhs: HLC) -> Bool {
        (lhs.wallMillis, lhs.counter) < (rhs.wallMillis, rhs.counter)
    }
}
