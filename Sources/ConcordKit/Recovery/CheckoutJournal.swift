import ConcordGit
import ConcordGitFormats
import Foundation

/// The files a write is bringing into the working tree (`.git/concord/checkout-journal`): a bulk
/// write journals them before its branch moves, a merge or fast-forward after checking them and
/// before its branch moves, a small write when it could not finish. The next process to take the
/// profile lock puts the journaled paths back as the branch has them
/// (`Profile.restoreJournaledPaths`). The journal is removed once the write is recorded in the index.
///
/// Each entry names the file's blob before the write and the one it writes (when known), so the
/// restore can tell a file the write left from a hand edit made since, which it refuses to
/// overwrite. Format: the line `concord checkout journal 2`, then per file `path NUL before NUL
/// after NUL` (hex ids, empty when there is none; `?` for before when the entry does not know
/// what the file holds: a bulk write journals its paths before hashing, and a kill may leave a
/// file half written — those are put back whatever they hold). A journal without that line
/// (written before it existed) lists paths only, NUL-separated: those are put back as before.
struct CheckoutJournal {
    struct Entry {
        let path: String
        /// The file's blob before the write (nil: there was no file, or not known).
        var before: ObjectID?
        /// The blob the write puts there (nil: the write removes it, or not known yet).
        var after: ObjectID?
        /// False for an entry of a journal without ids (see the type's comment).
        var knowsContent = true
    }

    static let header = Array("concord checkout journal 2\n".utf8)
    /// In place of `before`: the entry does not know what the file holds (`knowsContent` false).
    static let unknown = "?"
    let path: String

    init(gitDirectory: String) {
        path = gitDirectory + "concord/checkout-journal"
    }

    var exists: Bool { FileManager.default.fileExists(atPath: path) }

    /// Written (and with `durable`, fsynced) before the first file is. A merge's journal need not
    /// survive a machine crash: after one, the crash repair compares the index with the branch.
    func record(_ entries: [Entry], durable: Bool = true) throws {
        var bytes = Self.header
        bytes.reserveCapacity(bytes.count + entries.reduce(0) { $0 + $1.path.utf8.count + 83 })
        for entry in entries {
            bytes += entry.path.utf8
            bytes.append(0)
            bytes += (entry.knowsContent ? entry.before?.hex ?? "" : Self.unknown).utf8
            bytes.append(0)
            bytes += (entry.after?.hex ?? "").utf8
            bytes.append(0)
        }
        do {
            try FileIO.write(bytes, to: path, makingParents: true, durable: durable)
            if durable { try FileIO.syncDirectory((path as NSString).deletingLastPathComponent) }
        } catch {
            throw ConcordError.io("cannot write \(path): \(error)")
        }
    }

    func entries() -> [Entry] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        let bytes = [UInt8](data)
        guard bytes.starts(with: Self.header) else {
            return bytes.split(separator: 0).map { Entry(path: String(decoding: $0, as: UTF8.self), knowsContent: false) }
        }
        let fields = bytes[Self.header.count...].split(separator: 0, omittingEmptySubsequences: false)
        var entries = [Entry]()
        var index = fields.startIndex
        while index + 2 < fields.endIndex {
            let id = { (field: ArraySlice<UInt8>) in ObjectID(hex: String(decoding: field, as: UTF8.self)) }
            entries.append(Entry(path: String(decoding: fields[index], as: UTF8.self), before: id(fields[index + 1]),
                                 after: id(fields[index + 2]), knowsContent: !fields[index + 1].elementsEqual(Self.unknown.utf8)))
            index += 3
        }
        return entries
    }

    func remove() {
        unlink(path)
    }
}

extension Profile {
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
        try gitCall {
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
        }
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
