import ArgumentParser
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

/// How `concord log` reads and writes times and changes.
enum AuditTime {
    /// The zone "local time" means: the run's `TZ` (a zone name such as `America/New_York`, or
    /// `:America/New_York`), else this process's zone. Read from the run's environment, so a run in
    /// another program's process (a test's) gets its own.
    static var localZone: TimeZone {
        guard let tz = CommandContext.current.environment["TZ"] else { return .current }
        let name = tz.hasPrefix(":") ? String(tz.dropFirst()) : tz
        return TimeZone(identifier: name) ?? TimeZone(abbreviation: name) ?? .current
    }

    /// DATE (see `concord log --help`) as seconds since 1970, or nil.
    static func parse(_ text: String, now: Int64) -> Int64? {
        if let unit = text.last, let amount = Int64(text.dropLast()), amount >= 0 {
            let seconds: Int64? = switch unit {
            case "d": 86_400
            case "h": 3_600
            case "m": 60
            default: nil
            }
            if let seconds {
                // A span too long to count back (999999999999999999d) is no date: refused, not a crash.
                let (span, overflow) = amount.multipliedReportingOverflow(by: seconds)
                return overflow ? nil : now - span
            }
        }
        let utc = text.hasSuffix("Z")
        let body = utc ? String(text.dropLast()) : text
        for format in ["yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = utc ? TimeZone(identifier: "UTC") : localZone
            formatter.dateFormat = format
            if let date = formatter.date(from: body) { return Int64(date.timeIntervalSince1970) }
        }
        return nil
    }

    static func problem(_ option: String, _ text: String) -> String {
        "\(option) \(text.debugDescription) is not a date: give 2026-11-24, 2026-11-24T14:30 (local time), 2026-11-24T14:30:00Z (UTC), or 7d / 12h / 30m"
    }

    /// `2026-11-24 14:30:05` in local time, or `2026-11-24 14:30:05Z` in UTC.
    /// Local time is UTC's wall clock moved by the zone's offset at that instant (summer time
    /// included), so one formatter serves every zone.
    static func format(_ seconds: Int64, utc: Bool, zone: TimeZone = localZone) -> String {
        let instant = Date(timeIntervalSince1970: TimeInterval(seconds))
        if utc { return utcFormatter.string(from: instant) + "Z" }
        return utcFormatter.string(from: instant.addingTimeInterval(TimeInterval(zone.secondsFromGMT(for: instant))))
    }

    /// Made once per process, not once per line: a log prints one time per commit.
    private static let utcFormatter = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")!
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter
    }()

    /// `member@device`, and whose device it was when another member acted on it: `grandma@tablet (parent's device)`.
    static func who(_ entry: HistoryEntry) -> String {
        "\(entry.member)@\(entry.device)" + (entry.signedBy.map { $0 == entry.member ? "" : " (\($0)'s device)" } ?? "")
    }

    /// What a commit did, in words: each record's change with its fields, else its action and records.
    static func describe(_ entry: HistoryEntry) -> String {
        if !entry.changes.isEmpty {
            let described = Set(entry.changes.map(\.record))
            let others = entry.records.filter { !described.contains($0) }
            return (entry.changes.map(describe) + (others.isEmpty ? [] : ["\(entry.action) \(others.joined(separator: ", "))"]))
                .joined(separator: "; ")
        }
        if !entry.records.isEmpty { return "\(entry.action) \(entry.records.joined(separator: ", "))" }
        if entry.recordCount > 0 { return "\(entry.action) \(entry.recordCount) records" }
        return entry.summary
    }

    /// `edited vocabulary/puzzle (label: "puzzle" → "jigsaw")`.
    static func describe(_ change: AuditChange) -> String {
        let fields = change.fields.map { field -> String in
            switch (field.old, field.new) {
            case (nil, let new?): return "\(field.field): \(value(new))"
            case (let old?, nil): return "\(field.field): \(value(old)) → removed"
            case (let old?, let new?): return "\(field.field): \(value(old)) → \(value(new))"
            case (nil, nil): return field.field
            }
        }
        if let origin = change.origin {
            return "\(change.action) \(change.record) (first written by \(origin.member)@\(origin.device) at \(origin.at))"
        }
        return "\(change.action) \(change.record)" + (fields.isEmpty ? "" : " (\(fields.joined(separator: ", ")))")
    }

    /// A field's value as compact JSON, cut to 60 characters.
    private static func value(_ json: JSONValue) -> String {
        let text = String(decoding: json.canonicalLine(), as: UTF8.self).trimmingCharacters(in: .newlines)
        return text.count > 60 ? String(text.prefix(59)) + "…" : text
    }
}

/// A change of one record in a commit, as `log --json` and `history --json` print it.
struct ChangeOutput: Encodable {
    struct Field: Encodable {
        let field: String
        @OrNull var old: JSONValue?
        @OrNull var new: JSONValue?
    }

    /// Where a log entry imported from a dump was first written.
    struct Origin: Encodable { let at: String, by: String, device: String }

    let record: String, action: String, fields: [Field]
    let origin: Origin?

    init(_ change: AuditChange) {
        (record, action) = (change.record, change.action)
        fields = change.fields.map { Field(field: $0.field, old: $0.old, new: $0.new) }
        origin = change.origin.map { Origin(at: $0.at.description, by: $0.member, device: $0.device) }
    }
}

/// A commit of `log --json`.
struct EntryOutput: Encodable {
    let commit: String, summary: String, member: String, device: String, action: String, time: String
    @OrNull var clock: String?
    let records: [String], recordCount: Int, changes: [ChangeOutput], parents: [String], signature: String
    @OrNull var signedBy: String?

    init(_ entry: HistoryEntry) {
        (commit, summary, member, device, action, time) = (entry.commit, entry.summary, entry.member, entry.device, entry.action, entry.time)
        (clock, records, recordCount, changes) = (entry.clock, entry.records, entry.recordCount, entry.changes.map(ChangeOutput.init))
        (parents, signature, signedBy) = (entry.parents, entry.signature.rawValue, entry.signedBy)
    }
}

/// A version of one record, as `history --json` prints it: its commit, what changed in it, the
/// writes its merge left out, the merge it lost in, and (when read) its content.
struct VersionOutput: Encodable {
    /// The merge a version lost in, and the side that won.
    struct LostIn: Encodable { let merge: String, winner: String, winnerChange: String }

    let commit: String, member: String, device: String, action: String, time: String, signature: String
    let changes: [ChangeOutput]
    let lost: [LostEditOutput]
    @OrNull var lostIn: LostIn?
    /// The version's JSON (its text when it does not parse); left out when not read.
    let content: JSONValue?

    init(_ version: RecordVersion, content bytes: [UInt8]?, of reference: String, utc: Bool) {
        let entry = version.entry
        (commit, member, device, action, time, signature) = (entry.commit, entry.member, entry.device, entry.action, entry.time, entry.signature.rawValue)
        changes = entry.changes.filter { $0.record == reference }.map(ChangeOutput.init)
        lost = version.lost.map { LostEditOutput($0, utc: utc) }
        lostIn = version.lostIn.map { LostIn(merge: $0.merge, winner: "\($0.winner.member)@\($0.winner.device)", winnerChange: $0.winner.change.rawValue) }
        content = bytes.map { (try? JSONValue.parse($0)) ?? .string(String(decoding: $0, as: UTF8.self)) }
    }
}
