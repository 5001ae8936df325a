import ArgumentParser
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

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
