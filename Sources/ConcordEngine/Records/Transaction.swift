import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// One change a transaction made, as reported to the caller.
public struct RecordChange: Sendable, Equatable {
    /// The record's or entry's kind.
    public let kind: String
    /// Its id.
    public let id: String
    /// Whether it was added, updated or deleted.
    public let action: ChangeAction

    /// `kind/id`.
    public var reference: String { "\(kind)/\(id)" }
}

/// A set of record writes that become ONE signed commit. Obtain one from `Profile.write`.
/// Reads inside the transaction see the branch it builds on plus its own pending writes.
public final class Transaction {
    package let profile: Profile
    let repository: Repository
    let identity: Identity
    let baseTree: ObjectID?
    private let clock: HLClock
    private(set) var lastStamp: HLC?
    /// Whether this transaction took a stamp yet (`lastStamp` starts as the saved clock).
    private var stamped = false
    /// The files written so far, each path once, in the order first written; `pendingIndex`
    /// finds a path's place.
    private var pending: [FileChange] = []
    private var pendingIndex: [String: Int] = [:]
    /// What the transaction changed so far, in the order written.
    public private(set) var changes: [RecordChange] = []
    /// Directory listings of the base tree, loaded on demand for bulk work.
    private(set) var listings: [String: [String: ObjectID]] = [:]

    /// `lastStamp` is the clock the transaction's stamps follow: the saved clock, caught up with
    /// the branch it builds on (`LocalClock.seeing`).
    init(profile: Profile, repository: Repository, identity: Identity, baseTree: ObjectID?, lastStamp: HLC?) {
        self.profile = profile
        self.repository = repository
        self.identity = identity
        self.baseTree = baseTree
        self.clock = HLClock(wallClock: profile.environment.wallClock)
        self.lastStamp = lastStamp
    }

    // MARK: Writes

    /// Creates or replaces record `kind/id` with `data`. Writing the data it already has changes nothing.
    public func put(_ kind: RecordKind, _ id: RecordID, data: [String: JSONValue]) throws {
        try put(canonical: [(kind, id, Record.canonicalData(data))])
    }

    /// `put` for a kind name and id as text (parsed here, once).
    public func put(_ kindName: String, _ rawID: String, data: [String: JSONValue]) throws {
        try put([(kindName, rawID, data)])
    }

    /// Creates or replaces many records, as `put` one by one would (same stamps, same bytes; an
    /// error names the offending item, and what came before it is staged).
    public func put(_ items: [(kind: String, id: String, data: [String: JSONValue])]) throws {
        let canonical = Parallel.map(items) { Record.canonicalData($0.data) }
        try put(canonical: zip(items, canonical).map { ($0.kind, $0.id, $1) })
    }

    /// `put(canonical:)` for kind names and ids as text: each item is parsed once; on a bad item,
    /// what came before it is staged, as one `put` each would have.
    func put(canonical items: [(kind: String, id: String, data: [UInt8])]) throws {
        var parsed = [(kind: RecordKind, id: RecordID, data: [UInt8])]()
        parsed.reserveCapacity(items.count)
        var lastKind: RecordKind?
        for item in items {
            do {
                let kind = try lastKind.flatMap { $0.name == item.kind ? $0 : nil } ?? writableKind(item.kind)
                lastKind = kind
                parsed.append((kind, try Self.recordID(item.id), item.data))
            } catch {
                try put(canonical: parsed)
                throw error
            }
        }
        try put(canonical: parsed)
    }

    /// `put` of many records whose data is given in canonical form (`Record.canonicalData`), as a
    /// dump's records are read. Writing the data a record already has changes nothing. The record
    /// files are encoded on every core.
    func put(canonical items: [(kind: RecordKind, id: RecordID, data: [UInt8])]) throws {
        var seen = Set<String>()
        seen.reserveCapacity(items.count)
        var planned = [PlannedRecord]()
        planned.reserveCapacity(items.count)
        var lastKind: RecordKind?
        for (index, item) in items.enumerated() {
            // On a bad item, what came before it is staged, as one `put` each would have.
            let kind = item.kind, id = item.id
            do {
                if lastKind != kind { try authorizeWrite(kind) }
                lastKind = kind
                guard kind.policy != .append else { throw ConcordError.logKindNeedsAppend(kind.name) }
            } catch {
                try stage(planned)
                throw error
            }
            let (directory, name) = RecordPaths.location(directory: kind.directory, id: id.rawValue)
            let path = directory + "/" + name
            guard seen.insert(path).inserted else {
                // A record written twice reads its first version: encode what is planned, go one by one.
                try stage(planned)
                return try items[index...].forEach { try put(canonical: [$0]) }
            }
            let existing = try record(at: path, directory: directory, name: name)
            if let data = existing?.data, Record.canonicalData(data) == item.data { continue }
            let action: ChangeAction = (existing == nil || existing?.isDeleted == true) ? .added : .updated
            let stamp = try tick(over: existing, at: path)
            // Over an existing record only the changed fields take the new stamp (per-field stamps).
            let bytes = try existing.map { existing in
                Record.written(try Self.parseData(item.data, path: path), over: existing, id: id, kind: kind.name,
                               by: WriteStamp(at: stamp, member: identity.member, device: identity.device)).encoded()
            }
            planned.append(PlannedRecord(path: path, id: id, kind: kind.name, stamp: stamp, data: item.data, bytes: bytes,
                                         change: RecordChange(kind: kind.name, id: id.rawValue, action: action)))
        }
        try stage(planned)
    }

