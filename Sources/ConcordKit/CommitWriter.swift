import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// One file a commit writes (or removes, when `bytes` is nil).
struct FileChange {
    var path: String
    var bytes: [UInt8]?
}

/// Turns a set of file changes into one signed commit on the profile's branch, then brings the
/// working tree and index in line. The caller holds the profile lock.
struct CommitWriter {
    /// Above this many files, blobs are written as one pack instead of loose files.
    static let packThreshold = 64

    let profile: Profile
    let identity: Identity

    /// Commits `files` on top of `expectedHead` and moves the branch from `expectedHead` by
    /// compare-and-swap. Throws `GitError` with code `.modified` when the branch moved meanwhile.
    func commit(files: [FileChange], message: CommitMessage, expectedHead: ObjectID?) throws -> ObjectID {
        let repository = profile.repository
        let baseTree = try expectedHead.map { try repository.commit($0).tree }
        let author = GitSignature(name: identity.member, email: Self.email(identity),
                                  time: message.stamp.wallMillis / 1000)
        let parents = expectedHead.map { [$0] } ?? []

        // Blobs, then the trees on the edited paths (one pack for bulk writes, loose objects
        // otherwise), then the signed commit.
        var pack = ObjectPack()
        var edits = [String: ObjectID?]()
        var changes = [WorkingTreeChange]()
        changes.reserveCapacity(files.count)
        let packed = files.count > Self.packThreshold
        var blobs = (packed ? pack.addBlobs(files.compactMap(\.bytes)) : [])[...]
        for file in files {
            if let bytes = file.bytes {
                let blob = packed ? blobs.removeFirst() : try repository.writeBlob(bytes)
                edits[file.path] = .some(blob)
                changes.append(WorkingTreeChange(path: file.path, bytes: bytes, blob: blob))
            } else {
                edits[file.path] = .some(nil)
                changes.append(WorkingTreeChange(removing: file.path))
            }
        }
        func store() throws -> (tree: ObjectID, commit: ObjectID) {
            let tree = packed ? try repository.writeTree(base: baseTree, edits: edits, into: &pack)
                              : try repository.writeTree(base: baseTree, edits: edits)
            if packed { try pack.write(into: repository) }
            let commit = try repository.createSignedCommit(tree: tree, parents: parents, author: author,
                                                           message: message.text, sign: { identity.sign($0) })
            let branch = try repository.headBranch()
            try repository.updateReference(branch, to: commit, expected: expectedHead, message: "concord: \(message.summary)")
            return (tree, commit)
        }
        guard packed else {
            let (tree, commit) = try store()
            try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: tree)
            return commit
        }
        // A bulk write creates its files while the trees, pack and commit are made: file creation
        // is kernel work that would otherwise follow them (about a third of a 10,000-record
        // import). The paths are journaled first, so a failure or a kill before the branch moves
        // puts them back as the branch has them.
        let journal = CheckoutJournal(gitDirectory: repository.gitDirectory)
        try journal.record(changes.map(\.path))
        let write = repository.startWorkingTreeWrite(changes)
        let stored: (tree: ObjectID, commit: ObjectID)
        do {
            stored = try store()
        } catch {
            try? repository.waitForWorkingTreeWrite(write)
            try? profile.restoreJournaledPaths()
            throw error
        }
        try repository.finishWorkingTreeWrite(write, rebuildingDamagedIndexFrom: stored.tree)
        journal.remove()
        return stored.commit
    }

    /// `member@device`, with anything git would choke on in an e-mail removed.
    static func email(_ identity: Identity) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        let clean = { (text: String) in String(text.filter { allowed.contains($0) }) }
        return "\(clean(identity.member))@\(clean(identity.device))"
    }
}
