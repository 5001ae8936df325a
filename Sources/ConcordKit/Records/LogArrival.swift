import ConcordGit
import ConcordModel

/// The order in which log entries reached the mainline (main's first-parent chain), for showing
/// the entries two authors wrote under one id (`concord get logs/<id>`).
///
/// Not the entries' own order (by `at`): `at` is a time the author writes, so a member who reuses
/// another's id with an earlier `at` would come first, and a reader taking the first line would
/// take the forgery. The first-parent chain is the order in which commits reached the shared remote
/// (docs/security.md): an entry made after another can only arrive after it. Entries that arrived in
/// the same commit (a merge of two offline writes) are ordered by author, then by their line; entries
/// no commit holds yet (a working-tree edit) come last.
enum LogArrival {
    /// How many first-parent commits are read at most; entries older than that tie, ordered by author.
    static let walkLimit = 100_000

    /// `entries` (of log kind `kind`, all with one id) in the order they reached `head`'s first-parent chain.
    static func ordered(_ entries: [LogEntry], kind: RecordKind, head: ObjectID?, in repository: Repository) throws -> [LogEntry] {
        guard entries.count > 1, let head else { return entries }
        // The depth (commits back from head) of the oldest first-parent commit each entry is in; nil: not in head.
        var oldest = [Int?](repeating: nil, count: entries.count)
        var tracking = Set(entries.indices)
        var commit: ObjectID? = head, depth = 0
        var lastBlobs = [String: (ObjectID?, [LogEntry])]()
        while let id = commit, !tracking.isEmpty, depth < walkLimit {
            let current = try repository.commit(id)
            for index in tracking.sorted() {
                let path = kind.directory + "/" + LogEntry.dayFileName(for: entries[index].at)
                let blob = try repository.entry(at: path, inTree: current.tree).flatMap { $0.kind == .blob ? $0.id : nil }
                let lines: [LogEntry]
                if let known = lastBlobs[path], known.0 == blob { lines = known.1 } else {
                    lines = try blob.map { (try? LogEntry.parseLogFile(try repository.blob($0))) ?? [] } ?? []
                    lastBlobs[path] = (blob, lines)
                }
                if lines.contains(entries[index]) { oldest[index] = depth } else { tracking.remove(index) }
            }
            commit = current.parents.first
            depth += 1
        }
        return entries.indices.sorted { a, b in
            switch (oldest[a], oldest[b]) {
            case let (x?, y?) where x != y: return x > y
            case (_?, nil): return true
            case (nil, _?): return false
            default:
                if entries[a].by != entries[b].by { return Array(entries[a].by.utf8).lexicographicallyPrecedes(Array(entries[b].by.utf8)) }
                return entries[a].encodedLine().lexicographicallyPrecedes(entries[b].encodedLine())
            }
        }.map { entries[$0] }
    }
}