    private struct PlannedRecord {
        let path: String
        let id: RecordID
        let kind: String
        let stamp: HLC
        let data: [UInt8]
        /// The record file, when it is not simply `data` under this write's envelope (`LiveEncoder`).
        let bytes: [UInt8]?
        let change: RecordChange
    }

    /// Canonical data bytes (`Record.canonicalData`) as an object again.
    private static func parseData(_ bytes: [UInt8], path: String) throws -> [String: JSONValue] {
        guard let data = (try? JSONValue.parse(bytes))?.objectValue else {
            throw ConcordError.corruptRecord(path: path, reason: "the data to write is not a JSON object")
        }
        return data
    }

    private func stage(_ planned: [PlannedRecord]) throws {
        var encoders = [String: Record.LiveEncoder]()
        var lastKind: String?
        for record in planned where record.kind != lastKind {
            lastKind = record.kind
            if encoders[record.kind] == nil {
                encoders[record.kind] = Record.LiveEncoder(device: identity.device, member: identity.member, kind: record.kind)
            }
        }
        let kindEncoders = encoders
        let encoded = Parallel.map(planned) { record in
            record.bytes ?? kindEncoders[record.kind].map { $0.encode(id: record.id, stamp: record.stamp, canonicalData: record.data) } ?? []
        }
        pending.reserveCapacity(pending.count + planned.count)
        pendingIndex.reserveCapacity(pendingIndex.count + planned.count)
        changes.reserveCapacity(changes.count + planned.count)
        for (record, bytes) in zip(planned, encoded) {
            guard bytes.count <= maxRecordBytes else { throw ConcordError.recordTooLarge(record.change.reference, size: bytes.count) }
            stage(record.path, bytes, record.change)
        }
    }

    /// `delete` for a kind name and id as text (parsed here, once).
    public func delete(_ kindName: String, _ rawID: String) throws {
        let kind = try writableKind(kindName)
        try delete(kind, try Self.recordID(rawID))
    }

    /// Replaces record `kind/id` with a tombstone. Removing a missing or deleted record is an error.
    public func delete(_ kind: RecordKind, _ id: RecordID) throws {
        try authorizeWrite(kind)
        guard kind.policy != .append else { throw ConcordError.cannotRemoveLogEntries(kind.name) }
        let path = Self.recordPath(kind, id)
        guard let existing = try record(at: path), !existing.isDeleted else {
            throw ConcordError.recordNotFound("\(kind.name)/\(id)")
        }
        let record = Record(id: id, kind: kind.name, device: identity.device, member: identity.member,
                            stamp: try tick(over: existing, at: path), state: .deleted)
        stage(path, record.encoded(), RecordChange(kind: kind.name, id: id.rawValue, action: .deleted))
    }

    // MARK: Reads

    /// The record at `kind/id` as this transaction sees it, tombstones included; nil if none.
    public func record(_ kindName: String, _ rawID: String) throws -> Record? {
        try record(try profile.kind(named: kindName), try Self.recordID(rawID))
    }

    /// `record` for a kind and id already parsed.
    public func record(_ kind: RecordKind, _ id: RecordID) throws -> Record? {
        try record(at: Self.recordPath(kind, id))
    }

    // MARK: Internals

    var isEmpty: Bool { pending.isEmpty }

    var files: [FileChange] { pending }

    /// The ids of each log kind's entries the acting member wrote, once read (`logEntryIDs`).
    var knownLogIDs: [String: Set<RecordID>] = [:]
    private var authorized: Set<String> = []

    func stage(_ path: String, _ bytes: [UInt8], _ change: RecordChange) {
        stage(path, bytes, [change])
    }

    /// `stage` of a file that makes several changes (a day file with many entries appended).
    func stage(_ path: String, _ bytes: [UInt8], _ fileChanges: [RecordChange]) {
        // A commit needs a stamp of its own, by the clock rule every write follows: a file staged on
        // its own (a member file: leave, role, revoke) takes one here, after the saved clock (the
        // newest stamp received) and no earlier than the wall clock. Records staged by `put` were
        // stamped already.
        if !stamped { _ = tick(after: nil) }
        if let index = pendingIndex.updateValue(pending.count, forKey: path) {
            pendingIndex[path] = index
            pending[index].bytes = bytes
        } else {
            pending.append(FileChange(path: path, bytes: bytes))
        }
        changes += fileChanges
    }

