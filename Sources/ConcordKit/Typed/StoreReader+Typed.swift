import ConcordModel

/// What a typed read does with a record (or log entry) that does not decode as the app's type.
public enum UndecodableRecords: Sendable {
    /// The read fails with `ConcordError.recordDoesNotDecode` naming the first such record.
    case fail
    /// Such records are left out of the result. To learn which were, read with
    /// `RecordRequest.fetchDecoded`, whose result lists them.
    case skip
}

/// A record (or log entry) that did not decode as the app's type: its file and why.
public struct UndecodableRecord: Sendable, Hashable {
    /// The record file (`vocabulary/68/foobar.json`) or the log's day file.
    public let path: String
    /// Where in the data and why (`at page: expected a number, found a string`).
    public let reason: String

    /// The error a `.fail` read throws for it.
    public var error: ConcordError { .recordDoesNotDecode(path: path, reason: reason) }
}

/// The records of a typed read that decoded, and those that did not.
public struct DecodedRecords<T: Sendable>: Sendable {
    /// The values, in the read's order.
    public var records: [T]
    /// The records left out, in the read's order.
    public var undecodable: [UndecodableRecord]
}

/// One entry of a log kind, decoded: the entry as stored (id, stamp, author, device, origin) and
/// its data as the app's type.
public struct LoggedEntry<E: ConcordLogEntry>: Sendable {
    /// The entry as stored (its `data` is what `value` was decoded from).
    public let entry: LogEntry
    /// The entry's data, decoded.
    public let value: E

    /// The entry's id.
    public var id: RecordID { entry.id }
    /// When, by whom and on which device it was first written (`LogEntry.written`).
    public var written: WriteStamp { entry.written }
}

/// Typed reads: records of a `ConcordRecord` type and entries of a `ConcordLogEntry` type, as of
/// the reader's moment. Reads need only the declared kind's name to be the profile's (a kind whose
/// policy or writers differ reads; only writes are refused).
extension StoreReader {
    /// The live record `T.kind/id`, decoded; nil if there is none or it is deleted. A record that
    /// does not decode is `recordDoesNotDecode`, naming its file and the coding path.
    public func fetch<T: ConcordRecord>(_ type: T.Type, id: String) throws -> T? {
        let kind = try TypedCoding.readableKind(T.kind, in: kinds)
        guard kind.policy != .append else { throw ConcordError.logKindNeedsAppend(kind.name) }
        let recordID = try Transaction.recordID(id)
        let path = kind.recordPath(recordID)
        guard let record = try profile.workingTree.readRecord(path), let data = record.data else { return nil }
        return try TypedCoding.decode(T.self, data: data, id: id, path: path).value
    }

    /// Every live record of `T.kind`, decoded, ordered by id; what does not decode fails the read
    /// or is left out, as `undecodable` says (never silently: `.fail` by default).
    public func fetchAll<T: ConcordRecord>(_ type: T.Type, undecodable: UndecodableRecords = .fail) throws -> [T] {
        try T.all().undecodable(undecodable).fetchAll(self)
    }

    /// `records` of kind `kind` decoded as `T`, in order; with `.fail`, the first that does not
    /// decode is thrown.
    func decode<T: ConcordRecord>(_ records: [Record], of kind: RecordKind, as type: T.Type,
                                  undecodable: UndecodableRecords) throws -> DecodedRecords<T> {
        var decoded = DecodedRecords<T>(records: [], undecodable: [])
        decoded.records.reserveCapacity(records.count)
        for record in records {
            guard let data = record.data else { continue }
            do {
                decoded.records.append(try TypedCoding.decode(T.self, data: data, id: record.id.rawValue, path: kind.recordPath(record.id)).value)
            } catch ConcordError.recordDoesNotDecode(let path, let reason) where undecodable == .skip {
                decoded.undecodable.append(UndecodableRecord(path: path, reason: reason))
            }
        }
        return decoded
    }

    /// The entries of the log kind `E.kind`, oldest first, decoded; what does not decode fails
    /// the read (`recordDoesNotDecode` naming the day file, the entry and the coding path) or is
    /// left out, as `undecodable` says.
    public func logEntries<E: ConcordLogEntry>(_ type: E.Type, undecodable: UndecodableRecords = .fail) throws -> [LoggedEntry<E>] {
        try logEntries(type, skipping: undecodable == .skip).records
    }

    /// The entries of the log kind `E.kind`, oldest first: those that decode, and those that do not.
    public func decodedLogEntries<E: ConcordLogEntry>(_ type: E.Type) throws -> DecodedRecords<LoggedEntry<E>> {
        try logEntries(type, skipping: true)
    }

    private func logEntries<E: ConcordLogEntry>(_ type: E.Type, skipping: Bool) throws -> DecodedRecords<LoggedEntry<E>> {
        let kind = try TypedCoding.readableKind(E.kind, in: kinds)
        var decoded = DecodedRecords<LoggedEntry<E>>(records: [], undecodable: [])
        for entry in try profile.records.logEntries(kind.name) {
            let path = "\(kind.directory)/\(LogEntry.dayFileName(for: entry.at))"
            do {
                let value = try TypedCoding.decode(E.self, data: entry.data, id: nil, path: path).value
                decoded.records.append(LoggedEntry(entry: entry, value: value))
            } catch ConcordError.recordDoesNotDecode(let path, let reason) {
                let undecodableEntry = UndecodableRecord(path: path, reason: "entry \(entry.id): \(reason)")
                guard skipping else { throw undecodableEntry.error }
                decoded.undecodable.append(undecodableEntry)
            }
        }
        return decoded
    }
}
