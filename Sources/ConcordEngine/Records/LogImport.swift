import ConcordModel
import ConcordTrust

/// Importing a dump's log entries without losing who wrote them.
///
/// An imported entry is the importing member's: its `by` is theirs and its `at` a stamp of the
/// import, since an entry's `by` must be its signer (docs/security.md, rule 6) and a device never
/// stamps a write before its clock. What the dump says about the entry — when, by whom and on which
/// device it was first written — travels with it as its `origin` (data format 6), and is what
/// `export` writes back, `log` shows and `LogEntry.written` gives.
enum LogImport {
    /// The data format in which a log entry may carry an `origin`.
    static let firstFormat = 6

    /// What an item of a dump is matched by: its id, who first wrote it when where the dump says, and
    /// its data (so an entry forged with another's id and origin but other data neither stands for the
    /// real one nor keeps it out: both are kept, and `log` shows who signed each).
    struct Key: Hashable {
        let id: RecordID
        let written: WriteStamp?
        let data: [UInt8]

        init(id: RecordID, written: WriteStamp?, data: [String: JSONValue]) {
            (self.id, self.written, self.data) = (id, written, JSONValue.object(data).canonicalLine())
        }
    }

    /// The key an entry already in the log answers to for items that say who wrote them.
    static func key(of entry: LogEntry) -> Key { Key(id: entry.id, written: entry.written, data: entry.data) }

    /// For an import that writes entries with an origin: refuses a profile older than format 6
    /// unless `identity` is an active Admin acting as themselves; then the import's own commit moves
    /// `profile.json` to format 6 (returns true), so a concord that reads only format 5 refuses that
    /// commit ("upgrade concord") instead of failing on an entry field it does not know.
    static func prepareFormat(_ profile: Profile, as identity: Identity, in transaction: Transaction) throws -> Bool {
        guard profile.info.formatVersion < firstFormat else { return false }
        let action = "importing log entries that keep who first wrote them (data format \(firstFormat)) into this format "
            + "\(profile.info.formatVersion) profile (an Admin's upgrade of its data format moves it to format \(concordFormatVersion))"
        _ = try profile.members.authorizeAdmin(identity, action: action)
        guard identity.member == identity.owner else {
            throw ConcordError.invalidInput(.memberState, "acting on \(identity.owner)'s device, \(identity.member) may write records and logs only; "
                                            + "\(action) changes the profile itself: run it as \(identity.owner), or after an upgrade of the data format")
        }
        let info = ProfileInfo(id: profile.info.id, name: profile.info.name, formatVersion: firstFormat, createdAt: profile.info.createdAt)
        transaction.stage(ProfilePaths.profile, info.json.canonicalBytes(), RecordChange(kind: "profile", id: "profile", action: .updated))
        return true
    }
}

extension Transaction {
    /// Appends the log entries of a dump (their kinds and ids checked already), each signed as the
    /// acting member's with a stamp of this write and, where the dump says who first wrote it, that
    /// as its `origin`. An item the log already has is skipped: one that says who wrote it when the
    /// log has an entry of its id first written by that member at that time on that device; one that
    /// does not, when the acting member has an entry of its id of their own. So importing a dump
    /// twice adds nothing, an export imported back adds nothing, and equal data written at two times
    /// is two entries. Of two items of a dump with the same key, the first is imported. An item
    /// without an id that an earlier concord imported (as an entry with no origin, its id the hash of
    /// its data alone, equal data merged) is not imported again: each such entry stands for one item
    /// with that data, so importing the dump again brings back only what the merge lost. Returns
    /// whether an entry written carries an origin.
    func importLogEntries(_ items: [Dump.LogItem], kinds: (String) throws -> RecordKind) throws -> Bool {
        var withOrigin = false
        var kindOrder = [String](), byKind = [String: [Dump.LogItem]]()
        for item in items {
            if byKind[item.kind] == nil { kindOrder.append(item.kind) }
            byKind[item.kind, default: []].append(item)
        }
        for name in kindOrder {
            let kind = try kinds(name)
            let existing = try logEntries(kind)
            var present = Set(existing.map(LogImport.key(of:)))
            // Entries of the acting member's own, without an origin, answer to items that do not say who wrote them.
            present.formUnion(existing.filter { $0.by == identity.member && $0.origin == nil }.map { LogImport.Key(id: $0.id, written: nil, data: $0.data) })
            // What a concord before format 6 imported from a dump without ids: entries with no origin whose id
            // hashes the data alone, equal data merged into one. Each stands for one item of that dump.
            var earlier = [RecordID: Int]()
            for entry in existing where entry.origin == nil && entry.id.rawValue.hasPrefix("d-") { earlier[entry.id, default: 0] += 1 }
            var entries = [(id: RecordID, data: [String: JSONValue], origin: WriteStamp?)]()
            // An entry is (by, id, origin): the acting member holds one entry per id and origin. Another item
            // with that id and origin but other data (one forged beside the real one, and both exported) is
            // kept under an id derived from its data and origin, neither replacing the other.
            var identities = Set(existing.filter { $0.by == identity.member }.map { "\($0.id) \($0.origin?.description ?? "")" })
            // Items whose id is the one their data and origin give first: such an id is theirs, not a forger's.
            let items = (byKind[name] ?? []).enumerated().sorted { a, b in
                func own(_ item: Dump.LogItem) -> Int { item.written.map { item.id == Dump.derivedID(kind: name, data: item.data, written: $0) } == true ? 0 : 1 }
                return (own(a.element), a.offset) < (own(b.element), b.offset)
            }.map(\.element)
            for item in items {
                var id = try Self.recordID(item.id)
                guard present.insert(LogImport.Key(id: id, written: item.written, data: item.data)).inserted else { continue }
                if !identities.insert("\(id) \(item.written?.description ?? "")").inserted {
                    id = try Self.recordID(Dump.derivedID(kind: name, data: item.data, written: item.written))
                    guard identities.insert("\(id) \(item.written?.description ?? "")").inserted else { continue }
                }
                if let written = item.written, item.id == Dump.derivedID(kind: name, data: item.data, written: written),
                   let legacy = try? RecordID(Dump.derivedID(kind: name, data: item.data)), let left = earlier[legacy], left > 0 {
                    earlier[legacy] = left - 1
                    continue
                }
                entries.append((id, item.data, item.written))
                withOrigin = withOrigin || item.written != nil
            }
            try append(kind, entries: entries)
        }
        return withOrigin
    }
}
