import ArgumentParser
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a dump ({\"records\":[...],\"logs\":[...]}) as one commit; importing it again changes nothing.")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The dump file, or - to read the dump from standard input.") var file: String
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        @OrNull var commit: String?
        let records: Int, logEntries: Int
        @OrNull var formatUpgradedTo: Int?
    }

    func run() throws {
        PerformanceTrace.start()
        let store = try profile.open()
        PerformanceTrace.step("profile opened")
        let bytes = file == "-" ? readInput() : FileManager.default.contents(atPath: file)
        guard let bytes else { throw ConcordError.io(.read, path: file, "cannot read \(file): no such file or not readable") }
        PerformanceTrace.step("dump read")
        let dump = try Dump.parse(Array(bytes), source: file == "-" ? "standard input" : file)
        PerformanceTrace.step("dump parsed")
        let result = try store.importDump(dump)
        if json {
            try printJSON(Output(commit: result.commit, records: result.value.records, logEntries: result.value.logEntries,
                                 formatUpgradedTo: result.value.formatUpgradedTo))
        } else if let commit = result.commit {
            print("imported \(result.value.items) of \(dump.records.count + dump.logs.count) items in commit \(commit.prefix(7))"
                  + (result.value.formatUpgradedTo.map { "; the profile is now data format \($0), so log entries keep who first wrote them" } ?? ""))
        } else {
            print("nothing to import: all \(dump.records.count + dump.logs.count) items are already present")
        }
    }
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "export", abstract: "Print all live records and log entries as a dump.")

    @OptionGroup var profile: ProfileOption

    func run() throws {
        writeOutput(Data(try profile.open().read { try $0.exportDump() }.canonicalBytes()))
    }
}

struct Log: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show the audit trail: who changed what (fields old → new), when, on which device, and whether the signature checks out.",
        discussion: """
            One line per commit, newest first, e.g.
              2026-11-24 14:30  therapist@ipad  added vocabulary/puzzle (label: "puzzle")  f239296 [signature: good]
            Times are this machine's local time (--utc for UTC). DATE is 2026-11-24, 2026-11-24T14:30 (local time),
            2026-11-24T14:30:00Z (UTC), or 7d / 12h / 30m for that long ago. docs/audit.md has the same with plain git.
            """)

    @OptionGroup var profile: ProfileOption
    @Option(help: ArgumentHelp("Only commits that changed this record.", valueName: "kind/id")) var record: String?
    @Option(help: ArgumentHelp("Only commits by this member (the acting member).", valueName: "name")) var member: String?
    @Option(help: ArgumentHelp("Only commits made at or after DATE.", valueName: "DATE")) var since: String?
    @Option(help: ArgumentHelp("Only commits made before DATE.", valueName: "DATE")) var until: String?
    @Option(help: "Show at most this many commits.") var limit: Int?
    @Flag(help: "Show times in UTC instead of local time.") var utc = false
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more") }
        let now = Int64(Date().timeIntervalSince1970)
        if let since, AuditTime.parse(since, now: now) == nil { throw ValidationError(AuditTime.problem("--since", since)) }
        if let until, AuditTime.parse(until, now: now) == nil { throw ValidationError(AuditTime.problem("--until", until)) }
    }

    func run() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let filter = HistoryFilter(record: record, member: member, since: since.flatMap { AuditTime.parse($0, now: now) },
                                   until: until.flatMap { AuditTime.parse($0, now: now) }, limit: limit)
        let entries = try profile.open().read { try $0.history(filter) }
        if json {
            try printJSON(entries.map(EntryOutput.init))
            return
        }
        let zone = AuditTime.localZone
        for entry in entries {
            print("\(AuditTime.format(entry.seconds, utc: utc, zone: zone))  \(AuditTime.who(entry))  \(AuditTime.describe(entry))  "
                  + "\(entry.commit.prefix(7)) [signature: \(entry.signature.rawValue)]")
        }
    }
}

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

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show every version of one record: who wrote it, when, on which device, what changed, and which merge it lost in.",
        discussion: "Versions that lost an lww or delete-wins merge are listed too, with that merge and the side that won; --content prints each version.")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The record, as <kind>/<id>.") var reference: String
    @Flag(help: "Show times in UTC instead of local time.") var utc = false
    @Flag(help: "Print the result as JSON.") var json = false
    @Flag(help: "Also print each version's content.") var content = false

    func run() throws {
        let store = try profile.open()
        let (reference, withContent) = (reference, json || content)
        let (versions, contents) = try store.read { reader in
            let versions = try reader.versions(of: reference)
            return (versions, try versions.map { withContent ? try reader.recordVersion(reference, atCommit: $0.entry.commit) : nil })
        }
        if json {
            try printJSON(zip(versions, contents).map { VersionOutput($0, content: $1, of: reference, utc: utc) })
            return
        }
        let zone = AuditTime.localZone
        for (version, bytes) in zip(versions, contents) {
            let entry = version.entry
            let changes = entry.changes.filter { $0.record == reference }
            let what = changes.isEmpty ? "\(entry.action) \(reference)" : changes.map(AuditTime.describe).joined(separator: "; ")
            // Each write of this version a merge left out: a field (or the delete), and what was kept instead.
            let lost = version.lost.isEmpty ? "" : "  — lost in merge \(version.lost[0].merge.prefix(7)): " + version.lost.map { edit in
                "\(edit.field ?? "the delete") to \(edit.winner.member)@\(edit.winner.device)'s \(edit.winner.change.rawValue)"
            }.joined(separator: ", ")
            print("\(AuditTime.format(entry.seconds, utc: utc, zone: zone))  \(AuditTime.who(entry))  \(what)  \(entry.commit.prefix(7)) "
                  + "[signature: \(entry.signature.rawValue)]\(lost)")
            if content, let bytes {
                print(String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            }
        }
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every commit of the history: signed by an active member, changing only what their role may write.",
        discussion: "Exit 5, naming the first invalid commit, its signer and the rule it breaks, when one fails.")

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Print the result as JSON.") var json = false

    /// What `--json` prints.
    struct Output: Encodable {
        let verified: Int
        @OrNull var head: String?
    }

    func run() throws {
        let report: VerificationReport
        do {
            report = try Maintenance.verify(at: profile.url, environment: try processEnvironment())
        } catch let error as ConcordError where json {
            try printJSON(FailureOutput(error))
            throw error
        }
        if json {
            try printJSON(Output(verified: report.commits, head: report.head))
        } else {
            print("\(report.commits) commits verified")
        }
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
