import ConcordGit
import ConcordGitFormats
import Foundation

/// The files a write is bringing into the working tree (`.git/concord/checkout-journal`): a bulk
/// write journals them before its branch moves, a merge or fast-forward after checking them and
/// before its branch moves, a small write when it could not finish. The next process to take the
/// profile lock puts the journaled paths back as the branch has them
/// (`WorkingTree.restoreJournaledPaths`). The journal is removed once the write is recorded in the index.
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
            throw ConcordError.io(.write, path: path, "cannot write \(path): \(error)")
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
