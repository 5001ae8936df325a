#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One record file, `<kind directory>/<id>.json`: a live record or a tombstone.
///
/// Live: `{"data": {...}, "device", "fields"?, "id", "kind", "lastDeleted"?, "updatedAt": "<HLC>",
/// "updatedBy": "<member>"}`, where `fields` maps a field to the write stamp that last set or removed it
/// (``fieldStamps``) and `lastDeleted` is the latest delete a revived record has seen; both are written
/// only when not empty.
/// Tombstone: `{"deleted": true, "deletedAt": "<HLC>", "deletedBy": "<member>", "device", "id", "kind"}`.
public struct Record: Sendable, Equatable {
    /// Whether the record holds data or has been deleted.
    public enum State: Sendable, Equatable {
        /// A live record and its data.
        case live(data: [String: JSONValue])
        /// A tombstone.
        case deleted
    }

    /// The record's id (its file name without `.json`).
    public var id: RecordID
    /// The name of the record's kind.
    public var kind: String
    /// The device that made the last change.
    public var device: String
    /// The member who made the last change (`updatedBy` / `deletedBy`).
    public var member: String
    /// When the last change was made (`updatedAt` / `deletedAt`).
    public var stamp: HLC
    /// Live data or deleted.
    public var state: State
    /// Live records only: when each field was last written, for the fields whose last write is not the
    /// envelope's (``envelope``) and for the fields removed from `data` (the stamp of the removal). A field
    /// of `data` not listed here was written by the envelope's write. Empty for a tombstone.
    public var fieldStamps: [String: WriteStamp]
    /// Live records only: the latest delete of this record that it has seen, if it was deleted and then
    /// written again. Every field write at or before it is gone.
    public var lastDeleted: WriteStamp?

    /// Creates a record. `fieldStamps` and `lastDeleted` only apply to a live record.
    public init(id: RecordID, kind: String, device: String, member: String, stamp: HLC, state: State,
                fieldStamps: [String: WriteStamp] = [:], lastDeleted: WriteStamp? = nil) {
        self.id = id
        self.kind = kind
        self.device = device
        self.member = member
        self.stamp = stamp
        self.state = state
        let live = state != .deleted
        self.fieldStamps = live ? fieldStamps : [:]
        self.lastDeleted = live ? lastDeleted : nil
    }

    /// Whether this is a tombstone.
    public var isDeleted: Bool { state == .deleted }

    /// The stamp of a placeholder: the earliest there is (0000-01-01T00:00:00.000Z-0000).
    public static let placeholderStamp = HLC(wallMillis: HLC.minWallMillis)

    /// Whether this is a placeholder: a tombstone at the earliest stamp, which a merge leaves where a
    /// record left out of it (docs/security.md) stays as a file. Every merge gives way to the other
    /// version of the record, live or deleted (``RecordMerge/merge(policy:base:ours:theirs:)``), so it
    /// deletes nothing, whatever the kind's policy.
    public var isPlaceholder: Bool { isDeleted && stamp == Self.placeholderStamp }

    /// The data of a live record; `nil` for a tombstone.
    public var data: [String: JSONValue]? {
        if case .live(let data) = state { return data }
        return nil
    }

    /// The record file's JSON.
    public var jsonValue: JSONValue {
        var fields: [String: JSONValue] = [
            "device": .string(device), "id": .string(id.rawValue), "kind": .string(kind),
        ]
        switch state {
        case .live(let data):
            fields["data"] = .object(data)
            if !fieldStamps.isEmpty { fields["fields"] = .object(fieldStamps.mapValues(\.jsonValue)) }
            if let lastDeleted { fields["lastDeleted"] = lastDeleted.jsonValue }
            fields["updatedAt"] = .string(stamp.description)
            fields["updatedBy"] = .string(member)
        case .deleted:
            fields["deleted"] = .bool(true)
            fields["deletedAt"] = .string(stamp.description)
            fields["deletedBy"] = .string(member)
        }
        return .object(fields)
    }

