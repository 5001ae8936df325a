import ConcordModel
import Foundation

/// The calls this package's command-line tool makes of a store beyond an app's: each one engine
/// call, run on the store's queue as the store's identity (the sync-like ones on its sync queue),
/// so the tool is a client of the store like any app. Not public: an app has the public calls, or
/// no need (the tool's `--keep`, logging a switch into a template's log kind).
extension ConcordStore {
    /// `sync(remote:)`, then what a device does with its copy when the remote says it may no
    /// longer have it (`CopyRemoval`): deleted unless `keepCopy`, the unsent edits saved first;
    /// throws the removal's error, which says what was done.
    package func sync(remote: String, keepCopy: Bool) throws -> SyncReport {
        do {
            return try sync(remote: remote)
        } catch {
            // The store's removal records why, from the removal that ended it (the same reason).
            guard let removal = try CopyRemoval.apply(for: error, keepCopy: keepCopy, removingCopy: { _ in try removeLocalCopy(unsentTo: remote) })
            else { throw error }
            throw removal.error
        }
    }

    /// Merges `revision` (a branch, a remote's main, a commit) with the kinds' policies (`Sync.merge`).
    package func merge(revision: String) throws -> MergeReport {
        let identity = identity
        return try withProfile { try $0.sync.merge(revision: revision, as: identity) }
    }

    /// Forgets remote `name` (`Sync.removeRemote`).
    package func removeRemote(_ name: String) throws {
        try withProfile { try $0.sync.removeRemote(name) }
    }

    /// Trusts the host key ssh remote `name`'s server presents now, and returns its fingerprint (`Sync.trustRemote`).
    package func trustRemote(_ name: String) throws -> String {
        let identity = identity
        return try withProfile { try $0.sync.trustRemote(name, identity: identity) }
    }

    /// Puts back remote `name`'s main that devices refuse (`RemoteRestore.run`), on the sync queue.
    package func restoreRemote(_ name: String) throws -> RemoteRestoreReport? {
        let identity = identity
        return try onSyncQueueAsCaller { try $0.remoteRestore.run(remote: name, as: identity) }
    }

    /// Adds `kinds` to the profile in one commit (`Records.addKinds`; Admins only).
    package func addKinds(_ kinds: [RecordKind]) throws -> WriteResult<KindsTable> {
        let identity = identity
        return try withProfile { try $0.records.addKinds(kinds, as: identity) }
    }

    /// Changes kind `name`'s policy or writers (`Records.setKind`; Admins only).
    package func setKind(name: String, policy: MergePolicy?, writers: Role?, directory: String?) throws -> WriteResult<RecordKind> {
        let identity = identity
        return try withProfile { try $0.records.setKind(name: name, policy: policy, writers: writers, directory: directory, as: identity) }
    }

    /// `addDevice(_:key:proof:)` with the proof optional, as a profile before data format 5 takes it.
    package func addOwnDevice(_ device: String, key: SSHPublicKey, proof: String?) throws -> WriteResult<Member> {
        let identity = identity
        return try withProfile { try $0.members.addDevice(device, key: key, proof: proof, as: identity) }
    }

    /// Removes one of the store's member's own device keys, named by label or fingerprint (`Members.removeDevice`).
    package func removeDevice(_ device: String) throws -> WriteResult<Member> {
        let identity = identity
        return try withProfile { try $0.members.removeDevice(device, as: identity) }
    }

    /// `switchActing(to:)`, the switch also appended (as the owner) to the profile's first log kind
    /// when `logged` and the owner may write it, as the tool does for a template's profile; returns
    /// that entry's id.
    package func switchActing(to member: String, logged: Bool) throws -> String? {
        let identity = identity
        return try withProfile { try $0.members.switchActing(to: member, as: identity, logged: logged) }
    }
}

/// What the tool reads beyond an app's reader.
extension StoreReader {
    /// `text` (`kind/id`) as the profile's kind and the id (`Records.parseReference`).
    package func reference(_ text: String) throws -> (RecordKind, RecordID) { try profile.records.parseReference(text) }

    /// The profile's kind named `name` (`unknownKind` otherwise).
    package func kind(named name: String) throws -> RecordKind { try profile.kind(named: name) }

    /// The entries of log kind `kind` whose id is `id` (one, or those of an imported entry's line).
    package func logEntries(_ kind: RecordKind, id: RecordID) throws -> [LogEntry] { try profile.records.logEntries(kind, id: id) }

    /// The live records (of `kind`), from this device's record index (`RecordIndex.list`).
    package func indexedList(kind: String?) throws -> Listing { try profile.index.list(kind: kind) }

    /// The bytes of record `reference` at commit `hex` (nil where it did not exist).
    package func recordVersion(_ reference: String, atCommit hex: String) throws -> [UInt8]? {
        try profile.history.recordVersion(reference, atCommit: hex)
    }
}
