import ConcordGit
import Foundation

/// The paths a bulk write is writing into the working tree while its commit is still being made
/// (`.git/concord/checkout-journal`, NUL-separated). A write killed before its branch moved
/// leaves files the branch does not have; the next process to take the profile lock puts the
/// journaled paths back as the branch has them (`Profile.restoreJournaledPaths`). The journal is
/// removed once the write is recorded in the index.
struct CheckoutJournal {
    let path: String

    init(gitDirectory: String) {
        path = gitDirectory + "concord/checkout-journal"
    }

    var exists: Bool { FileManager.default.fileExists(atPath: path) }

    /// Written (and with `durable`, fsynced) before the first file is. A merge's journal need not
    /// survive a machine crash: after one, the crash repair compares the index with the branch.
    func record(_ paths: [String], durable: Bool = true) throws {
        var bytes = [UInt8]()
        bytes.reserveCapacity(paths.reduce(0) { $0 + $1.utf8.count + 1 })
        for path in paths {
            bytes += path.utf8
            bytes.append(0)
        }
        do {
            try FileIO.write(bytes, to: path, makingParents: true, durable: durable)
            if durable { try FileIO.syncDirectory((path as NSString).deletingLastPathComponent) }
        } catch {
            throw ConcordError.io("cannot write \(path): \(error)")
        }
    }

    func paths() -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    func remove() {
        unlink(path)
    }
}

extension Profile {
    /// Puts every journaled path back as the branch has it (rewriting it, or removing it where
    /// the branch has no such file), records them in the index, and removes the journal. Called
    /// with the profile lock held, when a bulk write failed or was killed mid-way.
    func restoreJournaledPaths() throws {
        let journal = CheckoutJournal(gitDirectory: repository.gitDirectory)
        guard journal.exists else { return }
        try gitCall {
            let headTree = try repository.resolveReference("HEAD").map { try repository.commit($0).tree }
            var changes = [WorkingTreeChange]()
            // A line git's rules refuse was not written by concord: nothing to put back there.
            for path in journal.paths().compactMap({ try? TreePath($0) }) {
                if let headTree, let entry = try repository.entry(at: path.string, inTree: headTree), entry.kind == .blob {
                    changes.append(WorkingTreeChange(path: path, bytes: try repository.blob(entry.id), blob: entry.id))
                } else {
                    changes.append(WorkingTreeChange(removing: path))
                }
            }
            try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: headTree)
        }
        journal.remove()
    }
}
