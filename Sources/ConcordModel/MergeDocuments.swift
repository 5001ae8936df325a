extension RecordMerge {
    /// Three-way merge of a JSON object document that has no record envelope (`.concord/profile.json`,
    /// `.concord/members/*.json`).
    ///
    /// After the byte-level cases of ``merge(policy:base:ours:theirs:)``, each side must be a JSON object
    /// (else `.unresolved`, naming the side); a base that is not one counts as no base (an empty object).
    /// The top-level fields merge as `lww` merges `data`, but with no HLC to order the sides: a field
    /// changed differently on both sides takes the value whose canonical bytes
    /// (``JSONValue/canonicalBytes()``) compare greater byte by byte, and a removed field loses to a
    /// changed one. Values merge whole (no deep merge). The output is the merged object's canonical bytes;
    /// no conflicts are reported, because a document has no record envelope to name a winner by.
    public static func mergeDocument(base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) -> FileMergeOutcome {
        mergeObjects(base: base, ours: ours, theirs: theirs)
    }

    /// The merge of ``mergeDocument(base:ours:theirs:)``, after `prepare` has had the three sides' fields
    /// (base, ours, theirs) to merge some of them its own way first.
    private static func mergeObjects(
        base: [UInt8]?, ours: [UInt8], theirs: [UInt8],
        prepare: (inout [String: JSONValue], inout [String: JSONValue], inout [String: JSONValue]) -> Void = { _, _, _ in }
    ) -> FileMergeOutcome {
        if let trivial = MergeSupport.trivialMerge(base: base, ours: ours, theirs: theirs) { return trivial }
        return MergeSupport.resolving { () throws(MergeSupport.Unresolvable) in
            var sides = try MergeSupport.parseSides(ours: ours, theirs: theirs, as: "a JSON object document") {
                (bytes) throws(ModelError) in try RecordFields.parseObject(bytes, what: "the document")
            }
            var baseFields = base.flatMap { try? RecordFields.parseObject($0, what: "the document") } ?? [:]
            prepare(&baseFields, &sides.ours, &sides.theirs)
            let (fields, _) = MergeSupport.mergeFields(
                base: baseFields, ours: sides.ours, theirs: sides.theirs, resolve: MergeSupport.greaterValue)
            return .merged(bytes: JSONValue.object(fields).canonicalBytes(), conflicts: [])
        }
    }

    /// Three-way merge of a member file, `.concord/members/<name>.json`: ``mergeDocument(base:ours:theirs:)``,
    /// except that `keys` merges as a set of device keys rather than as one value.
    ///
    /// Each element of `keys`, identified by its `device`, is one value merged three ways like a document
    /// field: a key added on either side is kept, a key removed on one side (and unchanged on the other) is
    /// removed, and a key changed differently on both sides takes the element whose canonical bytes compare
    /// greater. The merged `keys` are sorted by device (UTF-8 bytes). So two devices added at once both
    /// stay, and a role change and a key addition made at once both survive. If a side's `keys` is not an
    /// array of objects with distinct string `device`s, `keys` merges whole, as any document field.
    ///
    /// A revocation beats any concurrent change: when one side's `status` is `revoked` and the other's
    /// is not, the revoking side's file is the result, whatever the other side changed.
    ///
    /// An admission is one claimant's: when both sides made the member active (from an invited base, or
    /// with no base) with different device keys — a link accepted on two forks, a name taken by two
    /// people joining by open invitation at once — nobody wins: with a base the result is the base (the
    /// member stays invited), with none it is the merged file revoked with no keys.
    public static func mergeMemberFile(base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) -> FileMergeOutcome {
        if let trivial = MergeSupport.trivialMerge(base: base, ours: ours, theirs: theirs) { return trivial }
        // A revocation beats any concurrent change to that member: the revoking side is kept whole.
        let revoked = (ours: isRevoked(ours), theirs: isRevoked(theirs))
        if revoked.ours != revoked.theirs { return .merged(bytes: revoked.ours ? ours : theirs, conflicts: []) }
        // An admission is one claimant's: when both sides made the member active from a pending or
        // absent file, holding different keys, nobody wins — device keys never merge as a union of
        // claimants'. A contested acceptance leaves the member invited (the base); a name two people
        // took at once is held by neither (revoked, no keys). No tie-break a claimant could grind.
        if isActive(ours), isActive(theirs), !(base.map(isActive) ?? false), !sameKeys(ours, theirs) {
            if let base { return .merged(bytes: base, conflicts: []) }
            return mergeObjects(base: nil, ours: ours, theirs: theirs) { _, ours, theirs in
                ours["keys"] = .array([]); theirs["keys"] = .array([])
                ours["status"] = .string("revoked"); theirs["status"] = .string("revoked")
            }
        }
        return mergeObjects(base: base, ours: ours, theirs: theirs) { base, ours, theirs in
            guard ours["keys"] != nil || theirs["keys"] != nil,
                  let oursKeys = keysByDevice(ours), let theirsKeys = keysByDevice(theirs) else { return }
            let (keys, _) = MergeSupport.mergeFields(
                base: keysByDevice(base) ?? [:], ours: oursKeys, theirs: theirsKeys, resolve: MergeSupport.greaterValue)
            let merged = JSONValue.array(keys.sorted { utf8Precedes($0.key, $1.key) }.map(\.value))
            (base["keys"], ours["keys"], theirs["keys"]) = (merged, merged, merged)
        }
    }

    /// Whether a member file's `status` is `active` (false for anything unreadable).
    static func isActive(_ bytes: [UInt8]) -> Bool {
        (try? RecordFields.parseObject(bytes, what: "the document"))?["status"] == .string("active")
    }

    /// Whether two member files hold the same device keys (as sets of key lines; false if either is unreadable).
    static func sameKeys(_ one: [UInt8], _ other: [UInt8]) -> Bool {
        func keys(_ bytes: [UInt8]) -> Set<String>? {
            guard let fields = try? RecordFields.parseObject(bytes, what: "the document") else { return nil }
            guard case .array(let keys)? = fields["keys"] else { return fields["keys"] == nil ? [] : nil }
            return Set(keys.compactMap { $0.objectValue?["publicKey"]?.stringValue })
        }
        guard let a = keys(one), let b = keys(other) else { return false }
        return a == b
    }

    /// Whether a member file's `status` is `revoked` (false for anything unreadable).
    static func isRevoked(_ bytes: [UInt8]) -> Bool {
        (try? RecordFields.parseObject(bytes, what: "the document"))?["status"] == .string("revoked")
    }

    /// A member file's `keys` as a map from each key's `device` (none: `[:]`); nil if they are not an
    /// array of objects with distinct string devices.
    static func keysByDevice(_ document: [String: JSONValue]) -> [String: JSONValue]? {
        guard let keys = document["keys"] else { return [:] }
        guard case .array(let elements) = keys else { return nil }
        var out = [String: JSONValue]()
        for element in elements {
            guard let device = element.objectValue?["device"]?.stringValue, out.updateValue(element, forKey: device) == nil
            else { return nil }
        }
        return out
    }

    /// Three-way merge of `.concord/kinds.json`.
    ///
    /// After the byte-level cases of ``merge(policy:base:ours:theirs:)``, each side must be a valid kinds
    /// file (``KindsTable/decode(_:)``, so a newer `formatVersion` is refused), else `.unresolved`, naming
    /// the side; an invalid base counts as no base. The `kinds` arrays merge as maps keyed by kind name:
    /// each kind, written out in full (`directory`, `name`, `policy`, `writers`), is one value merged three
    /// ways like a ``mergeDocument(base:ours:theirs:)`` field — added, removed or changed on one side
    /// wins; removed on one side and changed on the other, the change wins; changed differently on both
    /// sides (or added on both), the kind's fields merge three ways one by one (`mergeKind`): a field
    /// changed on one side keeps that change, and where both changed it, `writers` takes the higher
    /// role (two Admins' concurrent changes never open a kind up behind one's back: one locking it
    /// down and the other changing its policy keep both) and `policy` or `directory` the value whose
    /// canonical bytes compare greater. The output is the canonical kinds file
    /// (``KindsTable/canonicalBytes()``: current `formatVersion`, kinds sorted by name). If the merged kinds
    /// would share a directory, the result is `.unresolved`. No conflicts are reported.
    public static func mergeKindsFile(base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) -> FileMergeOutcome {
        if let trivial = MergeSupport.trivialMerge(base: base, ours: ours, theirs: theirs) { return trivial }
        return MergeSupport.resolving { () throws(MergeSupport.Unresolvable) in
            let sides = try MergeSupport.parseSides(ours: ours, theirs: theirs, as: "a valid kinds file") {
                (bytes) throws(ModelError) in try KindsTable.decode(bytes)
            }
            func byName(_ table: KindsTable?) -> [String: JSONValue] {
                Dictionary((table?.kinds ?? []).map { ($0.name, $0.jsonValue) }, uniquingKeysWith: { first, _ in first })
            }
            let baseKinds = byName(base.flatMap { try? KindsTable.decode($0) })
            let (merged, _) = MergeSupport.mergeFields(
                base: baseKinds, ours: byName(sides.ours), theirs: byName(sides.theirs),
                resolve: { ours, theirs in mergeKind(base: baseKinds, ours: ours, theirs: theirs) })
            let values = merged.sorted { utf8Precedes($0.key, $1.key) }.map(\.value)
            do throws(ModelError) {
                var kinds: [RecordKind] = []
                for (index, value) in values.enumerated() {
                    kinds.append(try KindsTable.decodeKind(value, index: index))
                }
                return .merged(bytes: try KindsTable(kinds).canonicalBytes(), conflicts: [])
            } catch {
                let why = error.errorDescription ?? "unreadable"
                throw .init(reason: "the merged kinds would be invalid (\(why)); merge .concord/kinds.json by hand")
            }
        }
    }

    /// One kind changed differently on both sides (`mergeKindsFile`): removed on one side, the other
    /// side's change; else field by field against the base's kind of that name (none: added on both).
    static func mergeKind(base: [String: JSONValue], ours: JSONValue?, theirs: JSONValue?) -> JSONValue? {
        guard let o = ours?.objectValue, let t = theirs?.objectValue, let name = o["name"]?.stringValue else {
            return MergeSupport.greaterValue(ours, theirs)
        }
        let b = base[name]?.objectValue ?? [:]
        var merged: [String: JSONValue] = [:]
        for field in Set(o.keys).union(t.keys) {
            let (bf, of, tf) = (b[field], o[field], t[field])
            let value: JSONValue?
            if of == tf { value = of } else if of == bf { value = tf } else if tf == bf { value = of } else if field == "writers" {
                let rank = { (value: JSONValue?) in value?.stringValue.flatMap(Role.init(parsing:))?.rank ?? -1 }
                value = rank(of) >= rank(tf) ? of : tf
            } else {
                value = MergeSupport.greaterValue(of, tf)
            }
            if let value { merged[field] = value }
        }
        return .object(merged)
    }

}
