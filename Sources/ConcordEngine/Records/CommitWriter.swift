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
    let repository: Repository
    let identity: Identity

    /// Commits `files` on top of `expectedHead` and moves the branch from `expectedHead` by
    /// compare-and-swap. Throws `GitError` with code `.modified` when the branch moved meanwhile.
    /// git's `index.lock` is held from before the tree is built until the index shows the new
    /// commit, so a plain `git commit` running meanwhile cannot commit an index without these
    /// files on top of it (issue 42, `IndexLock`); `ConcordError.gitIndexLocked` when git holds it
    /// longer than the environment's `gitLockTimeout`.
    func commit(files: [FileChange], message: CommitMessage, expectedHead: ObjectID?) throws -> ObjectID {
        try repository.holdingGitIndexLock { try commitHoldingIndexLock(files: files, message: message, expectedHead: expectedHead) }
    }

    private func commitHoldingIndexLock(files: [FileChange], message: CommitMessage, expectedHead: ObjectID?) throws -> ObjectID {
        let baseTree = try expectedHead.map { try repository.commit($0).tree }
        // The commit's date is this device's wall clock: causality is in the stamp (the HLC trailer),
        // which follows the newest stamp received, so a device whose clock runs fast moves nobody's dates.
        let author = GitSignature(name: identity.member, email: Self.email(identity),
                                  time: profile.environment.wallClock() / 1000)
        let parents = expectedHead.map { [$0] } ?? []

        /// Signs the commit of `tree` and moves the branch to it.
        func commit(tree: ObjectID) throws -> ObjectID {
            let commit = try repository.createSignedCommit(tree: tree, parents: parents, author: author,
                                                           message: message.text, sign: { identity.sign($0) })
            let branch = try repository.headBranch()
            try repository.updateReference(branch, to: commit, expected: expectedHead, message: "concord: \(message.summary)")
            return commit
        }

        let packed = files.count > Self.packThreshold
        guard packed else {
            // Blobs and trees as loose objects, the signed commit, then the files and the index.
            var edits = [TreePath: ObjectID?]()
            var changes = [WorkingTreeChange]()
            for file in files {
                let path = try treePath(file.path)
                if let bytes = file.bytes {
                    let blob = try repository.writeBlob(bytes)
                    edits[path] = .some(blob)
                    changes.append(WorkingTreeChange(path: path, bytes: bytes, blob: blob))
                } else {
                    edits[path] = .some(nil)
                    changes.append(WorkingTreeChange(removing: path))
                }
            }
            PerformanceTrace.step("blobs written")
            let tree = try repository.writeTree(base: baseTree, edits: edits)
            PerformanceTrace.step("trees written")
            let commit = try commit(tree: tree)
            PerformanceTrace.step("commit signed, branch moved")
            do {
                try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: tree)
            } catch {
                // Journaled now, so the next write or sync (which takes the profile lock) finishes the job.
                try? CheckoutJournal(gitDirectory: repository.gitDirectory)
                    .record(journalEntries(changes.map { ($0.path, $0.content?.blob) }, baseTree: baseTree))
                throw Self.unfinished(commit, error)
            }
            return commit
        }

        // A bulk write creates its files while the blobs, trees, pack and commit are made: file
        // creation is kernel work that would otherwise follow them (about a third of a
        // 10,000-record import). The paths are journaled first, so a failure or a kill before
        // the branch moves puts them back as the branch has them.
        let paths = try files.map { try treePath($0.path) }
        let journal = CheckoutJournal(gitDirectory: repository.gitDirectory)
        // Nothing hashed yet, and a kill may leave a file half written: these paths are put back whatever they hold.
        try journal.record(files.map { CheckoutJournal.Entry(path: $0.path, knowsContent: false) })
        let write = repository.startWorkingTreeWrite(Array(zip(paths, files.map(\.bytes))))
        PerformanceTrace.step("paths journaled, file writes started")
        let blobs: [ObjectID?], tree: ObjectID, commitID: ObjectID
        do {
            // The blobs' pack is stored first, so libgit2 finds every blob a new tree names
            // (its strict object creation stays on); the trees follow in a second, small pack.
            var blobPack = ObjectPack()
            var added = blobPack.addBlobs(files.compactMap(\.bytes))[...]
            blobs = files.map { $0.bytes == nil ? nil : added.removeFirst() }
            PerformanceTrace.step("blobs hashed")
            try blobPack.write(into: repository)
            PerformanceTrace.step("blob pack written")
            var treePack = ObjectPack()
            tree = try repository.writeTree(base: baseTree, edits: Array(zip(paths, blobs)), into: &treePack)
            PerformanceTrace.step("trees built")
            try treePack.write(into: repository)
            PerformanceTrace.step("tree pack written")
            commitID = try commit(tree: tree)
            PerformanceTrace.step("commit signed, branch moved")
        } catch {
            try? repository.waitForWorkingTreeWrite(write)
            try? profile.workingTree.restoreJournaledPaths()
            throw error
        }
        do {
            try repository.finishWorkingTreeWrite(write, blobs: blobs, rebuildingDamagedIndexFrom: tree)
        } catch {
            // The files are written: the journal now says what they hold, so a hand edit made
            // before the next command (which finishes the update) is not overwritten.
            try? journal.record(journalEntries(Array(zip(paths, blobs)), baseTree: baseTree))
            throw Self.unfinished(commitID, error)   // the journal stays for the next command
        }
        journal.remove()
        PerformanceTrace.step("index updated")
        return commitID
    }

    /// Journal entries for files written to `blob`s (nil: removed) over `baseTree`'s.
    private func journalEntries(_ files: [(path: TreePath, blob: ObjectID?)], baseTree: ObjectID?) -> [CheckoutJournal.Entry] {
        files.map { file in
            let before = baseTree.flatMap { try? repository.entry(at: file.path.string, inTree: $0) }
            return CheckoutJournal.Entry(path: file.path.string, before: before?.kind == .blob ? before?.id : nil, after: file.blob)
        }
    }

    /// The error for a commit that is made (and stays: the branch has moved) whose files or index
    /// could not be brought up to date (a disk error, or `CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE`
    /// in tests; no longer git holding `index.lock`, which concord holds throughout). Not a `GitError`, so
    /// the write is not retried as if the branch had moved under it.
    /// `moved`: the branch moved to a commit received or merged (a sync), not one just written.
    static func unfinished(_ commit: ObjectID, _ error: Error, moved: Bool = false) -> ConcordError {
        ConcordError.io(.write, path: nil, (moved ? "the branch moved to \(commit.hex.prefix(7))" : "commit \(commit.hex.prefix(7)) is made")
            + ", but the working tree and index could not be updated (\(error)); "
            + "the next concord write or sync in this profile finishes the update")
    }

    /// `member@device`, with anything git would choke on in an e-mail removed.
    static func email(_ identity: Identity) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        let clean = { (text: String) in String(text.filter { allowed.contains($0) }) }
        return "\(clean(identity.member))@\(clean(identity.device))"
    }
}
