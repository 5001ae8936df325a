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
    ///
    /// A log file only grows along that chain (every commit appends, and a merge takes what merging
    /// its parents gives: the validity rule), so an entry is in every commit from the one it arrived
    /// in up to head: its arrival is found by a binary search of the chain, reading O(log n) versions
    /// of its day file rather than each version back to it (B16).
    static func ordered(_ entries: [LogEntry], kind: RecordKind, head: ObjectID?, in repository: Repository) throws -> [LogEntry] {
        guard entries.count > 1, let head else { return entries }
        var chain = [(commit: ObjectID, tree: ObjectID)]()   // head first
        var next: ObjectID? = head
        while let id = next, chain.count < walkLimit {
            let links = try repository.commitLinks(id)
            chain.append((id, links.tree))
            next = links.parents.first
        }
        var parsed = [ObjectID: [LogEntry]]()
        func holds(_ entry: LogEntry, at depth: Int) throws -> Bool {
            let path = kind.directory + "/" + LogEntry.dayFileName(for: entry.at)
            guard let blob = try repository.entry(at: path, inTree: chain[depth].tree).flatMap({ $0.kind == .blob ? $0.id : nil }) else {
                return false
            }
            if parsed[blob] == nil { parsed[blob] = (try? LogEntry.parseLogFile(try repository.blob(blob))) ?? [] }
            return parsed[blob]?.contains(entry) == true
        }
        // The depth (commits back from head) of the oldest first-parent commit each entry is in; nil: not in head.
        var oldest = [Int?](repeating: nil, count: entries.count)
        for (index, entry) in entries.enumerated() where try holds(entry, at: 0) {
            var (inside, outside) = (0, chain.count)   // holds at `inside`; `outside` is past the oldest that does
            while outside - inside > 1 {
                let middle = (inside + outside) / 2
                if try holds(entry, at: middle) { inside = middle } else { outside = middle }
            }
            oldest[index] = inside
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
