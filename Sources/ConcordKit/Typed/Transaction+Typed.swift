import ConcordModel

/// A transaction's typed writes and reads: records of a `ConcordRecord` type saved, deleted and
/// fetched, entries of a `ConcordLogEntry` type appended. Every write first checks the type's
/// declared kind against the profile's (`unknownKind`, `kindDiffers`), then writes exactly what
/// `put`, `delete` and `append` write for the same data.
extension Transaction {
    /// Creates or replaces the record `T.kind/record.id` with `record`'s data (`ConcordRecord`),
    /// as `put` writes it. Over a live record the members `T` does not know are kept, at every
    /// depth (`UnknownFields`); a stored record that does not decode as `T` is refused
    /// (`recordDoesNotDecode`): delete it first to replace it. Saving the data a record already has
    /// changes nothing.
    public func save<T: ConcordRecord>(_ record: T) throws {
        let kind = try TypedCoding.profileKind(T.kind, in: profile.kinds)
        let id = try Self.recordID(record.id)
        var data = try TypedCoding.data(of: record)
        if let existing = try self.record(kind, id), let stored = existing.data {
            let read = try TypedCoding.decode(T.self, data: stored, id: record.id, path: kind.recordPath(id))
            data = UnknownFields.merge(data, over: stored, shape: read.shape)
        }
        try put(kind, id, data: data)
    }

    /// Deletes the record `T.kind/id` (a tombstone, as `delete`); a missing or deleted record is
    /// `recordNotFound`.
    public func delete<T: ConcordRecord>(_ type: T.Type, id: String) throws {
        let kind = try TypedCoding.profileKind(T.kind, in: profile.kinds)
        try delete(kind, try Self.recordID(id))
    }

    /// Deletes the record `record` is (`delete(T.self, id: record.id)`).
    public func delete<T: ConcordRecord>(_ record: T) throws {
        try delete(T.self, id: record.id)
    }

    /// Appends `entry` to its log kind `E.kind` and returns the entry's id, as `append` with the
    /// entry's encoding as data: with `id` given, an entry of the acting member with that id
    /// already in the log makes this a no-op.
    @discardableResult
    public func append<E: ConcordLogEntry>(_ entry: E, id: String? = nil) throws -> RecordID {
        let kind = try TypedCoding.profileKind(E.kind, in: profile.kinds)
        let data = try TypedCoding.object(of: entry, reference: "an entry of \(kind.name)")
        return try append(kind, data: data, id: try id.map(Self.recordID))
    }

    /// The live record `T.kind/id` as this transaction sees it, decoded; nil if there is none or
    /// it is deleted. A record that does not decode is `recordDoesNotDecode`, naming its file and
    /// the coding path.
    public func fetch<T: ConcordRecord>(_ type: T.Type, id: String) throws -> T? {
        let kind = try TypedCoding.readableKind(T.kind, in: profile.kinds)
        guard kind.policy != .append else { throw ConcordError.logKindNeedsAppend(kind.name) }
        let recordID = try Self.recordID(id)
        guard let stored = try record(kind, recordID), let data = stored.data else { return nil }
        return try TypedCoding.decode(T.self, data: data, id: id, path: kind.recordPath(recordID)).value
    }
}
