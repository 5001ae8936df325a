import ConcordModel
import Foundation

/// Where an app's change feed stands: the commit of main it has seen up to. `Codable`, so an app
/// keeps it (in its own database, beside what it derived from the feed) and resumes from it
/// (`ConcordStore.changes(since:)`).
public struct ChangeToken: Sendable, Codable, Hashable, CustomStringConvertible {
    /// The commit id (hex).
    public let commit: String

    /// The token of commit `commit` (hex).
    public init(commit: String) { self.commit = commit }

    /// The commit id.
    public var description: String { commit }
}

/// Who made a commit the feed tells of.
public enum ChangeOrigin: String, Sendable, Codable {
    /// This device's key signed it (the store's identity, whichever member it acted as): in this
    /// process or another one on this device (the CLI). Never decided by the commit's trailers.
    case thisDevice
    /// It came from another device through a sync, or is a merge that brought such commits in
    /// (a merge this device made in a sync included: what it brings is another device's).
    case sync
}

/// One record a commit added, changed or deleted (against the commit's first parent).
public struct ChangedRecord: Sendable, Equatable, Hashable {
    /// What the commit did to the record.
    public enum Change: String, Sendable, Codable {
        /// It is live now and was not (new, or a tombstone brought back).
        case added
        /// It was and is live, with other content.
        case updated
        /// It was live and is gone or a tombstone now.
        case deleted
    }

    /// The record's kind.
    public let kind: String
    /// The record's id.
    public let id: String
    /// Whether it appeared, changed or went.
    public let change: Change

    /// `kind/id`.
    public var reference: String { "\(kind)/\(id)" }
}

/// The log entries a commit appended to one log kind, by id, in the order of their day files.
public struct AppendedEntries: Sendable, Equatable {
    /// The log kind.
    public let kind: String
    /// The new entries' ids.
    public let ids: [String]
}

/// A change of one member's file (`.concord/members/<name>.json`).
public struct MembershipEvent: Sendable, Equatable {
    /// What happened to the member.
    public enum Change: Sendable, Equatable {
        /// Invited with this role (not yet accepted).
        case invited(Role)
        /// Became an active member with this role (added, or an invitation accepted).
        case joined(Role)
        /// Given another role by an admin.
        case roleChanged(from: Role, to: Role)
        /// Revoked by an admin.
        case revoked(by: String)
        /// Left by themselves (`leave`).
        case left
        /// Their device keys changed.
        case devicesChanged
        /// Their file was removed (an invitation withdrawn).
        case removed
    }

    /// The member's name.
    public let member: String
    /// What happened to them.
    public let change: Change
}

/// A write a merge did not keep, as a person reads it: who lost what to whom (`LostEdit`).
public struct MergeConflictLoss: Sendable, Equatable {
    /// The lost write with its author, and the write kept in its place.
    public let lostEdit: LostEdit

    /// E.g. `vocabulary/puzzle (label): bob's edit (bob@phone) lost to alice's edit (alice@laptop)`.
    public var description: String {
        let field = lostEdit.field.map { " (\($0))" } ?? ""
        func what(_ side: MergeSide) -> String { side.change == .delete ? "delete" : "edit" }
        let (loser, winner) = (lostEdit.loser, lostEdit.winner)
        return "\(lostEdit.record)\(field): \(loser.member)'s \(what(loser)) (\(loser.member)@\(loser.device)) lost to "
            + "\(winner.member)'s \(what(winner))" + (winner.device.isEmpty ? "" : " (\(winner.member)@\(winner.device))")
    }
}

/// What one commit of main's first-parent chain changed, against its first parent.
public struct CommitChange: Sendable {
    /// The commit: resume after it with `changes(since: token)`.
    public let token: ChangeToken
    /// Whether this device made it (signed with this store's identity's key, whichever member it
    /// acted as; never a merge), or it came through a sync. Decided by the signing key, not the trailers.
    public let origin: ChangeOrigin
    /// The member it acted as, as told by the commit (its `Concord-Actor` trailer, which any
    /// member can write); nil when it has none (a plain git commit). `signer` is who signed.
    public let member: String?
    /// The member whose key signed it (by the membership at that commit), or the key's
    /// fingerprint when no member has that key; nil when it is unsigned.
    public let signer: String?
    /// The device it was made on, as told by the commit (its `Concord-Device` trailer).
    public let device: String?
    /// Its summary line.
    public let summary: String
    /// Its time, seconds since 1970.
    public let time: Int64
    /// Whether it is a merge (two parents).
    public let isMerge: Bool
    /// The records it added, changed or deleted, in path order.
    public let records: [ChangedRecord]
    /// The log entries it appended, per kind.
    public let logEntries: [AppendedEntries]
    /// For a merge: the writes it did not keep, who lost what to whom.
    public let conflicts: [MergeConflictLoss]
    /// Members who joined, were invited, changed role, were revoked, left or changed devices.
    public let membership: [MembershipEvent]
}

/// One event of a change feed (`ConcordStore.changes(since:)`): a commit, or the end of this
/// device's copy, told as the feed's last event.
public enum ChangeEvent: Sendable {
    /// A commit of main, oldest first.
    case commit(CommitChange)
    /// A sync of this store learned that `by` revoked `member`'s access (`ConcordError.accessRemoved`).
    case accessRemoved(member: String, by: String, profile: String)
    /// A sync of this store learned that `by` deleted the profile (`ConcordError.profileDeleted`).
    case profileDeleted(profile: String, by: String, at: String)

    /// The commit's token; nil for the last events.
    public var token: ChangeToken? {
        if case .commit(let change) = self { return change.token }
        return nil
    }

    /// The commit, when this is one.
    public var commit: CommitChange? {
        if case .commit(let change) = self { return change }
        return nil
    }
}