    /// The stamp of a write over `existing` (nil: a new record), which must sort after it: a
    /// record received with the very last stamp there is (9999-12-31T23:59:59.999Z-9999) has none
    /// after it, and a write stamped before it would make a record every device refuses (its
    /// fields stamped after it). Refused, changing nothing.
    private func tick(over existing: Record?, at path: String) throws -> HLC {
        let stamp = tick(after: existing?.stamp)
        if let existing, stamp <= existing.stamp { throw ConcordError.noLaterStamp(path, existing.stamp.description) }
        return stamp
    }

    func tick(after other: HLC?) -> HLC {
        let last = switch (lastStamp, other) {
        case let (mine?, theirs?): max(mine, theirs)
        case let (mine, theirs): mine ?? theirs
        }
        let stamp = clock.next(after: last)
        lastStamp = stamp
        stamped = true
        return stamp
    }

    func writableKind(_ name: String) throws -> RecordKind {
        let kind = try profile.kind(named: name)
        try authorizeWrite(kind)
        return kind
    }

    /// Refuses a kind this profile does not have (by name and definition: a kind of another
    /// profile is not this one's), or one this identity's role may not write; once per kind.
    func authorizeWrite(_ kind: RecordKind) throws {
        guard !authorized.contains(kind.name) else { return }
        guard try profile.kind(named: kind.name) == kind else {
            throw ConcordError.unknownKind(kind.name, known: profile.kinds.kinds.map(\.name))
        }
        try profile.members.authorize(identity, toWrite: kind)
        authorized.insert(kind.name)
    }

    private func record(at path: String) throws -> Record? {
        try decodeRecord(currentBytes(path), at: path)
    }

    /// The record at `path`, which is `name` in `directory` (split already by the caller).
    private func record(at path: String, directory: String, name: String) throws -> Record? {
        try decodeRecord(currentBytes(path, directory: directory, name: name), at: path)
    }

    private func decodeRecord(_ bytes: [UInt8]?, at path: String) throws -> Record? {
        guard let bytes else { return nil }
        do { return try Record.decode(bytes) } catch {
            throw ConcordError.corruptRecord(path: path, reason: error.localizedDescription)
        }
    }

    /// The bytes of `path` in the base tree with pending writes applied.
    func currentBytes(_ path: String) throws -> [UInt8]? {
        let slash = path.lastIndex(of: "/")
        return try currentBytes(path, directory: slash.map { String(path[..<$0]) } ?? "",
                                name: slash.map { String(path[path.index(after: $0)...]) } ?? path)
    }

    /// The same, for `path` split by the caller into its `directory` and file `name`.
    private func currentBytes(_ path: String, directory: String, name: String) throws -> [UInt8]? {
        if !pending.isEmpty, let index = pendingIndex[path] { return pending[index].bytes }
        guard let baseTree else { return nil }
        let blob: ObjectID?
        if let listing = listings[directory] {
            blob = listing.isEmpty ? nil : listing[name]
        } else {
            blob = try gitCall { try repository.entry(at: path, inTree: baseTree)?.id }
        }
        return try blob.map { id in try gitCall { try repository.blob(id) } }
    }

    /// Loads the base tree's listings of a kind once (each bucket directory of a record kind),
    /// so thousands of reads in it are cheap.
    func prefetch(kind: RecordKind) throws {
        guard kind.policy != .append else { return try prefetch(directory: kind.directory) }
        guard listings[kind.directory] == nil, let baseTree else { return }
        listings[kind.directory] = [:]
        let buckets = try gitCall { try repository.entries(inDirectory: kind.directory, ofTree: baseTree) }
        for bucket in buckets where bucket.kind == .tree && RecordPaths.isBucket(bucket.name) {
            try prefetch(directory: "\(kind.directory)/\(bucket.name)")
        }
        for bucket in RecordPaths.buckets where listings["\(kind.directory)/\(bucket)"] == nil {
            listings["\(kind.directory)/\(bucket)"] = [:]   // no such bucket yet: nothing to read
        }
    }

    /// Loads the base tree's listing of `directory` once, so thousands of reads in it are cheap.
    func prefetch(directory: String) throws {
        guard listings[directory] == nil, let baseTree else { return }
        let entries = try gitCall { try repository.entries(inDirectory: directory, ofTree: baseTree) }
        listings[directory] = Dictionary(entries.map { ($0.name, $0.id) }, uniquingKeysWith: { first, _ in first })
    }

    package static func recordID(_ raw: String) throws -> RecordID {
        do { return try RecordID(raw) } catch { throw ConcordError.invalidInput(.badName, error.localizedDescription) }
    }

    static func recordPath(_ kind: RecordKind, _ id: RecordID) -> String { kind.recordPath(id) }
}
