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
///     concord-audit-index 1
///     c <commit hex> <author time> <path>\t<path>…   one line per commit: the files whose entry
///                                                       differs from its first parent's (all, for
///                                                       the root), then `=<kind>/<id>` for each
///                                                       record a `Concord-Resolved` trailer names
///     t <commit hex>                                  after each batch: the tip it now covers
///
/// Each update appends the commits reachable from HEAD and not from the covered tip, parents
/// before children, then the new tip line, in one write. The index covers exactly the history of
/// its last tip line; when HEAD no longer contains that tip (history replaced by hand), or the
/// file is of another version or malformed, it is built again from nothing. A torn last batch
/// (a killed process) has no tip line, so the next update appends it again; repeated lines are
/// harmless. Nothing here is trusted beyond what the profile's own history says: the commits it
/// names are read and checked as before.
struct AuditIndex {
    static let header = "concord-audit-index 1\n"
    let repository: Repository
    var path: String { repository.gitDirectory + "concord/audit-index" }

    /// A commit the index names for a query: its id and author time.
    struct Hit: Hashable {
        let commit: ObjectID
        let time: Int64
        /// Where its line is in the file (later lines are newer within one time).
        let offset: Int
    }

    /// Brings the index up to `head` and returns its bytes (up to its last tip line). Updates are
    /// serialized by a lock on the file; queries read what the update returns.
    func update(to head: ObjectID) throws -> [UInt8] {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ConcordError.io("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw ConcordError.io("cannot lock \(path): \(String(cString: strerror(errno)))") }
        }
        var bytes = try readAll(descriptor)
        var (tip, end) = Self.coveredTip(in: bytes)
        let header = Array(Self.header.utf8)
        // A tip HEAD does not contain, or one that is not even here, is a history replaced by hand.
        let current = bytes.starts(with: header) && (tip.map { (try? repository.isAncestor($0, of: head)) == true } ?? true)
        if !current {
            // Another version, damage, or a history replaced by hand: built again from nothing.
            (bytes, tip, end) = (header, nil, header.count)
            try truncate(descriptor, to: 0)
            try append(header, to: descriptor)
        } else if end < bytes.count {
            // What a killed update left after the last tip line.
            bytes.removeSubrange(end...)
            try truncate(descriptor, to: end)
        }
        if tip == head { return bytes }
        let commits = try repository.newCommits(from: head, excluding: tip.map { [$0] } ?? [])
        var batch = [UInt8]()
        var recent = RecentTrees()
        var trees = [ObjectID: ObjectID]()   // commit → tree, for the commits of this batch
        for commit in commits {
            trees[commit.id] = commit.tree
            let parentTree = try commit.parents.first.map { try trees[$0] ?? repository.commit($0).tree }
            var paths = try repository.treeChanges(from: parentTree, to: commit.tree, recent: &recent).map(\.path)
            for value in CommitTrailers(message: commit.message).resolved {
                if let conflict = ResolvedConflict(trailerValue: value) { paths.append(Array("=\(conflict.kind)/\(conflict.id)".utf8)) }
            }
            batch += Array("c \(commit.id.hex) \(commit.author.time) ".utf8)
            // The structural check lets no tab or newline into a name; a name with one is left out, not split.
            batch += Array(paths.filter { !$0.contains(0x0A) && !$0.contains(0x09) }.joined(separator: [0x09]))
            batch.append(0x0A)
        }
        batch += Array("t \(head.hex)\n".utf8)
        try append(batch, to: descriptor)
        return bytes + batch
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
        return (nil, min(bytes.count, header.utf8.count))
    }

    private func readAll(_ descriptor: Int32) throws -> [UInt8] {
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw ConcordError.io("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { return bytes }
            bytes += buffer[0..<count]
        }
    }

    private func truncate(_ descriptor: Int32, to size: Int) throws {
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw ConcordError.io("cannot truncate \(path): \(String(cString: strerror(errno)))") }
    }

    /// Appends `bytes` at the end of the file. A cache: not fsynced.
    private func append(_ bytes: [UInt8], to descriptor: Int32) throws {
        lseek(descriptor, 0, SEEK_END)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw ConcordError.io("cannot write \(path): \(String(cString: strerror(errno)))") }
            written += count
        }
    }
}
