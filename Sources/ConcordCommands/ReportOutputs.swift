import ConcordEngine
import ConcordKit
import Foundation

// What `--json` prints of the reports several commands share (sync, watch, merge, conflicts, history).

/// A write a merge did not keep (`LostEdit`), and, in a sync's report, whether it was this member's.
struct LostEditOutput: Encodable {
    /// One side of the merge: who wrote, on which device, when, what, and (for the loser) in which commit.
    struct Side: Encodable {
        let member: String, device: String, at: String, change: String
        let commit: String?

        init(_ side: MergeSide, commit: String?) {
            (member, device, at, change, self.commit) = (side.member, side.device, side.stamp.description, side.change.rawValue, commit)
        }
    }

    let record: String
    @OrNull var field: String?
    let merge: String, loser: Side, winner: Side, text: String
    /// In a sync's report: whether the write was this member's, and then what the sync told them.
    var yours: Bool?
    var told: String?

    init(_ edit: LostEdit, utc: Bool) {
        (record, field, merge, text) = (edit.record, edit.field, edit.merge, ConflictPhrasing.sentence(edit, utc: utc))
        (loser, winner) = (Side(edit.loser, commit: edit.loserCommit), Side(edit.winner, commit: nil))
    }
}

/// A membership decision a merge left out (made on a copy older than the main line's).
struct FallenOutput: Encodable {
    let commit: String
    @OrNull var member: String?
    let what: String
    let reason: String

    init(_ decision: FallenDecision) { (commit, member, what, reason) = (decision.commit, decision.member, decision.what, decision.reason) }
}

/// A change a merge left out because its author lost the rights to make it concurrently.
struct LeftOutOutput: Encodable {
    let path: String, member: String, commit: String, cause: String

    init(_ change: LeftOutChange) {
        (path, member, commit) = (change.path, change.member, change.commit)
        cause = switch change.cause {
        case .rightsLowered: "revoked or demoted"
        case .keyRemoved(let fingerprint): "key removed: \(fingerprint)"
        case .kindsChanged: "kinds"
        }
    }
}

/// A sync's report (`concord sync --json`; `concord watch --json`'s `synced` events carry the same fields).
struct SyncOutput: Encodable {
    let remote: String, received: Int, sent: Int, changedFiles: [String], head: String, resolved: [String]
    let lost: [LostEditOutput]
    let unresolved: [String], attempts: Int, warnings: [String]
    let leftOut: [LeftOutOutput], contested: [String], fallen: [FallenOutput]

    init(_ report: SyncReport) {
        (remote, received, sent, changedFiles, head) = (report.remote, report.received, report.sent, report.changedFiles, report.head)
        resolved = report.resolved.map(\.trailerValue)
        lost = report.lost.map { edit in
            var output = LostEditOutput(edit, utc: false)
            output.yours = report.yours.contains(edit)
            if report.yours.contains(edit) { output.told = ConflictPhrasing.yours(edit, utc: false) }
            return output
        }
        (unresolved, attempts, warnings) = (report.unresolved.map(\.path), report.attempts, report.warnings)
        (leftOut, contested, fallen) = (report.leftOut.map(LeftOutOutput.init), report.contested, report.fallen.map(FallenOutput.init))
    }
}
