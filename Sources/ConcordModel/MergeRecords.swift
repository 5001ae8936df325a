/// The merge policies as pure three-way functions `(base?, ours, theirs) → outcome`: no git, no I/O.
///
/// These rules are exact; another implementation must produce the same bytes.
///
/// **Every merge** first tries, on the raw bytes: `ours == theirs` → ours; then, if there is a base,
/// `base == ours` → theirs and `base == theirs` → ours. None of these report conflicts or look inside the
/// files. Otherwise both sides are parsed: an unparseable ours or theirs gives `.unresolved` (the reason
/// names the side and the parse error); an unparseable base counts as no base. The output of any real
/// merge is canonical bytes (``Record/encoded()``, ``LogEntry/encodeLogFile(_:)``,
/// ``JSONValue/canonicalBytes()``), so it never depends on how the inputs were formatted.
///
/// **Total order**, used for every "later wins": write stamps (``WriteStamp``: a record's envelope, a
/// field's stamp) compare by (HLC, member, device), the HLC by value and the names by their UTF-8 bytes;
/// at an equal stamp a field's greater value bytes (a removal lowest), and a record's greater canonical
/// bytes, are later. This makes `merge(b, x, y) == merge(b, y, x)` byte for byte, conflicts included.
public enum RecordMerge {
    /// Three-way merge of one record file (`.json`, policy `lww` or `delete-wins`) or log file
    /// (`.jsonl`, policy `append`).
    ///
    /// - `append`: the union of the entries of ours and theirs, sorted by (`at`, `id`), one per author
    ///   and id (`by`, `id`: two members' entries with one id both stay; if the sides hold different
    ///   entries by one author with the same id, ours is kept: the main line's, which reached the remote
    ///   first, so that no side rewrites a published entry). No other entry is changed or removed, the
    ///   base is ignored, and no conflicts are reported.
    /// - `lww`, both sides live: per-field last writer wins (`joinLive(_:_:base:)`): each field that
    ///   either side has a write for (``Record/fieldStamps``; a value or a removal) takes the later write;
    ///   the envelope is the later envelope, `lastDeleted` the later one, and writes at or before it are
    ///   dropped. The base is not needed for the result; it decides what is reported: a field collided if
    ///   both sides' writes differ from the base's and their values differ, and then one
    ///   ``ResolvedConflict`` is reported for the record, winner the side that won the latest collided
    ///   field, with the loser's full canonical record bytes. Values merge whole (no deep merge).
    /// - `lww`, a tombstone and a live record: the later of the tombstone and the live envelope wins; a
    ///   live record that wins keeps only the field writes after the delete, and remembers it in
    ///   `lastDeleted`. A conflict is reported (loser content: the losing record) unless the losing record
    ///   is unchanged from the base.
    /// - `lww`, two tombstones: the later one; no conflict.
    /// - `delete-wins`, two tombstones: the *earliest* one by the total order; no conflict.
    /// - either policy, a placeholder (``Record/isPlaceholder``: a tombstone at the earliest stamp) and
    ///   any other version: the other version, unchanged; no conflict.
    /// - `delete-wins`, a tombstone and a live record: the tombstone, unless the live record has seen it
    ///   (its `lastDeleted` is the tombstone or later: written again after the delete), then the live
    ///   record with no conflict. A conflict (winner the delete, loser the edit, with its content) is
    ///   reported unless the live record is unchanged from the base, since deleting an untouched record is
    ///   no conflict.
    /// - `delete-wins`, both live: exactly as `lww`.
    ///
    /// "Unchanged from the base" compares canonical record bytes. With no base (add/add) the same rules
    /// apply, and every field whose values differ counts as changed on both sides. ours and theirs must
    /// hold the same `id` and `kind`, else `.unresolved`; a base with another `id` or `kind` counts as no
    /// base. A merged record over ``maxRecordBytes`` is `.unresolved` rather than written unreadable.
    /// `merge(b, x, x) == x` byte for byte.
    public static func merge(policy: MergePolicy, base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) -> FileMergeOutcome {
        if let trivial = MergeSupport.trivialMerge(base: base, ours: ours, theirs: theirs) { return trivial }
        return MergeSupport.resolving { () throws(MergeSupport.Unresolvable) in
            switch policy {
            case .append:
                return try mergeLogs(ours: ours, theirs: theirs)
            case .lww, .deleteWins:
                return try mergeRecords(policy: policy, base: base, ours: ours, theirs: theirs)
            }
        }
    }

