import ArgumentParser
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

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
