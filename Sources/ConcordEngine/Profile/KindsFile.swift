import ConcordModel
import Foundation

/// A profile's kinds table as `.concord/kinds.json` in its working tree has it, read again only
/// when that file changed since it was last read (one `stat` per look): so an engine sees kinds
/// another engine or process brought in (a store's sync, `concord kinds add`, a plain `git pull`)
/// without being opened again. A file that is gone or unreadable leaves the last table read.
final class KindsFile {
    /// What identifies one version of the file: device, inode, size and modification time.
    private struct Signature: Equatable {
        let device: UInt64, inode: UInt64, size: Int64, seconds: Int64, nanoseconds: Int64
    }

    private let path: String
    private var table: KindsTable
    private var signature: Signature?

    /// `table` is what the file at `path` holds now.
    init(path: String, table: KindsTable) {
        self.path = path
        self.table = table
        signature = Self.signature(of: path)
    }

    /// The table the file holds, read again if it changed.
    var current: KindsTable {
        let now = Self.signature(of: path)
        guard now != signature else { return table }
        signature = now
        if now != nil, let data = FileManager.default.contents(atPath: path), let decoded = try? KindsTable.decode(Array(data)) {
            table = decoded
        }
        return table
    }

    /// Takes `table` as what the file now holds (just written by this engine's commit).
    func replace(with table: KindsTable) {
        self.table = table
        signature = Self.signature(of: path)
    }

    private static func signature(of path: String) -> Signature? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return Signature(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int64(info.st_size),
                         seconds: Int64(modified.tv_sec), nanoseconds: Int64(modified.tv_nsec))
    }
}