    static func mergeLogs(ours: [UInt8], theirs: [UInt8]) throws(MergeSupport.Unresolvable) -> FileMergeOutcome {
        let sides = try MergeSupport.parseSides(ours: ours, theirs: theirs, as: "a valid log file") {
            (bytes) throws(ModelError) in try LogEntry.parseLogFile(bytes)
        }
        // An entry is written once: for an identity both sides hold, ours (the main line, which reached the
        // remote first) is kept, whatever the other side's line says (a side cannot rewrite a published entry
        // by giving it an earlier time).
        let ours = Set(sides.ours.map(\.identity))
        return .merged(bytes: LogEntry.encodeLogFile(sides.ours + sides.theirs.filter { !ours.contains($0.identity) }), conflicts: [])
    }

    static func mergeRecords(
        policy: MergePolicy, base: [UInt8]?, ours: [UInt8], theirs: [UInt8]
    ) throws(MergeSupport.Unresolvable) -> FileMergeOutcome {
        let sides = try MergeSupport.parseSides(ours: ours, theirs: theirs, as: "a valid record file") {
            (bytes) throws(ModelError) in try Record.decode(bytes)
        }
        let o = RecordSide(sides.ours), t = RecordSide(sides.theirs)
        guard o.record.id == t.record.id, o.record.kind == t.record.kind else {
            throw .init(
                reason: "ours is record \(o.record.kind)/\(o.record.id) but theirs is \(t.record.kind)/\(t.record.id); "
                    + "one of them is in the wrong file")
        }
        let b = base.flatMap { try? Record.decode($0) }
            .flatMap { $0.id == o.record.id && $0.kind == o.record.kind ? RecordSide($0) : nil }

        // A placeholder (a record left out of a merge, kept as a file) gives way to the other version.
        if o.record.isPlaceholder != t.record.isPlaceholder { return .merged(bytes: o.record.isPlaceholder ? theirs : ours, conflicts: []) }
        switch (o.record.state, t.record.state) {
        case (.live, .live):
            let (merged, collision) = joinLive(o.record, t.record, base: b?.record)
            let bytes = merged.encoded()
            guard bytes.count <= maxRecordBytes else {
                throw .init(
                    reason: "merging ours and theirs would make a record of \(bytes.count) bytes (limit \(maxRecordBytes)); "
                        + "merge \(merged.kind)/\(merged.id) by hand")
            }
            let conflicts = collision.map { oursWon in [oursWon ? conflict(policy, winner: o, loser: t) : conflict(policy, winner: t, loser: o)] }
            return .merged(bytes: bytes, conflicts: conflicts ?? [])
        case (.deleted, .deleted):
            let (later, earlier) = t.precedes(o) ? (o, t) : (t, o)
            return .merged(bytes: (policy == .deleteWins ? earlier : later).bytes, conflicts: [])
        case (.deleted, .live), (.live, .deleted):
            let (tombstone, live) = o.record.isDeleted ? (o, t) : (t, o)
            let liveWins = policy == .deleteWins
                ? live.record.lastDeleted.map { tombstone.record.envelope <= $0 } ?? false
                : tombstone.record.envelope < live.record.envelope
            if !liveWins {
                let untouched = live.bytes == b?.bytes
                return .merged(bytes: tombstone.bytes, conflicts: untouched ? [] : [conflict(policy, winner: tombstone, loser: live)])
            }
            // The live record comes back, without the field writes the delete removed.
            let floor = max(live.record.lastDeleted ?? tombstone.record.envelope, tombstone.record.envelope)
            let revived = Record.live(id: live.record.id, kind: live.record.kind, envelope: live.record.envelope,
                                      writes: live.record.fieldWrites, lastDeleted: floor)
            // Under delete-wins the live record has seen this delete: nothing was lost.
            let untouched = policy == .deleteWins || tombstone.bytes == b?.bytes
            return .merged(bytes: revived.encoded(), conflicts: untouched ? [] : [conflict(policy, winner: live, loser: tombstone)])
        }
    }

