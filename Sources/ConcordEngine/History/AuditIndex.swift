import ConcordGit
import ConcordModel
import Foundation

/// Which files each commit of the profile's history changed, so that the audit of one record
/// (`concord log --record`, `concord history`) reads the commits that changed it and no others:
/// at 100,000 commits, walking every commit's tree takes as long as `git log -- <file>` (bench
/// row B12), reading this index a few milliseconds.
///
/// A cache derived from the history, never synced: `.git/concord/audit-index`. Text, appended to
/// and never rewritten in place:
///
///     concord-audit-index 2
///     c <commit hex> <author time> <path>\t<path>…   one line per commit: the files whose entry
///                                                       differs from its first parent's (all, for
///                                                       the root), then, for a merge, `=<kind>/<id>`
///                                                       for each record both its sides changed
///                                                       since their merge base (version 1 named the
///                                                       records of its `Concord-Resolved` trailers)
///     t <commit hex>                                  after each batch: the tip it now covers
///
/// Each catch-up appends the commits reachable from HEAD and not from the covered tip, parents
/// before children, then the new tip line, in one write. `init` and `clone` create the index;
/// every write, sync and clone catches it up where it exists (a sync from what its incoming check
/// already compared), and every query does before reading it, so a profile from before the index
/// pays one walk of its history at its first query. The index covers exactly the history of its
/// last tip line; when HEAD no longer contains that tip (history replaced by hand), or the file
/// is of another version or malformed, it is built again from nothing. A torn last batch (a
/// killed process) has no tip line: it is cut off and appended again. Nothing here is trusted
/// beyond what the profile's own history says: the commits it names are read and checked as before.
struct AuditIndex {
    static let header = "concord-audit-index 2\n"
    let repository: Repository
    var path: String { repository.gitDirectory + "concord/audit-index" }

    /// A commit the index names for a query: its id and author time.
    struct Hit: Hashable {
        let commit: ObjectID
        let time: Int64
        /// Where its line is in the file (later lines are newer within one time).
        let offset: Int
    }

    /// The index brought up to `head` (`catchUp`), as bytes up to its last tip line: what queries read.
    func read(upTo head: ObjectID) throws -> [UInt8] {
        try catchUp(to: head)
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        var bytes = Array(data)
        // Lines after the last tip line are a batch being written by another process: not yet covered.
        bytes.removeSubrange(Self.coveredTip(in: bytes).1...)
        return bytes
    }

