import ConcordGit
import ConcordModel
import Foundation

/// What `RemoteRestore.run` did to a remote's main.
package struct RemoteRestoreReport: Sendable, Equatable {
    /// The remote restored.
    public let remote: String
    /// The remote's main before (short id): the damaged tip.
    public let damagedTip: String
    /// Where the damaged tip is kept on the remote, e.g. `refs/concord/damaged/20261127T080000Z`.
    public let keptAs: String
    /// Why the remote's main was refused: the rule's line for its first refused commit.
    public let refusal: String
    /// The newest commit of the damaged main that the rule accepts and this device did not have,
    /// merged in before the restore (short id), or nil.
    public let merged: String?
    /// The remote's main now (short id): this device's verified main.
    public let restoredTo: String
}

/// An Admin's way back from a remote someone damaged: a path remote (or a plain git server) takes
/// whatever is pushed to it, so a member with plain git can put there a commit every device
/// refuses, or move main to a line that drops what this device fetched (each sync then stops with
/// exit 5). This fetches the remote's main into a quarantine, confirms the rule refuses it (or that
/// its first-parent line lacks the main this device last fetched), merges in what of it the rule
/// accepts and this device lacks (so no valid commit is lost), and moves the remote's main to this
/// device's verified main — a compare-and-swap against the damaged tip, never a blind force —
/// after keeping the damaged tip on the remote under `refs/concord/damaged/<time>`.
package struct RemoteRestore {
    let profile: Profile
    let repository: Repository

    /// Where a damaged main is kept on the remote.
    public static let refPrefix = "refs/concord/damaged/"
    /// How far back along the damaged main's first parents a commit the rule accepts is looked for.
    static let searchDepth = 10_000

    /// Restores `remote`'s main (see the type); nil when the rule accepts it as it is (nothing to restore).
    public func run(remote: String = "origin", as identity: Identity) throws -> RemoteRestoreReport? {
        let location = try profile.sync.remoteLocation(remote)
        guard case .path(let path) = location else {
            throw ConcordError.invalidInput(.wrongRemote, "\(remote) is an ssh remote: a concord server refuses such commits itself (its pre-receive)",
                                            remedy: .askServerAdministrator)
        }
        try authorizeRestore(identity, remote: remote)
        if let found = try profile.setAside.find(remote: remote), let first = found.refused.first {
            throw ConcordError.unpublishable(commit: first.commit, problem: first.reason)
        }
        return try profile.locked { try restore(remote: remote, at: path, location: location, as: identity) }
    }

    /// `run` past its checks, under the profile lock.
    private func restore(remote: String, at path: String, location: RemoteLocation, as identity: Identity) throws -> RemoteRestoreReport? {
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let tracking = try gitCall { try repository.resolveReference(Sync.trackingRef(remote)) }
        let known = [head, tracking].compactMap { $0 }
        let quarantine = try gitCall { try Quarantine(for: repository, tips: known) }
        let damaged: ObjectID, refusal: String
        var fetched = true, rewritten = false
        do {
            _ = try SyncPipeline(sync: profile.sync, remote: remote, location: location, options: TransportOptions())
                .fetch(into: quarantine.repository, cloning: false)
            guard let tip = try gitCall({ try quarantine.repository.resolveReference(SyncPipeline.incomingRef) }) else { return nil }
            if let problem = try self.refusal(of: tip, in: quarantine.repository, known: known) {
                (damaged, refusal) = (tip, problem)
            } else if let tracking, try !gitCall({ try quarantine.repository.isOnFirstParentLine(tracking, of: tip) }) {
                (damaged, refusal, rewritten) = (tip, Self.lineLost(tracking, now: tip), true)
            } else {
                return nil
            }
        } catch let error as ConcordError {
            // Refused while it was copied (a file over its limit, a tree the format forbids): nothing of it is read further.
            guard case .invalidCommit = error, let tip = try? Repository.localRemoteHead(at: path, ref: "refs/heads/main") else { throw error }
            (damaged, refusal, fetched) = (tip, error.parts.problem, false)
        }

        // What of the damaged main this device lacks and the rule accepts is merged first: the newest
        // accepted commit below a refused tip, with the remote's line first when that commit's
        // first-parent line holds what this device fetched; otherwise (a main rewritten or rolled
        // back past it, with or without a refused commit on top) as a side of this device's line, the
        // line the remote had: its decisions are judged where they join it, so one resting on a
        // dropped revocation falls, and its honest commits are kept.
        var merged: ObjectID?
        if fetched, let accepted = try rewritten ? damaged : newestAccepted(below: damaged, in: quarantine.repository, known: known) {
            let extendsThisLine = try !rewritten && tracking.map { tracking in
                try gitCall { try quarantine.repository.isOnFirstParentLine(tracking, of: accepted) }
            } ?? true
            try gitCall { try quarantine.admit() }
            _ = try profile.sync.mergeLocked(accepted, as: identity, mainLine: extendsThisLine ? .theirs : .head)
            merged = accepted
        }
        guard let restored = try gitCall({ try repository.resolveReference("HEAD") }) else { throw ConcordError.emptyRemote(path) }
        // Restore publishes only a main that extends what this device fetched: never this device's own rewrite of it.
        if let tracking, try !gitCall({ try repository.isOnFirstParentLine(tracking, of: restored) }) {
            throw ConcordError.invalidInput(.historyState, "this device's main \(restored.short) does not hold \(tracking.short), the main it fetched from "
                + "\(remote), on its first-parent line (it was moved back or rewritten here), so a restore would publish a rewrite: "
                + "nothing was changed", remedy: .restoreFromFetchedLine(remote: remote, resetTo: tracking.short))
        }
        if let problem = try self.refusal(of: restored, in: repository, known: [merged, tracking].compactMap { $0 }) {
            throw ConcordError.unpublishable(commit: restored.short, problem: problem)
        }

        let kept = try keepOnRemote(damaged, at: path)
        do {
            let remoteLock = try ProfileLock(gitDirectory: path.hasSuffix("/") ? path : path + "/")
            defer { withExtendedLifetime(remoteLock) {} }
            try repository.pushToLocalRepository(at: path, ref: "refs/heads/main", tip: restored, expected: damaged)
        } catch let error as GitError where [.modified, .exists, .locked].contains(error.code) {
            throw ConcordError.invalidInput(.historyState, "\(remote)'s main moved while it was being restored", remedy: .restoreAgain(remote: remote))
        } catch {
            throw try profile.sync.transportError(error, remote: remote, location: location)
        }
        if tracking != restored {
            try gitCall { try repository.updateReference(Sync.trackingRef(remote), to: restored, expected: tracking, message: "concord: restored the remote") }
        }
        try profile.sync.recordSync(remote: remote, head: restored)
        return RemoteRestoreReport(remote: remote, damagedTip: damaged.short, keptAs: kept, refusal: refusal,
                                   merged: merged?.short, restoredTo: restored.short)
    }

    /// The refusal of a main whose first-parent line lacks `tracking` (what this device last fetched): rolled back, rewritten, or
    /// a merge that put another line first (the line a sync refuses with `remoteRewritten` or `mainlineBroken`).
    static func lineLost(_ tracking: ObjectID, now tip: ObjectID) -> String {
        "its first-parent line does not hold \(tracking.short), the main this device fetched before (it was rolled back, rewritten, "
            + "or merged with another line first), so decisions \(tracking.short) had reached would not count"
    }

    /// Only an active Admin restores a remote; the refusal names the Admins who can.
    private func authorizeRestore(_ identity: Identity, remote: String) throws {
        let admins = try profile.members.list().filter { $0.role == .admin && $0.status == .active }.map(\.name)
        _ = try profile.members.authorizeAdmin(identity, action: "restoring \(remote)'s main (ask an Admin: \(admins.joined(separator: ", ")))")
    }

    /// The rule's line for the first commit of `tip` beyond `known` it refuses, or nil when it accepts them all.
    private func refusal(of tip: ObjectID, in repository: Repository, known: [ObjectID]) throws -> String? {
        do {
            try IncomingCheck(repository: repository, profileID: profile.info.id, caches: profile.caches).verify(tip: tip, known: known)
            return nil
        } catch let error as ConcordError {
            switch error {
            case .unauthorizedCommit, .invalidCommit: return error.parts.problem
            default: throw error
            }
        }
    }

    /// The newest commit on `damaged`'s first-parent line that the rule accepts and that `known`
    /// does not already contain; nil when every accepted one is known here.
    private func newestAccepted(below damaged: ObjectID, in quarantine: Repository, known: [ObjectID]) throws -> ObjectID? {
        var candidate = try gitCall { try quarantine.commit(damaged).parents.first }
        var steps = 0
        while let commit = candidate, steps < Self.searchDepth {
            steps += 1
            if try known.contains(where: { tip in try commit == tip || gitCall { try quarantine.isAncestor(commit, of: tip) } }) { return nil }
            if try refusal(of: commit, in: quarantine, known: known) == nil { return commit }
            candidate = try gitCall { try quarantine.commit(commit).parents.first }
        }
        return nil
    }

    /// Points a new `refs/concord/damaged/<time>` in the remote repository at `damaged`; returns its name.
    private func keepOnRemote(_ damaged: ObjectID, at path: String) throws -> String {
        let target = try gitCall { try Repository.open(path) }
        let name = try SetAside.newRef(Self.refPrefix) { name in try gitCall { try target.resolveReference(name) } != nil }
        try gitCall { try target.updateReference(name, to: damaged, expected: nil, message: "concord: kept a damaged main") }
        return name
    }
}