    /// The canonical bytes of the record file: `jsonValue.canonicalBytes()`, written straight from
    /// the fields (their keys in canonical order) rather than through a dictionary to sort.
    public func encoded() -> [UInt8] {
        switch state {
        case .live(let data):
            guard fieldStamps.isEmpty, lastDeleted == nil else { return encodedListingWrites(data) }
            return Self.encodeLive(id: id, kind: kind, device: device, member: member, stamp: stamp,
                                   canonicalData: Self.canonicalData(data))
        case .deleted:
            var writer = Self.envelopeWriter(first: "deleted")
            writer.out.append(contentsOf: "true".utf8)
            Self.field("deletedAt", stamp.description, &writer)
            Self.field("deletedBy", member, &writer)
            Self.field("device", device, &writer)
            Self.field("id", id.rawValue, &writer)
            Self.field("kind", kind, &writer)
            return Self.closeEnvelope(&writer)
        }
    }

    /// ``encoded()`` of a live record with field stamps or a `lastDeleted`: the canonical form of
    /// ``jsonValue``, written straight from the fields as ``encoded()`` writes the others.
    private func encodedListingWrites(_ data: [String: JSONValue]) -> [UInt8] {
        var writer = Self.envelopeWriter(first: "data")
        writer.write(.object(data), indent: 1)
        Self.field("device", device, &writer)
        if !fieldStamps.isEmpty {
            Self.key("fields", &writer)
            writer.out.append(UInt8(ascii: "{"))
            for (position, (name, stamp)) in fieldStamps.sorted(by: { utf8Precedes($0.key, $1.key) }).enumerated() {
                if position > 0 { writer.out.append(UInt8(ascii: ",")) }
                writer.newline(2)
                writer.writeString(name)
                writer.out.append(contentsOf: ": ".utf8)
                Self.writeStamp(stamp, indent: 2, &writer)
            }
            writer.newline(1)
            writer.out.append(UInt8(ascii: "}"))
        }
        Self.field("id", id.rawValue, &writer)
        Self.field("kind", kind, &writer)
        if let lastDeleted {
            Self.key("lastDeleted", &writer)
            Self.writeStamp(lastDeleted, indent: 1, &writer)
        }
        Self.field("updatedAt", stamp.description, &writer)
        Self.field("updatedBy", member, &writer)
        return Self.closeEnvelope(&writer)
    }

    /// ``WriteStamp/jsonValue`` in canonical form, as the value of a member at `indent`.
    private static func writeStamp(_ stamp: WriteStamp, indent: Int, _ writer: inout CanonicalWriter) {
        writer.out.append(UInt8(ascii: "{"))
        writer.newline(indent + 1)
        writer.out.append(contentsOf: "\"at\": ".utf8)
        writer.writeString(stamp.at.description)
        writer.out.append(UInt8(ascii: ","))
        writer.newline(indent + 1)
        writer.out.append(contentsOf: "\"by\": ".utf8)
        writer.writeString(stamp.member)
        writer.out.append(UInt8(ascii: ","))
        writer.newline(indent + 1)
        writer.out.append(contentsOf: "\"device\": ".utf8)
        writer.writeString(stamp.device)
        writer.newline(indent)
        writer.out.append(UInt8(ascii: "}"))
    }

    /// A live record's data in the canonical form its file holds (one level deep, no final
    /// newline), which is what `JSONReader.readCanonical(indent: 1)` reads from any JSON text.
    public static func canonicalData(_ data: [String: JSONValue]) -> [UInt8] {
        var writer = CanonicalWriter(pretty: true)
        writer.out.reserveCapacity(256)
        writer.write(.object(data), indent: 1)
        return writer.out
    }

    /// The file bytes of a live record whose data is given in canonical form (``canonicalData(_:)``):
    /// what ``encoded()`` gives for the same record.
    public static func encodeLive(id: RecordID, kind: String, device: String, member: String, stamp: HLC,
                                  canonicalData: [UInt8]) -> [UInt8] {
        LiveEncoder(device: device, member: member, kind: kind).encode(id: id, stamp: stamp, canonicalData: canonicalData)
    }

