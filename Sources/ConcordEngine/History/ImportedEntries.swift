import ConcordGit
import ConcordModel

extension History {
    /// The log entries import `commit` added, for each of `references` (`kind/id`) of a log kind:
    /// one change (`imported`) per entry, with who first wrote it, when and on which device (its
    /// `origin`, nil when the dump did not say). `concord log` shows them, as it shows a record's fields.
    func importedEntries(of commit: Commit, records references: [String]) throws -> [AuditChange] {
        var kinds = [String: RecordKind]()   // by directory
        for reference in references {
            if let (kind, _) = try? profile.records.parseReference(reference), kind.policy == .append { kinds[kind.directory] = kind }
        }
        guard !kinds.isEmpty else { return [] }
        let parentTree = try commit.parents.first.map { try repository.commit($0).tree }
        var added = [String: [LogEntry]]()
        for file in try repository.changedFiles(from: parentTree, to: commit.tree) {
            let path = file.path.string
            guard path.hasSuffix(".jsonl"), let slash = path.lastIndex(of: "/"), let kind = kinds[String(path[..<slash])],
                  let blob = file.blob, let after = try? LogEntry.parseLogFile(try repository.blob(blob)) else { continue }
            let before = Set((try file.before.flatMap { try? LogEntry.parseLogFile(try repository.blob($0)) } ?? []).map(\.identity))
            for entry in after where !before.contains(entry.identity) {
                added["\(kind.name)/\(entry.id)", default: []].append(entry)
            }
        }
        return references.flatMap { reference in
            (added[reference] ?? []).map { AuditChange(record: reference, action: "imported", fields: [], origin: $0.origin) }
        }
    }
}
