import ConcordModel
import ConcordTrust
import Foundation

/// What a commit did, as recorded in its `Concord-Action` trailer.
public enum ChangeAction: String, Sendable, Codable {
    /// A profile created, a record added, updated or deleted, a log entry appended, a dump imported, two histories merged.
    case created, added, updated, deleted, appended, imported, merged
}

/// A commit message Concord writes: a summary line, then trailers saying who, on which device,
/// did what, to which records. `git log --format='%(trailers)'` reads them.
struct CommitMessage {
    /// Above this many records, a count replaces the per-record trailers.
    static let maxListedRecords = 50

    var summary: String
    var actor: String
    var device: String
    var action: ChangeAction
    var stamp: HLC
    /// The records changed, listed when there are at most `maxListedRecords` of them.
    var references: [String]
    /// How many records changed.
    var recordCount: Int
    /// Further `Key: value` trailer lines, e.g. `Concord-Resolved: ...` on merges.
    var extraTrailers: [String] = []

    init(summary: String, actor: Identity, action: ChangeAction, stamp: HLC, references: [String], recordCount: Int? = nil) {
        self.summary = summary
        self.actor = actor.member
        self.device = actor.device
        self.action = action
        self.stamp = stamp
        self.references = references
        self.recordCount = recordCount ?? references.count
    }

    var text: String {
        var lines = [summary, "", "Concord-Actor: \(actor)", "Concord-Device: \(device)",
                     "Concord-Action: \(action.rawValue)", "Concord-Clock: \(stamp)"]
        if recordCount > Self.maxListedRecords {
            lines.append("Concord-Record-Count: \(recordCount)")
        } else {
            lines += references.map { "Concord-Record: \($0)" }
        }
        lines += extraTrailers
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The trailers of a commit message, read back.
public struct CommitTrailers: Sendable, Equatable {
    /// `Concord-Actor`: the member who made the change.
    public var actor: String?
    /// `Concord-Device`: the device it was made on.
    public var device: String?
    /// `Concord-Action`: what it did.
    public var action: String?
    /// `Concord-Clock`: the change's HLC.
    public var clock: String?
    /// `Concord-Record` values: the records it changed (`kind/id`).
    public var records: [String] = []
    /// `Concord-Record-Count`: how many records it changed, when more than are listed.
    public var recordCount: Int?
    /// `Concord-Resolved` values: conflicts a merge resolved by policy.
    public var resolved: [String] = []
    /// `Concord-Unresolved` values: files a merge could not resolve.
    public var unresolved: [String] = []
    /// Any other trailer, in order.
    public var other: [(key: String, value: String)] = []
    /// How many `Concord-Actor` trailers the message has (a commit naming two is refused).
    public var actorCount = 0

    /// Equal when the Concord trailers a check reads (actor, device, action, clock, records) are.
    public static func == (lhs: CommitTrailers, rhs: CommitTrailers) -> Bool {
        lhs.actor == rhs.actor && lhs.device == rhs.device && lhs.action == rhs.action && lhs.clock == rhs.clock
            && lhs.records == rhs.records && lhs.recordCount == rhs.recordCount
    }

    /// Reads `Key: value` lines of the message's last paragraph (paragraphs are separated by a
    /// blank line; a message of one paragraph has no trailers). Reads the UTF-8 bytes: every
    /// fetched commit's trailers are read while it is verified, and splitting the String by
    /// characters took 40% of that check (bench row B7).
    public init(message: String) {
        var message = message
        message.withUTF8 { bytes in
            // The paragraphs: pieces between "\n\n"s (taken left to right), empty ones dropped.
            var paragraphs = 0
            var last: Range<Int>?
            var start = 0, index = 0
            while index <= bytes.count {
                let end = index == bytes.count
                if end || (bytes[index] == 0x0A && index + 1 < bytes.count && bytes[index + 1] == 0x0A) {
                    if index > start { paragraphs += 1; last = start..<index }
                    if end { break }
                    index += 2
                    start = index
                } else {
                    index += 1
                }
            }
            guard paragraphs > 1, let last else { return }
            var lineStart = last.lowerBound
            for position in last.lowerBound...last.upperBound where position == last.upperBound || bytes[position] == 0x0A {
                defer { lineStart = position + 1 }
                guard let colon = bytes[lineStart..<position].firstIndex(of: 0x3A) else { continue }
                var from = colon + 1, to = position
                while from < to, bytes[from] == 0x20 || bytes[from] == 0x09 { from += 1 }
                while to > from, bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09 { to -= 1 }
                add(key: String(decoding: bytes[lineStart..<colon], as: UTF8.self), value: String(decoding: bytes[from..<to], as: UTF8.self))
            }
        }
    }

    private mutating func add(key: String, value: String) {
        switch key {
        case "Concord-Actor": actor = value; actorCount += 1
        case "Concord-Device": device = value
        case "Concord-Action": action = value
        case "Concord-Clock": clock = value
        case "Concord-Record": records.append(value)
        case "Concord-Record-Count": recordCount = Int(value)
        case "Concord-Resolved": resolved.append(value)
        case "Concord-Unresolved": unresolved.append(value)
        default: other.append((key, value))
        }
    }
}