    /// Encodes many live records of one kind written by one member on one device (an import):
    /// the envelope around the data, id and stamp is made once, and each record is copied into
    /// an array of its exact size. Gives the bytes ``encodeLive(id:kind:device:member:stamp:canonicalData:)`` gives.
    package struct LiveEncoder: Sendable {
        /// `{\n  "data": `
        private let head: [UInt8]
        /// `,\n  "device": "<device>",\n  "id": "`
        private let afterData: [UInt8]
        /// `",\n  "kind": "<kind>",\n  "updatedAt": "`
        private let afterID: [UInt8]
        /// `",\n  "updatedBy": "<member>"\n}\n`
        private let afterStamp: [UInt8]

        package init(device: String, member: String, kind: String) {
            let quote = UInt8(ascii: "\"")
            head = envelopeWriter(first: "data").out
            afterData = Self.segment { field("device", device, &$0); key("id", &$0); $0.out.append(quote) }
            afterID = Self.segment {
                $0.out.append(quote); field("kind", kind, &$0); key("updatedAt", &$0); $0.out.append(quote)
            }
            var last = CanonicalWriter(pretty: true)
            last.out.append(quote)
            field("updatedBy", member, &last)
            afterStamp = closeEnvelope(&last)
        }

        private static func segment(_ write: (inout CanonicalWriter) -> Void) -> [UInt8] {
            var writer = CanonicalWriter(pretty: true)
            write(&writer)
            return writer.out
        }

        /// A record id needs no escaping in JSON: its characters are `[A-Za-z0-9._-]`.
        package func encode(id: RecordID, stamp: HLC, canonicalData: [UInt8]) -> [UInt8] {
            var identifier = id.rawValue
            return identifier.withUTF8 { id in
                let count = head.count + canonicalData.count + afterData.count + id.count + afterID.count + HLC.textLength + afterStamp.count
                return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                    var cursor = buffer.baseAddress!
                    func copy(_ bytes: UnsafeBufferPointer<UInt8>) {
                        guard let base = bytes.baseAddress else { return }
                        cursor.update(from: base, count: bytes.count)
                        cursor += bytes.count
                    }
                    head.withUnsafeBufferPointer(copy)
                    canonicalData.withUnsafeBufferPointer(copy)
                    afterData.withUnsafeBufferPointer(copy)
                    copy(id)
                    afterID.withUnsafeBufferPointer(copy)
                    stamp.write(to: cursor)
                    cursor += HLC.textLength
                    afterStamp.withUnsafeBufferPointer(copy)
                    initialized = count
                }
            }
        }
    }

    private static func envelopeWriter(first: StaticString) -> CanonicalWriter {
        var writer = CanonicalWriter(pretty: true)
        writer.out.reserveCapacity(256)
        writer.out.append(UInt8(ascii: "{"))
        key(first, &writer, first: true)
        return writer
    }

    fileprivate static func key(_ name: StaticString, _ writer: inout CanonicalWriter, first: Bool = false) {
        if !first { writer.out.append(UInt8(ascii: ",")) }
        writer.newline(1)
        writer.out.append(UInt8(ascii: "\""))
        writer.out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        writer.out.append(contentsOf: "\": ".utf8)
    }

    fileprivate static func field(_ name: StaticString, _ value: String, _ writer: inout CanonicalWriter) {
        key(name, &writer)
        writer.writeString(value)
    }

    fileprivate static func closeEnvelope(_ writer: inout CanonicalWriter) -> [UInt8] {
        writer.newline(0)
        writer.out.append(contentsOf: "}\n".utf8)
        return writer.out
    }

    static let liveFields: Set<String> = ["data", "device", "fields", "id", "kind", "lastDeleted", "updatedAt", "updatedBy"]
    static let tombstoneFields: Set<String> = ["deleted", "deletedAt", "deletedBy", "device", "id", "kind"]

    /// Reads a record file strictly: every field present with the right type, no unknown fields, at most
    /// ``maxRecordBytes``.
    public static func decode(_ bytes: some Collection<UInt8>) throws(ModelError) -> Record {
        let fields = RecordFields(fields: try RecordFields.parseObject(bytes, what: "record"), context: "")
        let id = try fields.id("id")
        let kind = try fields.kindName("kind")
        let device = try fields.string("device")
        if let deleted = fields.fields["deleted"] {
            guard deleted == .bool(true) else {
                throw .malformedRecord(what: "field \"deleted\"", why: "must be true (remove it for a live record)")
            }
            try fields.requireOnly(tombstoneFields, shape: "a tombstone")
            return Record(
                id: id, kind: kind, device: device, member: try fields.string("deletedBy"),
                stamp: try fields.stamp("deletedAt"), state: .deleted)
        }
        try fields.requireOnly(liveFields, shape: "a live record")
        let data = try fields.object("data")
        let envelope = WriteStamp(at: try fields.stamp("updatedAt"), member: try fields.string("updatedBy"), device: device)
        var lastDeleted: WriteStamp?
        if let value = fields.fields["lastDeleted"] { lastDeleted = try WriteStamp.decode(value, what: "field \"lastDeleted\"") }
        if let lastDeleted, !(lastDeleted < envelope) {
            throw .malformedRecord(what: "field \"lastDeleted\"", why: "must be earlier than the record's updatedAt/updatedBy/device")
        }
        var listed = [String: JSONValue]()
        if let value = fields.fields["fields"] {
            guard let object = value.objectValue else { throw fields.wrongType("fields", "an object") }
            listed = object
        }
        var stamps = [String: WriteStamp]()
        for (key, value) in listed {
            let stamp = try WriteStamp.decode(value, what: "field stamp \(quoted(key))")
            guard stamp <= envelope, lastDeleted.map({ $0 < stamp }) ?? true else {
                throw .malformedRecord(what: "field stamp \(quoted(key))",
                                       why: "must be after lastDeleted and not after the record's updatedAt/updatedBy/device")
            }
            // A data field written by the envelope's write is not listed (the canonical form).
            if data[key] == nil || stamp != envelope { stamps[key] = stamp }
        }
        return Record(id: id, kind: kind, device: device, member: envelope.member, stamp: envelope.at,
                      state: .live(data: data), fieldStamps: stamps, lastDeleted: lastDeleted)
    }
}