    /// Joins two live versions of a record field by field: each field takes its later write
    /// (``FieldWrite/later(_:_:)``), the envelope is the later envelope, `lastDeleted` the later one, and
    /// field writes at or before it are dropped. The result depends only on the two versions, not on
    /// their order, and joining in any grouping gives the same record.
    ///
    /// The collision, if any, is reported against `base`: a field whose write differs on both sides from
    /// the base's (stamp or value) and whose values differ. It names the side that won the latest of the
    /// collided fields (`true`: `ours`; among collided fields of one stamp, the first by key bytes).
    static func joinLive(_ ours: Record, _ theirs: Record, base: Record?) -> (Record, collision: Bool?) {
        let o = ours.fieldWrites, t = theirs.fieldWrites, b = base?.fieldWrites ?? [:]
        var writes = o
        var latestCollision: (stamp: WriteStamp, key: String, oursWon: Bool)?
        for (theirKey, theirWrite) in t {
            // A key canonically equivalent to one of ours is the same field (dictionary lookups
            // compare Swift strings): it keeps the spelling whose UTF-8 bytes sort last, whichever
            // side is ours (else the merge A←B and B←A wrote different bytes).
            guard let at = o.index(forKey: theirKey) else {
                writes[theirKey] = theirWrite
                continue
            }
            let (ourKey, ourWrite) = o[at]
            let key = utf8Precedes(ourKey, theirKey) ? theirKey : ourKey
            let winner = FieldWrite.later(ourWrite, theirWrite)
            writes.removeValue(forKey: key)
            writes[key] = winner
            let collided = !ourWrite.isSame(as: b[key]) && !theirWrite.isSame(as: b[key])
                && !MergeSupport.same(ourWrite.value, theirWrite.value)
            // The latest collided field names the winner; among fields written at one stamp, the
            // first key by its bytes (not the dictionary's order, which differs from run to run).
            if collided, latestCollision.map({ $0.stamp < winner.stamp || ($0.stamp == winner.stamp && utf8Precedes(key, $0.key)) }) ?? true {
                latestCollision = (winner.stamp, key, winner.isSame(as: ourWrite))
            }
        }
        let lastDeleted = [ours.lastDeleted, theirs.lastDeleted].compactMap { $0 }.max()
        let merged = Record.live(id: ours.id, kind: ours.kind, envelope: max(ours.envelope, theirs.envelope),
                                 writes: writes, lastDeleted: lastDeleted)
        return (merged, latestCollision?.oursWon)
    }

    static func conflict(_ policy: MergePolicy, winner: RecordSide, loser: RecordSide) -> ResolvedConflict {
        ResolvedConflict(
            kind: winner.record.kind, id: winner.record.id.rawValue, policy: policy, winner: MergeSide(winner.record),
            loser: MergeSide(loser.record), losingContent: loser.bytes)
    }
}

/// One side's record with its canonical bytes, ordered by the merge total order. The bytes are
/// encoded when first asked for: most merges of two live records need only the loser's.
final class RecordSide {
    let record: Record
    private(set) lazy var bytes: [UInt8] = record.encoded()

    init(_ record: Record) {
        self.record = record
    }

    /// Whether `self` is earlier than `other`: by stamp, then member and device by UTF-8 bytes, then by
    /// canonical record bytes.
    func precedes(_ other: RecordSide) -> Bool {
        if record.stamp != other.record.stamp { return record.stamp < other.record.stamp }
        if !record.member.utf8.elementsEqual(other.record.member.utf8) {
            return utf8Precedes(record.member, other.record.member)
        }
        if !record.device.utf8.elementsEqual(other.record.device.utf8) {
            return utf8Precedes(record.device, other.record.device)
        }
        return bytes.lexicographicallyPrecedes(other.bytes)
    }
}
