import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// One commit told as a change feed tells it (`CommitChange`): its files compared with the parent
/// the feed came from, each read as a record, a log day, or a member; for a merge, the writes it left out.
extension History {
    /// What `commit` changed against `parent` (nil: against nothing). Its origin (`ChangeOrigin`) is decided by
    /// the key that signed it, never by its trailers, which any member can write: `.thisDevice`
    /// when it is not a merge and `identity`'s key signed it (whoever it acted as). `tables` keeps
    /// the kinds tables read along a walk, `keys` the members' keys (`signer` names the member).
    func commitChange(_ commit: Commit, from parent: ObjectID?, as identity: Identity, tables: inout KindsTables,
                      keys: MemberKeysAtCommit) throws -> CommitChange {
        try gitCall {
            let parentTree = try parent.map { try repository.commit($0).tree }
            let kinds = try tables.table(in: commit.tree, repository: repository, fallback: profile.kinds)
            var records = [ChangedRecord](), logs = [AppendedEntries](), membership = [MembershipEvent]()
            for file in try repository.changedFiles(from: parentTree, to: commit.tree) {
                let before = try file.before.map { try repository.blob($0) }, after = try file.blob.map { try repository.blob($0) }
                switch ProfilePathRules.classify(Array(file.path.string.utf8), kinds: kinds) {
                case .success(.record(let kind, let id)):
                    if let change = Self.recordChange(before: before, after: after) {
                        records.append(ChangedRecord(kind: kind.name, id: id, change: change))
                    }
                case .success(.logDay(let kind, _)):
                    let ids = Self.appendedIDs(before: before, after: after)
                    guard !ids.isEmpty else { continue }
                    if let last = logs.last, last.kind == kind.name {
                        logs[logs.count - 1] = AppendedEntries(kind: kind.name, ids: last.ids + ids)
                    } else {
                        logs.append(AppendedEntries(kind: kind.name, ids: ids))
                    }
                case .success(.member(let name)):
                    membership += Self.membershipEvents(name, before: before, after: after, path: file.path.string)
                default:
                    continue
                }
            }
            let trailers = CommitTrailers(message: commit.message)
            let isMerge = commit.parents.count > 1
            let conflicts = isMerge ? try LostEdit.inMerge(commit, repository: repository, caches: caches).map(MergeConflictLoss.init) : []
            // Commits on main were verified when they arrived: reading the key that signed is enough.
            let key = try MembershipResolution.signer(of: commit, in: repository, caches: caches)
            let mine = !isMerge && key == identity.key.publicKey
            let signer = try key.map { key in
                try keys.keys(for: commit).first { $0.value.contains(key) }?.key ?? key.fingerprint
            }
            return CommitChange(token: ChangeToken(commit: commit.id.hex), origin: mine ? .thisDevice : .sync,
                                member: trailers.actor, signer: signer, device: trailers.device,
                                summary: String(commit.message.prefix { $0 != "\n" }), time: commit.author.time, isMerge: isMerge,
                                records: records, logEntries: logs, conflicts: conflicts, membership: membership)
        }
    }

    /// Whether a record file's change made it appear, change or disappear (a tombstone counts as
    /// gone); nil when it was and stays a tombstone (its stamps moved) or does not decode on either side.
    static func recordChange(before: [UInt8]?, after: [UInt8]?) -> ChangedRecord.Change? {
        func live(_ bytes: [UInt8]?) -> Bool? {
            guard let bytes else { return false }
            guard let record = try? Record.decode(bytes) else { return nil }
            return !record.isDeleted
        }
        switch (live(before), live(after)) {
        case (false, true), (nil, true): return .added
        case (true, true): return .updated
        case (true, false), (true, nil): return .deleted
        case (false, nil), (nil, nil), (nil, false), (false, false): return nil
        }
    }

    /// The ids of the entries in the new version of a log day file that the old one lacks, in file order.
    static func appendedIDs(before: [UInt8]?, after: [UInt8]?) -> [String] {
        func lines(_ bytes: [UInt8]?) -> [ArraySlice<UInt8>] {
            (bytes ?? []).split(separator: 0x0A, omittingEmptySubsequences: true)
        }
        let old = Set(lines(before).map(Array.init))
        return lines(after).compactMap { line in
            old.contains(Array(line)) ? nil : (try? LogEntry.decode(line: line))?.id.rawValue
        }
    }

    /// What a member file's change means: joined, invited, role changed, revoked, left, devices
    /// changed, or removed (several at once when one commit did several).
    static func membershipEvents(_ name: String, before: [UInt8]?, after: [UInt8]?, path: String) -> [MembershipEvent] {
        let old = before.flatMap { try? Member.decode($0, path: path) }, new = after.flatMap { try? Member.decode($0, path: path) }
        guard let new else { return old == nil ? [] : [MembershipEvent(member: name, change: .removed)] }
        guard let old else {
            switch new.status {
            case .active: return [MembershipEvent(member: name, change: .joined(new.role))]
            case .invited: return [MembershipEvent(member: name, change: .invited(new.role))]
            case .revoked: return [MembershipEvent(member: name, change: .revoked(by: new.revokedBy ?? ""))]
            }
        }
        var events = [MembershipEvent]()
        if old.status != new.status {
            switch new.status {
            case .active: events.append(MembershipEvent(member: name, change: .joined(new.role)))
            case .invited: events.append(MembershipEvent(member: name, change: .invited(new.role)))
            case .revoked:
                let by = new.revokedBy ?? ""
                events.append(MembershipEvent(member: name, change: by == name ? .left : .revoked(by: by)))
            }
        } else if old.role != new.role {
            events.append(MembershipEvent(member: name, change: .roleChanged(from: old.role, to: new.role)))
        }
        if new.status != .revoked, old.keys != new.keys, old.status == new.status {
            events.append(MembershipEvent(member: name, change: .devicesChanged))
        }
        return events
    }
}
