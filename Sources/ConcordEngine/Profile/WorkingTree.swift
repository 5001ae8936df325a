import ConcordGit
import ConcordGitFormats
import ConcordModel
import Foundation

/// The files a person sees and edits (the working tree) and the index: reading records and logs
/// from them, bringing a new tree into them (a merge, a fast-forward, a clone's checkout), and
/// putting back what a killed write left half done (`restoreJournaledPaths`). Part of the engine:
/// reached as `Profile.workingTree`; every change to it is made under the profile lock.
package struct WorkingTree {
    let profile: Profile
    let repository: Repository
    private var rootPath: String { profile.rootPath }

    /// Reads and decodes the record file at `path` in the working tree; nil if there is none.
    package func readRecord(_ path: String) throws -> Record? {
        guard let bytes = try workingFile(path, limit: maxRecordBytes) else { return nil }
        do {
            let record = try Record.decode(bytes)
            guard "\(record.id).json" == (path as NSString).lastPathComponent else {
                throw ConcordError.corruptRecord(path: path, reason: "its id \"\(record.id)\" does not match the file name")
            }
            return record
        } catch let error as ConcordError {
            throw error
        } catch {
            throw ConcordError.corruptRecord(path: path, reason: error.localizedDescription)
        }
    }

    /// The bytes of `path` in the working tree, nil if there is none; a file over `limit` bytes is
    /// refused from its size, unread (a 1 GiB file must not cost 1 GiB to reject).
    func workingFile(_ path: String, limit: Int) throws -> Data? {
        var info = stat()
        guard stat(rootPath + path, &info) == 0 else { return nil }
        guard Int(info.st_size) <= limit else {
            throw ConcordError.corruptRecord(path: path, reason: "it is \(info.st_size) bytes, over the \(limit)-byte limit")
        }
        return FileManager.default.contents(atPath: rootPath + path)
    }

    /// The entries of a log kind from all its day files. With `strict`, an unreadable day file is
    /// an error; otherwise it is skipped and reported as a warning.
    func readLog(_ kind: RecordKind, strict: Bool) throws -> (entries: [LogEntry], warnings: [String]) {
        var entries = [LogEntry]()
        var warnings = [String]()
        for name in fileNames(in: kind.directory, extension: "jsonl") {
            let path = "\(kind.directory)/\(name)"
            do {
                guard let bytes = try workingFile(path, limit: ProfilePathRules.maxLogFileBytes) else { continue }
                entries += try Transaction.parseLog(Array(bytes), path: path)
            } catch {
                if strict { throw error }
                warnings.append("skipped \(path): \(error.localizedDescription)")
            }
        }
        return (entries.sorted(), warnings)
    }

    /// The record files of record kind `kind` in the working tree (every bucket directory), sorted
    /// by file name, i.e. by record id.
    func recordFiles(of kind: RecordKind) -> [String] {
        let buckets = ((try? FileManager.default.contentsOfDirectory(atPath: rootPath + kind.directory)) ?? [])
            .filter { RecordPaths.isBucket($0) }
        var files = [(name: String, path: String)]()
        for bucket in buckets {
            let directory = "\(kind.directory)/\(bucket)"
            files += fileNames(in: directory, extension: "json").map { ($0, "\(directory)/\($0)") }
        }
        return files.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }.map(\.path)
    }

    /// File names with `extension` directly in `directory` of the working tree, sorted.
    func fileNames(in directory: String, extension: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: rootPath + directory)) ?? []
        return names.filter { $0.hasSuffix("." + `extension`) }.sorted()
    }

    /// Refuses (changing nothing) when a file an incoming change would write or remove holds an
    /// edit that no commit has: its bytes are neither those of the tree being left (`before`) nor
    /// those about to be written (`blob`). When `finishingAWrite` (the crash repair), a file
    /// holding only the first bytes of either is an interrupted write's, not an edit.
    func refuseOverwritingLocalEdits(_ files: [(path: TreePath, before: ObjectID?, blob: ObjectID?)], finishingAWrite: Bool = false) throws {
        let root = rootPath
        // Every file read and hashed on every core (a merge can change thousands).
        let edited = Parallel.map(files, minimumPerShare: 128) { file -> (path: String, blobs: [ObjectID?])? in
            let path = file.path.string, blobs = [file.before, file.blob]
            // A file the tree being left has, missing here, was deleted by hand.
            return Self.isHandEdited(root + path, allowed: blobs, missingIsAnEdit: file.before != nil) ? (path, blobs) : nil
        }.compactMap { $0 }.filter { !finishingAWrite || !isPartialWrite(at: root + $0.path, of: $0.blobs) }
        if !edited.isEmpty { throw ConcordError.uncommittedEdits(edited.map(\.path)) }
    }

    /// Writes the files that differ between two trees into the working tree and index, advances
    /// the clock past every record and log entry received, and refreshes the signers file when members changed.
    /// Returns the changed paths and how many of them are now live records.
    func update(from oldTree: ObjectID?, to newTree: ObjectID) throws -> (files: [String], liveRecords: Int) {
        try update(try repository.changedFiles(from: oldTree, to: newTree), to: newTree)
    }

    /// `update(from:to:)` for changes already listed.
    func update(_ files: [(path: TreePath, before: ObjectID?, blob: ObjectID?)], to newTree: ObjectID) throws -> (files: [String], liveRecords: Int) {
        let changes = try files.map { file in
            try file.blob.map { WorkingTreeChange(path: file.path, bytes: try repository.blob($0), blob: $0) } ?? WorkingTreeChange(removing: file.path)
        }
        // Each received record's and log file's stamp, found on every core (a clone has one per record).
        let received = Parallel.map(changes, minimumPerShare: 512) { change in Self.receivedStamp(change) }
        // The latest stamp the clock may move to: one too far ahead is passed over (see `LocalClock.maxClockLead`),
        // not the others received with it.
        let clock = profile.clock
        let latest = received.compactMap { $0?.stamp }.filter(clock.mayReach).max()
        let liveRecords = received.count { $0?.live == true }
        try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: newTree)
        // A received change is an HLC receive event: later local writes must sort after it.
        if let latest { try clock.save(latest) }
        if files.contains(where: { $0.path.string.hasPrefix(ProfilePaths.membersDirectory + "/") }) {
            try profile.configureGit(members: try profile.members.list())
        }
        return (files.map(\.path.string), liveRecords)
    }

    /// The newest stamp a received file carries (a record's, or its log's newest entry's) and
    /// whether it is a live record; nil for a removal and for other files.
    private static func receivedStamp(_ change: WorkingTreeChange) -> (stamp: HLC, live: Bool)? {
        guard let bytes = change.content?.bytes else { return nil }
        let path = change.path.string
        guard !path.hasPrefix(".concord/") else { return nil }
        if path.hasSuffix(".json"),
           let record = Record.peekStamp(bytes) ?? (try? Record.decode(bytes)).map({ ($0.stamp, $0.isDeleted) }) {
            return (record.stamp, !record.deleted)
        }
        // A received log entry is a receive event too: an answer must sort after its question.
        if path.hasSuffix(".jsonl"), let newest = (try? LogEntry.parseLogFile(bytes))?.map(\.at).max() {
            return (newest, false)
        }
        return nil
    }

    /// Puts every journaled path back as the branch has it (rewriting it, or removing it where
    /// the branch has no such file), records them in the index, and removes the journal. Called
    /// with the profile lock held, when a write failed or was killed mid-way. A file holding
    /// bytes that are neither what it held before the write, nor what the write put there (or the
    /// first bytes of it, which a kill while creating the file leaves), nor the branch's is a hand
    /// edit made since: refused (`unfinishedUpdateBlocked`), nothing changed.
    func restoreJournaledPaths() throws {
        let journal = CheckoutJournal(gitDirectory: repository.gitDirectory)
        guard journal.exists else { return }
        let root = rootPath
        // Under git's `index.lock` from before the branch is read (as a write holds it): while a
        // git command holds it, the replay refuses before it touches a file, not at its index write.
        try gitCall { try repository.holdingIndexLock {
            let headTree = try repository.resolveReference("HEAD").map { try repository.commit($0).tree }
            var changes = [WorkingTreeChange]()
            var edited = [String]()
            // A line git's rules refuse was not written by concord: nothing to put back there.
            for entry in journal.entries() {
                guard let path = try? TreePath(entry.path) else { continue }
                let head = try headTree.flatMap { tree in
                    try repository.entry(at: path.string, inTree: tree).flatMap { $0.kind == .blob ? $0.id : nil }
                }
                // A missing file is no edit: putting it back loses nothing.
                if entry.knowsContent, Self.isHandEdited(root + path.string, allowed: [entry.before, entry.after, head], missingIsAnEdit: false),
                   !isPartialWrite(at: root + path.string, of: [entry.before, entry.after, head]) {
                    edited.append(path.string)
                    continue
                }
                if let head {
                    changes.append(WorkingTreeChange(path: path, bytes: try repository.blob(head), blob: head))
                } else {
                    changes.append(WorkingTreeChange(removing: path))
                }
            }
            if !edited.isEmpty { throw ConcordError.unfinishedUpdateBlocked(edited) }
            try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: headTree)
        } }
        journal.remove()
    }

    /// True when something is at `path` that is not a regular file holding one of the `allowed`
    /// blobs (a directory or a link is the user's too), and for no file at all when `missingIsAnEdit`.
    static func isHandEdited(_ path: String, allowed: [ObjectID?], missingIsAnEdit: Bool) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return missingIsAnEdit }
        guard (info.st_mode & S_IFMT) == S_IFREG, let bytes = FileIO.contents(atPath: path) else { return true }
        return !allowed.contains(ObjectPack.id(of: bytes, type: .blob))
    }

    /// True when the regular file at `path` holds only the first bytes of one of `blobs` (none at
    /// all included): what a write killed while creating the file leaves (a new file is written
    /// in place). Every byte it holds is in that blob, so putting the file right loses nothing.
    func isPartialWrite(at path: String, of blobs: [ObjectID?]) -> Bool {
        guard let bytes = FileIO.contents(atPath: path) else { return false }
        return blobs.contains { blob in
            guard let blob, let full = try? repository.blob(blob) else { return false }
            return bytes.count < full.count && full.starts(with: bytes)
        }
    }
}