extension Record {
    /// The stamp of a record file and whether it is a tombstone, read without parsing the whole
    /// document when the file is canonical (top-level keys sit on lines indented by exactly two
    /// spaces; a raw newline cannot occur inside a canonical string). nil when the file does not
    /// look canonical, in which case callers decode it.
    public static func peekStamp(_ bytes: [UInt8]) -> (stamp: HLC, deleted: Bool)? {
        guard bytes.first == UInt8(ascii: "{"), bytes.last == 0x0A else { return nil }
        let deleted = find(Self.deletedLine, in: bytes) != nil
        let needle = deleted ? Self.deletedAtLine : Self.updatedAtLine
        guard let start = find(needle, in: bytes).map({ $0 + needle.count }),
              let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")),
              let stamp = bytes.withUnsafeBufferPointer({ HLC.parse(UnsafeBufferPointer(rebasing: $0[start..<end])) }) else { return nil }
        return (stamp, deleted)
    }

    private static let deletedLine = Array("\n  \"deleted\": true".utf8)
    private static let deletedAtLine = Array("\n  \"deletedAt\": \"".utf8)
    private static let updatedAtLine = Array("\n  \"updatedAt\": \"".utf8)

    /// The offset of the first occurrence of `needle` in `haystack`: candidates found by libc's
    /// `memchr`, checked with `memcmp`. (With the stamp parsed from the bytes, no string made,
    /// bench row B5's 10,000 stamps took 1.9 ms on one core instead of 3.4 with a byte-by-byte scan.)
    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        return haystack.withUnsafeBytes { hay in
            needle.withUnsafeBytes { pin in
                let base = hay.baseAddress!, last = hay.count - pin.count
                var index = 0
                while index <= last, let hit = memchr(base + index, Int32(first), last - index + 1) {
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, pin.baseAddress!, pin.count) == 0 { return at }
                    index = at + 1
                }
                return nil
            }
        }
    }
}
