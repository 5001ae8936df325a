import ConcordModel
import Foundation

/// What this device does with its copy of a profile when a remote says it may no longer have it
/// (its member was revoked: `ConcordError.accessRemoved`; an Admin deleted the profile:
/// `.profileDeleted`): the edits it never sent are saved under `$CONCORD_HOME/saved`, then the copy
/// is deleted and the registry says why, unless the copy is kept. A `SyncEngine` applies it to
/// every profile it syncs; a one-shot sync applies it with `CopyRemoval.applying(to:remote:keepCopy:_:)`.
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

    /// Runs `body` (a sync of `profile` with `remote`); when it finds this device's member revoked
    /// or the profile deleted, applies the policy (deletes the copy unless `keepCopy`, saving the
    /// unsent edits first) and throws the removal's `error`. Any other error passes unchanged.
    package static func applying<T>(to profile: Profile, remote: String, keepCopy: Bool, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            guard let removal = try apply(for: error, to: profile, remote: remote, keepCopy: keepCopy) else { throw error }
            throw removal.error
        }
    }

    /// The policy applied to `profile` when `error` says its copy must go; nil for any other error.
    /// Throws when the unsent edits cannot be saved (the copy is then kept) or the copy cannot be deleted.
    static func apply(for error: Error, to profile: Profile, remote: String, keepCopy: Bool) throws -> CopyRemoval? {
        guard let cause = error as? ConcordError, let reason = reason(for: cause) else { return nil }
        guard !keepCopy else { return CopyRemoval(cause: cause, deleted: false, savedUnsentEdits: nil) }
        let saved = try profile.removeLocalCopy(unsentTo: remote, removedBecause: reason)
        return CopyRemoval(cause: cause, deleted: true, savedUnsentEdits: saved)
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