    /// Appends to the index the commits reachable from `head` and not from the tip it covers.
    /// Reads only the end of the file (and its header). Updates are serialized by a lock on the
    /// file. `known` gives the changed files of commits already compared with their first parent
    /// (a sync's or clone's `IncomingCheck`), whose trees are then not read again. With
    /// `onlyIfPresent`, a profile without an index is left without one.
    func catchUp(to head: ObjectID, known: [ObjectID: [[UInt8]]] = [:], onlyIfPresent: Bool = false) throws {
        if onlyIfPresent, !FileManager.default.fileExists(atPath: path) { return }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ConcordError.io(.open, path: path, "cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw ConcordError.io(.lock, path: path, "cannot lock \(path): \(String(cString: strerror(errno)))") }
        }
        let header = Array(Self.header.utf8)
        let size = Int(lseek(descriptor, 0, SEEK_END))
        var (tip, end) = (ObjectID?.none, header.count)
        let hasHeader = try size >= header.count && readBytes(descriptor, at: 0, count: header.count) == header
        if hasHeader {
            // The last tip line, from the end: a window that doubles until it holds one (or is the whole file).
            var window = min(size, 64 * 1024)
            while true {
                let start = size - window
                let (found, foundEnd) = Self.coveredTip(in: try readBytes(descriptor, at: start, count: window))
                if let found {
                    (tip, end) = (found, start + foundEnd)
                    break
                }
                if start == 0 { break }   // no tip line yet
                window = min(size, window * 2)
            }
        }
        // A tip HEAD does not contain, or one that is not even here, is a history replaced by hand.
        let current = hasHeader && (tip.map { (try? repository.isAncestor($0, of: head)) == true } ?? true)
        if !current {
            // Another version, damage, or a replaced history: built again from nothing.
            (tip, end) = (nil, header.count)
            try truncate(descriptor, to: 0)
            try append(header, to: descriptor)
        } else if end < size {
            // What a killed update left after the last tip line.
            try truncate(descriptor, to: end)
        }
        if tip == head { return }
        let commits = try repository.newCommits(from: head, excluding: tip.map { [$0] } ?? [])
        var batch = [UInt8]()
        var recent = RecentTrees()
        var trees = [ObjectID: ObjectID]()   // commit → tree, for the commits of this batch
        for commit in commits {
            trees[commit.id] = commit.tree
            var paths: [[UInt8]]
            if let changed = known[commit.id] {
                paths = changed
            } else {
                let parentTree = try commit.parents.first.map { try trees[$0] ?? repository.commit($0).tree }
                paths = try repository.treeChanges(from: parentTree, to: commit.tree, recent: &recent).map(\.path)
            }
            // A merge: the records both its sides changed since their merge base, where it may have
            // left a write out (`LostEdit.inMerge` says which), found from the trees, not its trailers.
            if let contested = try LostEdit.Contested(commit, repository) {
                paths += contested.records.map { Array("=\($0.kind.name)/\($0.id)".utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
            }
            batch += Array("c \(commit.id.hex) \(commit.author.time) ".utf8)
            // The structural check lets no tab or newline into a name; a name with one is left out, not split.
            batch += Array(paths.filter { !$0.contains(0x0A) && !$0.contains(0x09) }.joined(separator: [0x09]))
            batch.append(0x0A)
        }
        batch += Array("t \(head.hex)\n".utf8)
        try append(batch, to: descriptor)
    }

    /// The commits whose line names `path` exactly (a file, or `=<kind>/<id>`), or, with
    /// `prefix`, any file starting with it; newest first (author time, then later lines first).
    static func commits(in bytes: [UInt8], path: String, prefix: Bool = false) -> [Hit] {
        let needle = Array(path.utf8)
        var first = [ObjectID: Hit]()
        var lineStart = 0
        while lineStart < bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.count
            defer { lineStart = lineEnd + 1 }
            // "c " + 40 hex digits + " " + time + " "
            guard lineEnd - lineStart > 44, bytes[lineStart] == 0x63, bytes[lineStart + 1] == 0x20, bytes[lineStart + 42] == 0x20,
                  let timeEnd = bytes[(lineStart + 43)..<lineEnd].firstIndex(of: 0x20) else { continue }
            let fields = bytes[(timeEnd + 1)..<lineEnd].split(separator: 0x09, omittingEmptySubsequences: true)
            guard fields.contains(where: { prefix ? $0.starts(with: needle) : $0.elementsEqual(needle) }),
                  let commit = ObjectID(hex: String(decoding: bytes[(lineStart + 2)..<(lineStart + 42)], as: UTF8.self)),
                  let time = Int64(String(decoding: bytes[(lineStart + 43)..<timeEnd], as: UTF8.self)) else { continue }
            // A commit appended twice (a batch repeated after a killed update) is listed once.
            if first[commit] == nil { first[commit] = Hit(commit: commit, time: time, offset: lineStart) }
        }
        return first.values.sorted { ($0.time, $0.offset) > ($1.time, $1.offset) }
    }

    /// The tip named by the last complete `t` line and where that line ends; (nil, where the
    /// header ends) when there is none.
    static func coveredTip(in bytes: [UInt8]) -> (ObjectID?, Int) {
        var end = bytes.count
        // Only complete lines count: drop a torn last line.
        if end > 0, bytes[end - 1] != 0x0A { end = (bytes.lastIndex(of: 0x0A) ?? -1) + 1 }
        while end > 0 {
            let start = (bytes[..<(end - 1)].lastIndex(of: 0x0A) ?? -1) + 1
            if end - start == 43, bytes[start] == 0x74, bytes[start + 1] == 0x20,
               let tip = ObjectID(hex: String(decoding: bytes[(start + 2)..<(end - 1)], as: UTF8.self)) {
                return (tip, end)
            }
            end = start
        }
        return (nil, min(bytes.count, Self.header.utf8.count))
    }

    private func readBytes(_ descriptor: Int32, at offset: Int, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes[done...].withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, off_t(offset + done)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw ConcordError.io(.read, path: path, "cannot read \(path): \(got < 0 ? String(cString: strerror(errno)) : "it ended early")") }
            done += got
        }
        return bytes
    }

    private func truncate(_ descriptor: Int32, to size: Int) throws {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw ConcordError.io(.write, path: path, "cannot truncate \(path): \(String(cString: strerror(errno)))") }
    }

    /// Appends `bytes` at the end of the file. A cache: not fsynced.
    private func append(_ bytes: [UInt8], to descriptor: Int32) throws {
        lseek(descriptor, 0, SEEK_END)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw ConcordError.io(.write, path: path, "cannot write \(path): \(String(cString: strerror(errno)))") }
            written += count
        }
    }
}

/// The files each new commit changed against its first parent, as `IncomingCheck` found them,
/// kept for the audit index (`AuditIndex.catchUp(to:known:)`).
final class ChangedPaths {
    var byCommit = [ObjectID: [[UInt8]]]()
}

extension AuditIndex {
    /// Brings the index up to HEAD after a sync or clone, from what the incoming check found;
    /// only where the index exists, unless `create`. A cache: a failure here fails nothing.
    func update(known: ChangedPaths, create: Bool = false) {
        guard let head = try? repository.resolveReference("HEAD") else { return }
        try? catchUp(to: head, known: known.byCommit, onlyIfPresent: !create)
    }
}
