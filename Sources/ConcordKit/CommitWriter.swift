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
        for file in files {
            if let bytes = file.bytes {
                let blob = packed ? try pack.add(bytes) : try repository.writeBlob(bytes)
                edits[file.path] = .some(blob)
                changes.append(WorkingTreeChange(path: file.path, bytes: bytes, blob: blob))
            } else {
                edits[file.path] = .some(nil)
                changes.append(WorkingTreeChange(removing: file.path))
            }
        }
        let tree: ObjectID
        if packed {
            tree = try repository.writeTree(base: baseTree, edits: edits, into: &pack)
            try pack.write(into: repository)
        } else {
            tree = try repository.writeTree(base: baseTree, edits: edits)
        }
        let commit = try repository.createSignedCommit(tree: tree, parents: parents, author: author,
                                                       message: message.text, sign: { identity.sign($0) })
        let branch = try repository.headBranch()
        try repository.updateReference(branch, to: commit, expected: expectedHead, message: "concord: \(message.summary)")
        try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: tree)
        return commit
    }

    /// `member@device`, with anything git would choke on in an e-mail removed.
    static func email(_ identity: Identity) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        let clean = { (text: String) in String(text.filter { allowed.contains($0) }) }
        return "\(clean(identity.member))@\(clean(identity.device))"
    }
}
