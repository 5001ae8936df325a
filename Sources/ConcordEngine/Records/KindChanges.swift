import ConcordModel
import ConcordTrust
import Foundation

/// Adding and changing a profile's kinds (`concord kinds add`, `concord kinds set`, a store opened
/// with kinds the profile lacks): an Admin's ONE signed commit writing `.concord/kinds.json` and the
/// `.gitattributes` generated from it together, as every device's access rule expects. The change is
/// computed against the branch tip the commit builds on, so a kind another process added meanwhile
/// is kept. Afterwards `profile.kinds` is the new table.
extension Records {
    /// Adds `kinds` to the profile as one commit signed by `identity`, an active Admin. Refused,
    /// changing nothing, when a name or directory is already taken (by the profile or by another of
    /// `kinds`), or a directory would lie inside another kind's. The result's value is the new table;
    /// `kinds` empty commits nothing.
    @discardableResult
    public func addKinds(_ kinds: [RecordKind], as identity: Identity) throws -> WriteResult<KindsTable> {
        try changeKinds(as: identity, action: .added) { table in
            var table = table
            for kind in kinds {
                table = try KindChange.adding(kind, to: table, profile: profile.info.name)
            }
            return (table, kinds.map { RecordChange(kind: KindChange.changeKind, id: $0.name, action: .added) })
        }
    }

    /// Changes kind `name`'s merge policy and/or its writers as one commit signed by `identity`, an
    /// active Admin. Its directory never changes (`directory`, when given, must be the one it has: every
    /// device finds its files there), and it cannot become or stop being a log (`append`): its files
    /// differ (one `.jsonl` per day against one `.json` per record). Setting what the kind already has
    /// commits nothing. The result's value is the kind as it now is.
    @discardableResult
    public func setKind(name: String, policy: MergePolicy? = nil, writers: Role? = nil, directory: String? = nil,
                        as identity: Identity) throws -> WriteResult<RecordKind> {
        guard policy != nil || writers != nil || directory != nil else {
            throw ConcordError.invalidInput(.kindDeclaration, "give what to change about kind \"\(name)\": its policy, its writers, or both")
        }
        var changed: RecordKind?
        let result = try changeKinds(as: identity, action: .updated) { table in
            guard let kind = table.kind(named: name) else {
                throw ConcordError.unknownKind(name, known: table.kinds.map(\.name))
            }
            if let directory, directory != kind.directory {
                throw ConcordError.invalidInput(.kindDeclaration, "kind \"\(name)\" keeps its directory \"\(kind.directory)\": its files are there on every device "
                                                + "and in history; add a new kind with directory \"\(directory)\" instead")
            }
            let newPolicy = policy ?? kind.policy
            if (newPolicy == .append) != (kind.policy == .append) {
                throw ConcordError.invalidInput(.kindDeclaration, "kind \"\(name)\" cannot change from \(kind.policy.rawValue) to \(newPolicy.rawValue): a log kind "
                                                + "(append) keeps one .jsonl file per day, other kinds one .json file per record; add a new kind instead")
            }
            let updated = try RecordKind(name: kind.name, directory: kind.directory, policy: newPolicy, writers: writers ?? kind.writers)
            changed = updated
            guard updated != kind else { return (table, []) }
            // Same names, same directories: the table stays valid.
            let kinds = table.kinds.map { $0.name == name ? updated : $0 }
            return (try KindsTable(kinds), [RecordChange(kind: KindChange.changeKind, id: name, action: .updated)])
        }
        guard let changed else { throw ConcordError.unknownKind(name, known: profile.kinds.kinds.map(\.name)) }
        return WriteResult(value: changed, commit: result.commit, changes: result.changes)
    }

    /// One commit of the kinds table `change` makes from the branch tip's (nothing when its changes
    /// are empty), by `identity` once checked to be an Admin; then the profile reads the new table.
    private func changeKinds(as identity: Identity, action: ChangeAction,
                             _ change: (KindsTable) throws -> (KindsTable, [RecordChange])) throws -> WriteResult<KindsTable> {
        // Kinds are the owner's document: written as the owner, as membership is (a member acting on
        // this device through 'concord switch' may not change them, docs/security.md).
        let result = try write(as: identity, action: action, asOwner: true) { transaction -> KindsTable in
            try profile.members.authorizeAdmin(identity, action: "changing its kinds")
            let current = try transaction.currentBytes(KindsTable.path).map { bytes in
                do { return try KindsTable.decode(bytes) } catch {
                    throw ConcordError.corruptRecord(path: KindsTable.path, reason: error.localizedDescription)
                }
            } ?? .empty
            let (table, changes) = try change(current)
            guard !changes.isEmpty else { return current }
            transaction.stage(KindsTable.path, table.canonicalBytes(), changes)
            transaction.stage(ProfilePaths.gitattributes, Array(table.gitattributes().utf8), [])
            return table
        }
        profile.kinds = result.value
        return result
    }
}

/// What kind changes share: the table checks, phrased for people, and how a change is reported.
package enum KindChange {
    /// The `kind` a kind change's `RecordChange` carries (`kinds/notes: added`), as member changes carry `members`.
    static let changeKind = "kinds"

    /// `table` with `kind` added; refused, as invalid input naming what to do, when its name or its
    /// directory is taken, or its directory and another kind's lie one inside the other.
    package static func adding(_ kind: RecordKind, to table: KindsTable, profile: String) throws -> KindsTable {
        if let taken = table.kind(named: kind.name) {
            throw ConcordError.invalidInput(.kindDeclaration, "kind \"\(kind.name)\" already exists in \"\(profile)\" (\(describe(taken)))",
                                            remedy: .changeKind(kind.name))
        }
        if let owner = table.kinds.first(where: { $0.directory == kind.directory }) {
            throw ConcordError.invalidInput(.kindDeclaration, "directory \"\(kind.directory)\" is already kind \"\(owner.name)\"'s in \"\(profile)\"; "
                                            + "give kind \"\(kind.name)\" another directory (--directory)")
        }
        if let other = table.kinds.first(where: { kind.directory.hasPrefix($0.directory + "/") || $0.directory.hasPrefix(kind.directory + "/") }) {
            throw ConcordError.invalidInput(.kindDeclaration, "directory \"\(kind.directory)\" of kind \"\(kind.name)\" and \"\(other.directory)\" of kind "
                                            + "\"\(other.name)\" lie one inside the other; give kind \"\(kind.name)\" another directory (--directory)")
        }
        do { return try table.adding(kind) } catch {
            throw ConcordError.invalidInput(.kindDeclaration, error.errorDescription ?? "kind \"\(kind.name)\" cannot be added")
        }
    }

    /// `directory vocabulary, lww, writers editor`.
    static func describe(_ kind: RecordKind) -> String {
        "directory \(kind.directory), \(kind.policy.rawValue), writers \(kind.writers.rawValue)"
    }

    /// The profile's part of an app's declaration, the model's refusal (an invalid name or
    /// directory) as invalid input.
    package static func recordKind(_ kind: Kind) throws -> RecordKind {
        do { return try kind.recordKind() } catch {
            throw ConcordError.invalidInput(.kindDeclaration, error.errorDescription ?? "invalid kind \"\(kind.name)\"")
        }
    }
}
