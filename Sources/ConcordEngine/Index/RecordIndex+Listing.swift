import ConcordModel
import Foundation
import GRDB

extension RecordIndex {
    /// `Records.list` (what `concord ls` prints) with the record kinds read from the index: the
    /// same items in the same order and the same warnings. The working tree's record files are
    /// listed (directories only) and each one's size compared with the committed file's
    /// (`files`); a file that is not committed as it is there (added, or changed in size by hand)
    /// is read as `Records.list` reads it. Log kinds are read from their files.
    public func list(kind kindName: String? = nil) throws -> Listing {
        var (items, warnings) = ([ListedItem](), [String]())
        for kind in try profile.kinds(selecting: kindName) {
            if kind.policy == .append {
                let listing = try profile.records.list(kind: kind.name)
                items += listing.items
                warnings += listing.warnings
                continue
            }
            // Each committed file's size and whether it is live; unreadable ones are read again (their warning).
            let committed = try reading { db in
                let rows = try Row.fetchAll(db, sql: "SELECT id, length(file), 1 FROM records WHERE kind = ? "
                                                + "UNION ALL SELECT id, size, 0 FROM files WHERE kind = ? AND state = 'deleted'",
                                            arguments: [kind.name, kind.name])
                return Dictionary(rows.map { ($0[0] as String, (size: $0[1] as Int, live: $0[2] as Bool)) }, uniquingKeysWith: { first, _ in first })
            }
            let root = profile.rootPath
            for path in profile.workingTree.recordFiles(of: kind) {
                let id = String((path as NSString).lastPathComponent.dropLast(5))
                var info = stat()
                if let file = committed[id], stat(root + path, &info) == 0, Int(info.st_size) == file.size {
                    if file.live { items.append(ListedItem(kind: kind.name, id: id)) }
                    continue
                }
                profile.records.listRecordFile(path, of: kind, into: &items, warnings: &warnings)
            }
        }
        return Listing(items: items, warnings: warnings)
    }
}
