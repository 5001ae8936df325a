import ConcordModel
import Foundation

/// A transaction's writes to log kinds: entries appended to day files, each entry the acting
/// member's with a stamp of its own, and the entries the transaction sees.
extension Transaction {
    /// Appends an entry to log kind `kind` and returns its id. With `id` given, an entry with that
    /// id already in the log makes this a no-op (so importing the same entries twice adds nothing).
    @discardableResult
    public func append(_ kindName: String, data: [String: JSONValue], id rawID: String? = nil) throws -> RecordID {
        let kind = try writableKind(kindName)
        return try append(kind, data: data, id: try rawID.map(Self.recordID))
    }

    /// `append` for a kind already parsed (`Profile.kind(named:)`) and an id already checked.
    @discardableResult
    public func append(_ kind: RecordKind, data: [String: JSONValue], id given: RecordID? = nil) throws -> RecordID {
        try authorizeWrite(kind)
        guard kind.policy == .append else { throw ConcordError.notALogKind(kind.name) }
        let id = try given ?? RecordID(UUID().uuidString.lowercased())
        if given != nil, try logEntryIDs(kind).contains(id) { return id }
        try append(kind, entries: [(id, data, nil)])
        return id
    }

    /// Appends entries to log kind `kind` (refused unless it is a log this identity may write), each
    /// the acting member's with a stamp of its own, in order, with its `origin` (an imported entry's
    /// first writer) when given. Each day file is read and written once.
    func append(_ kind: RecordKind, entries items: [(id: RecordID, data: [String: JSONValue], origin: WriteStamp?)]) throws {
        try authorizeWrite(kind)
        guard kind.policy == .append else { throw ConcordError.notALogKind(kind.name) }
        var byFile = [String: [LogEntry]](), files = [String](), changes = [String: [RecordChange]]()
        for item in items {
            let stamp = tick(after: nil)
            let entry = LogEntry(id: item.id, at: stamp, by: identity.member, device: identity.device, data: item.data, origin: item.origin)
            let size = entry.encodedLine().count
            guard size <= maxRecordBytes else { throw ConcordError.recordTooLarge("\(kind.name)/\(item.id)", size: size) }
            let path = "\(kind.directory)/\(LogEntry.dayFileName(for: stamp))"
            if byFile[path] == nil { files.append(path) }
            byFile[path, default: []].append(entry)
            changes[path, default: []].append(RecordChange(kind: kind.name, id: item.id.rawValue, action: .appended))
        }
        for path in files {
            let entries = try currentBytes(path).map { bytes in try Self.parseLog(bytes, path: path) } ?? []
            stage(path, LogEntry.encodeLogFile(entries + (byFile[path] ?? [])), changes[path] ?? [])
        }
        if knownLogIDs[kind.name] != nil {
            knownLogIDs[kind.name]?.formUnion(items.map(\.id))
        }
    }

    /// The ids of the entries of `kind` the acting member wrote.
    private func logEntryIDs(_ kind: RecordKind) throws -> Set<RecordID> {
        if let known = knownLogIDs[kind.name] { return known }
        // An entry is its author's (author, id): another member's entry with the same id is not this one.
        let ids = Set(try logEntries(kind).filter { $0.by == identity.member }.map(\.id))
        knownLogIDs[kind.name] = ids
        return ids
    }

    /// Every entry of log kind `kind` as this transaction sees it (the base tree's day files with
    /// pending writes applied).
    func logEntries(_ kind: RecordKind) throws -> [LogEntry] {
        try prefetch(directory: kind.directory)
        var names = Set((listings[kind.directory] ?? [:]).keys)
        for file in files where file.path.hasPrefix(kind.directory + "/") {
            names.insert(String(file.path.dropFirst(kind.directory.count + 1)))
        }
        var entries = [LogEntry]()
        for name in names.sorted() where name.hasSuffix(".jsonl") && !name.contains("/") {
            let path = "\(kind.directory)/\(name)"
            if let bytes = try currentBytes(path) { entries += try Self.parseLog(bytes, path: path) }
        }
        return entries
    }

    static func parseLog(_ bytes: [UInt8], path: String) throws -> [LogEntry] {
        do { return try LogEntry.parseLogFile(bytes) } catch {
            throw ConcordError.corruptRecord(path: path, reason: error.localizedDescription)
        }
    }
}
