/// Who made one write and when: an HLC, the member and the device.
///
/// Ordered by the HLC, then the member, then the device, the names by their UTF-8 bytes. Two stamps are
/// equal only if all three are byte-identical. This is the order every "the later write wins" of the
/// merge policies uses (docs/merging.md, "The total order").
public struct WriteStamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// When.
    public let at: HLC
    /// Who (`updatedBy` / `deletedBy` / `by`).
    public let member: String
    /// On which device.
    public let device: String

    /// Creates a stamp.
    public init(at: HLC, member: String, device: String) {
        (self.at, self.member, self.device) = (at, member, device)
    }

    /// Equal when the HLC, member and device are byte-identical.
    public static func == (lhs: WriteStamp, rhs: WriteStamp) -> Bool {
        lhs.at == rhs.at && lhs.member.utf8.elementsEqual(rhs.member.utf8) && lhs.device.utf8.elementsEqual(rhs.device.utf8)
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(at)
        hasher.combine(Array(member.utf8))
        hasher.combine(Array(device.utf8))
    }

    /// Ordered by HLC, then member, then device (UTF-8 bytes).
    public static func < (lhs: WriteStamp, rhs: WriteStamp) -> Bool {
        if lhs.at != rhs.at { return lhs.at < rhs.at }
        if !lhs.member.utf8.elementsEqual(rhs.member.utf8) { return utf8Precedes(lhs.member, rhs.member) }
        return utf8Precedes(lhs.device, rhs.device)
    }

    /// `<HLC> <member>@<device>`, for messages.
    public var description: String { "\(at) \(member)@\(device)" }

    /// `{"at": "<HLC>", "by": "<member>", "device": "<device>"}`, the shape of a log entry's envelope.
    var jsonValue: JSONValue {
        .object(["at": .string(at.description), "by": .string(member), "device": .string(device)])
    }

    /// Reads ``jsonValue`` strictly; `what` names the value in errors.
    static func decode(_ value: JSONValue, what: @autoclosure () -> String) throws(ModelError) -> WriteStamp {
        guard case .object(let object) = value else {
            throw .malformedRecord(what: what(), why: "must be an object {\"at\", \"by\", \"device\"}")
        }
        // A well-formed stamp, read without building the names errors would need.
        if object.count == 3, case .string(let at)? = object["at"], case .string(let member)? = object["by"],
           case .string(let device)? = object["device"], let hlc = HLC(parsing: at) {
            return WriteStamp(at: hlc, member: member, device: device)
        }
        let fields = RecordFields(fields: object, context: "\(what()): ")
        try fields.requireOnly(stampFields, shape: "a write stamp")
        return WriteStamp(at: try fields.stamp("at"), member: try fields.string("by"), device: try fields.string("device"))
    }

    private static let stampFields: Set<String> = ["at", "by", "device"]
}

/// One field's last write in a record: the value it wrote (nil: it removed the field) and its stamp.
struct FieldWrite {
    let value: JSONValue?
    let stamp: WriteStamp

    /// The later of two writes of one field: by stamp; at an equal stamp (which Concord never writes for
    /// different values) the value whose canonical bytes compare greater, a removal counting as no bytes.
    static func later(_ a: FieldWrite, _ b: FieldWrite) -> FieldWrite {
        if a.stamp != b.stamp { return a.stamp < b.stamp ? b : a }
        // The same write on both sides (the common case): either is the later, and the rule below gives `a`.
        if MergeSupport.same(a.value, b.value) { return a }
        return MergeSupport.same(a.value, MergeSupport.greaterValue(a.value, b.value)) ? a : b
    }

    /// Same stamp and same value (by canonical bytes).
    func isSame(as other: FieldWrite?) -> Bool {
        guard let other else { return false }
        return stamp == other.stamp && MergeSupport.same(value, other.value)
    }
}

extension Record {
    /// The stamp of the write that made this version: `updatedAt`/`updatedBy`/`device`, or
    /// `deletedAt`/`deletedBy`/`device` for a tombstone.
    public var envelope: WriteStamp { WriteStamp(at: stamp, member: member, device: device) }

    /// When field `key` was last written (set or removed); nil if it never was since the record's last
    /// delete. A key of `data` not listed in ``fieldStamps`` was written by the envelope's write.
    public func stamp(ofField key: String) -> WriteStamp? {
        if let explicit = fieldStamps[key] { return explicit }
        return data?[key] != nil ? envelope : nil
    }

    /// Every field's last write, removals included. Empty for a tombstone.
    var fieldWrites: [String: FieldWrite] {
        guard let data else { return [:] }
        var out = [String: FieldWrite]()
        for (key, stamp) in fieldStamps { out[key] = FieldWrite(value: data[key], stamp: stamp) }
        for (key, value) in data where out[key] == nil { out[key] = FieldWrite(value: value, stamp: envelope) }
        return out
    }

    /// A live record from its field writes: `data` is the fields whose last write set a value and came
    /// after `lastDeleted`; ``fieldStamps`` lists the rest, minus the data fields written by `envelope`.
    static func live(id: RecordID, kind: String, envelope: WriteStamp, writes: [String: FieldWrite],
                     lastDeleted: WriteStamp?) -> Record {
        var data = [String: JSONValue](), stamps = [String: WriteStamp]()
        for (key, write) in writes where lastDeleted.map({ $0 < write.stamp }) ?? true {
            if let value = write.value { data[key] = value }
            if write.value == nil || write.stamp != envelope { stamps[key] = write.stamp }
        }
        return Record(id: id, kind: kind, device: envelope.device, member: envelope.member, stamp: envelope.at,
                      state: .live(data: data), fieldStamps: stamps, lastDeleted: lastDeleted)
    }

    /// The record after one write of `data` stamped `stamp` over `existing` (nil: no record yet).
    ///
    /// Only the fields the write changes take its stamp: a field whose value is the same (by canonical
    /// bytes) as in `existing` keeps its stamp, a field `existing` has and `data` lacks is removed at
    /// `stamp`, and earlier removals are kept. Over a tombstone the record starts afresh, remembering the
    /// delete in ``lastDeleted``. This is the only way Concord writes a live record, so a record's field
    /// stamps say which write last set or removed each field.
    public static func written(_ data: [String: JSONValue], over existing: Record?, id: RecordID, kind: String,
                               by stamp: WriteStamp) -> Record {
        var writes = [String: FieldWrite]()
        var lastDeleted: WriteStamp?
        if let existing {
            if existing.isDeleted {
                lastDeleted = existing.envelope
            } else {
                writes = existing.fieldWrites
                lastDeleted = existing.lastDeleted
            }
        }
        for (key, old) in writes where old.value != nil && data[key] == nil {
            writes[key] = FieldWrite(value: nil, stamp: stamp)
        }
        for (key, value) in data where !MergeSupport.same(writes[key]?.value, value) {
            writes[key] = FieldWrite(value: value, stamp: stamp)
        }
        return live(id: id, kind: kind, envelope: stamp, writes: writes, lastDeleted: lastDeleted)
    }
}
