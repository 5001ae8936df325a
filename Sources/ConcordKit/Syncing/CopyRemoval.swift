import ConcordModel
import Foundation

/// What this device does with its copy of a profile when a remote says it may no longer have it
/// (its member was revoked: `ConcordError.accessRemoved`; an Admin deleted the profile:
/// `.profileDeleted`): the edits it never sent are saved under `$CONCORD_HOME/saved`, then the copy
/// is deleted and the registry says why, unless the copy is kept. A `SyncEngine` applies it to
/// every profile it syncs; the command-line tool's `sync --keep` applies it through the store (`ConcordStore.sync(remote:keepCopy:)`).
public struct CopyRemoval: Sendable {
    /// What the remote said, as the sync threw it.
    public let cause: ConcordError
    /// Whether the copy was deleted (false when it was kept).
    public let deleted: Bool
    /// The file holding the edits this device never sent, when it had any and the copy was deleted.
    public let savedUnsentEdits: URL?

    /// `cause` with what was done to the copy after the profile's name: what a sync throws once
    /// the policy was applied ("access removed: … (this device's copy was deleted; …)").
    public var error: ConcordError {
        let done = deleted
            ? "this device's copy was deleted" + (savedUnsentEdits.map { "; its unsent edits are saved in \($0.path)" } ?? "")
            : "the local copy is kept (--keep)"
        switch cause {
        case .accessRemoved(let member, let admin, let name): return .accessRemoved(member: member, by: admin, profile: "\(name) (\(done))")
        case .profileDeleted(let name, let by, let at): return .profileDeleted(profile: "\(name) (\(done))", by: by, at: at)
        default: return cause
        }
    }

    /// The policy applied when `error` says this device's copy must go; nil for any other error.
    /// Unless `keepCopy`, `removingCopy` deletes the copy, given why (the registry's line), after
    /// saving the unsent edits, and returns where they went. Throws when they cannot be saved (the
    /// copy is then kept) or the copy cannot be deleted.
    static func apply(for error: Error, keepCopy: Bool, removingCopy: (_ reason: String) throws -> URL?) throws -> CopyRemoval? {
        guard let cause = error as? ConcordError, let reason = reason(for: cause) else { return nil }
        guard !keepCopy else { return CopyRemoval(cause: cause, deleted: false, savedUnsentEdits: nil) }
        return CopyRemoval(cause: cause, deleted: true, savedUnsentEdits: try removingCopy(reason))
    }

    /// Whether `error` says this device's copy must go.
    static func isRemoval(_ error: Error) -> Bool { (error as? ConcordError).flatMap(reason(for:)) != nil }

    /// Why the copy went, as the registry keeps it (`concord profiles` shows it); nil when `error` is no removal.
    static func reason(for error: ConcordError) -> String? {
        switch error {
        case .accessRemoved(let member, let admin, _):
            "access removed: \(admin) revoked \(member)'s access on \(HLClock.formatInstant(ConcordEnvironment.systemClock()))"
        case .profileDeleted(_, let by, let at):
            "deleted: \(by) deleted the profile at \(at)"
        default:
            nil
        }
    }
}
