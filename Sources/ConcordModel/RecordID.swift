/// The id of one record: its file name without extension.
///
/// 1–128 characters from `A–Z a–z 0–9 . _ -`, and not `.` or `..`, so an id is always a safe file name.
/// Ids order by their bytes.
public struct RecordID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The id as written.
    public let rawValue: String

    /// Validates `raw` as a record id.
    public init(_ raw: String) throws(ModelError) {
        guard Self.isValid(raw) else { throw .invalidRecordID(raw) }
        rawValue = raw
    }

    /// Whether `raw` follows the id rules (also used for kind names and directory segments).
    public static func isValid(_ raw: String) -> Bool {
        isValid(bytes: raw.utf8)
    }

    /// Whether the UTF-8 bytes `raw` follow the id rules.
    static func isValid(bytes raw: some Collection<UInt8>) -> Bool {
        (1...128).contains(raw.count) && raw.allSatisfy(isIDByte) && !(raw.count <= 2 && raw.allSatisfy { $0 == 0x2E })   // not "." or ".."
    }

    /// The id's text.
    public var description: String { rawValue }

    /// Ordered by UTF-8 bytes, the order files and merges use.
    public static func < (lhs: RecordID, rhs: RecordID) -> Bool {
        utf8Precedes(lhs.rawValue, rhs.rawValue)
    }
}

@inline(__always)
func isIDByte(_ b: UInt8) -> Bool {
    switch b {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
        return true
    default:
        return false
    }
}
