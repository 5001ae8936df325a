import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

/// Lost writes phrased for people.
enum ConflictPhrasing {
    /// `scenes/y (a): alice's edit (10:00:05, alice@laptop, 3f2a1b9) lost to carol's edit (10:00:07, carol@tablet) in merge 9c1d2e4; the lost version: concord history scenes/y`.
    static func sentence(_ edit: LostEdit, utc: Bool) -> String {
        let what = edit.field.map { "\(edit.record) (\($0))" } ?? edit.record
        let commit = edit.loserCommit.map { ", \($0.prefix(7))" } ?? ""
        return "\(what): \(edit.loser.member)'s \(change(edit.loser)) (\(time(edit.loser, utc: utc)), \(edit.loser.member)@\(edit.loser.device)\(commit)) "
            + "lost to \(edit.winner.member)'s \(change(edit.winner)) (\(time(edit.winner, utc: utc)), \(edit.winner.member)@\(edit.winner.device)) "
            + "in merge \(edit.merge.prefix(7)); the lost version: concord history \(edit.record)"
    }

    /// What a sync tells the member whose write it was: `your edit of scenes/y (a) lost to carol's edit at 10:03:05; …`.
    static func yours(_ edit: LostEdit, utc: Bool) -> String {
        let what = edit.field.map { "\(edit.record) (\($0))" } ?? edit.record
        return "your \(change(edit.loser)) of \(what) lost to \(edit.winner.member)'s \(change(edit.winner)) at \(time(edit.winner, utc: utc)); "
            + "the lost version: concord history \(edit.record)"
    }

    private static func change(_ side: MergeSide) -> String { side.change == .delete ? "delete" : "edit" }

    /// The write's time to the second, as `concord log` shows times.
    private static func time(_ side: MergeSide, utc: Bool) -> String {
        let formatted = AuditTime.format(side.stamp.wallMillis / 1000, utc: utc)
        return String(formatted.dropFirst(11))
    }
}
