import ConcordModel
import Crypto
import Foundation

/// A portable dump of a profile's live data:
/// `{"records":[{"kind","id","data"}...], "logs":[{"kind","id"?,"data"}...]}`.
public struct Dump: Sendable, Equatable {
    /// One record of a dump.
    public struct RecordItem: Sendable, Equatable {
        /// The record's kind.
        public let kind: String
        /// The record's id.
        public let id: String
        /// The record's data in canonical form, as its file holds it (`Record.canonicalData`):
        /// read straight from a dump's text, so a large import never builds the values.
        public let canonicalData: [UInt8]

        /// A record item whose data is `data` (stored in canonical form).
        public init(kind: String, id: String, data: [String: JSONValue]) {
            self.init(kind: kind, id: id, canonicalData: Record.canonicalData(data))
        }

        init(kind: String, id: String, canonicalData: [UInt8]) {
            self.kind = kind
            self.id = id
            self.canonicalData = canonicalData
        }

        /// The record's data as values.
        public var data: [String: JSONValue] {
            (try? JSONValue.parse(canonicalData))?.objectValue ?? [:]
        }
    }

    /// One log entry of a dump.
    public struct LogItem: Sendable, Equatable {
        /// The log kind it belongs to.
        public let kind: String
        /// The entry's id; when a dump gives none, one is derived from the kind, data and `written`,
        /// so importing the same dump twice adds nothing, and equal data written at two times is two entries.
        public let id: String
        /// The entry's data.
        public let data: [String: JSONValue]
        /// When, by whom and on which device the entry was first written (`at`, `by`, `device`), as
        /// exports give it; nil for a dump that does not say. An import keeps it as the entry's `origin`.
        public let written: WriteStamp?
        /// For an entry this profile holds from an import (one with an `origin`): who imported it, when
        /// and on which device — the member who signed it. An export writes it as `importedBy`, so a
        /// dump says that `by` is a claim the importer carried, never first-hand. An import reads it
        /// and keeps it nowhere: the entry's `by` is always its own signer's, `written` its origin.
        public let importedBy: WriteStamp?

        /// A log item; `written` nil for an entry whose origin the dump does not give.
        public init(kind: String, id: String, data: [String: JSONValue], written: WriteStamp?, importedBy: WriteStamp? = nil) {
            self.kind = kind
            self.id = id
            self.data = data
            self.written = written
            self.importedBy = importedBy
        }

        /// When the entry was first written (an HLC), if the dump says.
        public var at: String? { written?.at.description }
        /// Who first wrote it, if the dump says.
        public var by: String? { written?.member }
        /// On which device it was first written, if the dump says.
        public var device: String? { written?.device }

        /// A log's entries as an export gives them: each as first written (`LogEntry.written`), in
        /// the order of that (time, id, member, device, then data); entries that read the same in a
        /// dump (one entry imported by two members, say) once.
        static func exported(_ entries: [LogEntry], kind: String) -> [LogItem] {
            let items = entries.map { entry in
                (written: entry.written, id: entry.id, data: entry.data, line: JSONValue.object(entry.data).canonicalLine(),
                 importedBy: entry.origin == nil ? nil : WriteStamp(at: entry.at, member: entry.by, device: entry.device))
            }
                .sorted { a, b in
                    if a.written.at != b.written.at { return a.written.at < b.written.at }
                    if a.id != b.id { return a.id < b.id }
                    if a.written != b.written { return a.written < b.written }
                    return a.line.lexicographicallyPrecedes(b.line)
                }
            var out = [LogItem](), last: (WriteStamp, RecordID, [UInt8])?
            for item in items {
                if let last, last.0 == item.written, last.1 == item.id, last.2 == item.line { continue }
                last = (item.written, item.id, item.line)
                out.append(LogItem(kind: kind, id: item.id.rawValue, data: item.data, written: item.written, importedBy: item.importedBy))
            }
            return out
        }

        /// The item's JSON in a dump: `{"at", "by", "data", "device", "id", "importedBy"?, "kind"}`
        /// (without `at`, `by` and `device` when `written` is nil; `importedBy` an object `{"at", "by",
        /// "device"}` for an imported entry).
        var jsonValue: JSONValue {
            var fields: [String: JSONValue] = ["kind": .string(kind), "id": .string(id), "data": .object(data)]
            if let written {
                fields["at"] = .string(written.at.description)
                fields["by"] = .string(written.member)
                fields["device"] = .string(written.device)
            }
            if let importedBy {
                fields["importedBy"] = .object(["at": .string(importedBy.at.description), "by": .string(importedBy.member),
                                                "device": .string(importedBy.device)])
            }
            return .object(fields)
        }
    }

    /// The live records, in the dump's order.
    public var records: [RecordItem]
    /// The log entries, in the dump's order.
    public var logs: [LogItem]

    /// Parses a dump, naming the file and the entry at fault in every error. Each record's data
    /// is read straight into its canonical form; log entries are read as values.
    public static func parse(_ bytes: [UInt8], source: String) throws -> Dump {
        var dump = Dump(records: [], logs: [])
        do {
            try JSONReader.read(bytes) { reader in
                try reader.expect(.object, else: ConcordError.notAnObject(source: source))
                try reader.readObject { key, reader in
                    switch key {
                    case "records":
                        // A large dump's records are read on two cores; on any error, again in order.
                        let halves = [RecordItems(), RecordItems()]
                        if reader.readArrayInHalves({ half, index, reader in
                            halves[half].items.append(try recordItem(key, index, &reader, source: source))
                        }) {
                            dump.records = halves[0].items + halves[1].items
                        } else {
                            try items(key, &reader, source: source) { index, reader in
                                dump.records.append(try recordItem(key, index, &reader, source: source))
                            }
                        }
                    case "logs":
                        try items(key, &reader, source: source) { index, reader in
                            let item = try DumpItem(key, index, &reader, source: source, canonicalData: false)
                            let kind = try item.string("kind", item.kind), data = try item.values(), written = try item.written()
                            let id = try item.id == nil ? derivedID(kind: kind, data: data, written: written) : item.string("id", item.id)
                            dump.logs.append(LogItem(kind: kind, id: id, data: data, written: written, importedBy: try item.importStamp()))
                        }
                    default:
                        throw ConcordError.invalidInput(.badDump, "\(source): unknown top-level field \"\(key)\": a dump has only \"records\" and \"logs\"")
                    }
                }
            }
        } catch let error as JSONParseError {
            throw ConcordError.invalidJSON(source: source, detail: error.description)
        } catch {
            // The dump is read front to back, so a wrong entry can be met before a syntax error
            // further on; the syntax error is what to report (a file cut short, say).
            do { try JSONReader.read(bytes) { reader in try reader.skipValue() } } catch let syntax as JSONParseError {
                throw ConcordError.invalidJSON(source: source, detail: syntax.description)
            }
            throw error
        }
        return dump
    }

    /// One element of `records`: an object with a string `kind` and `id` and an object `data`.
    private static func recordItem(_ key: String, _ index: Int, _ reader: inout JSONReader, source: String) throws -> RecordItem {
        try reader.expect(.object, else: ConcordError.invalidInput(.badDump, "\(source): \(key)[\(index)] must be an object"))
        let item = try DumpItem(key, index, &reader, source: source, canonicalData: true)
        return RecordItem(kind: try item.string("kind", item.kind), id: try item.string("id", item.id),
                          canonicalData: try item.recordData())
    }

    /// The records one half of a large dump's `records` array holds, filled by one thread.
    private final class RecordItems {
        var items: [RecordItem] = []
    }

    /// Reads the array under `key`, each element an object.
    private static func items(_ key: String, _ reader: inout JSONReader, source: String,
                              _ item: (Int, inout JSONReader) throws -> Void) throws {
        try reader.expect(.array, else: ConcordError.invalidInput(.badDump, "\(source): \"\(key)\" must be an array"))
        try reader.readArray { index, reader in
            try reader.expect(.object, else: ConcordError.invalidInput(.badDump, "\(source): \(key)[\(index)] must be an object"))
            try item(index, &reader)
        }
    }

    /// The id of a log entry given without one: a hash of its kind and the canonical line of its
    /// data (with `at`, `by` and `device` when the dump gives them, so equal data written at two
    /// times gets two ids; without them, the hash of the data alone, as earlier versions derived it).
    static func derivedID(kind: String, data: [String: JSONValue], written: WriteStamp? = nil) -> String {
        var line = JSONValue.object(data).canonicalLine()
        if let written {
            line = JSONValue.object(["at": .string(written.at.description), "by": .string(written.member), "data": .object(data),
                                     "device": .string(written.device)]).canonicalLine()
        }
        var hasher = SHA256()
        hasher.update(data: Array(kind.utf8) + [0x0A] + line)
        return "d-" + hasher.finalize().prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// The dump as canonical JSON, records and logs in the order they are held (an export's: records
    /// by kind and file, log entries by kind and by when they were first written).
    public func canonicalBytes() -> [UInt8] {
        JSONValue.object([
            "records": .array(records.map { .object(["kind": .string($0.kind), "id": .string($0.id), "data": .object($0.data)]) }),
            "logs": .array(logs.map(\.jsonValue)),
        ]).canonicalBytes()
    }
}

/// One entry of a dump's `records` or `logs`: the fields a dump entry has (others are skipped),
/// with `data` kept either as canonical bytes (records) or as values (log entries).
private struct DumpItem {
    var key: String
    var index: Int
    /// Where the entry is, for error messages: `records[3]`.
    var place: String { "\(key)[\(index)]" }
    var source: String
    var kind, id, at, by, device, importedBy: JSONValue?
    var data: JSONValue?
    var canonicalData: [UInt8]?

    init(_ key: String, _ index: Int, _ reader: inout JSONReader, source: String, canonicalData wantsBytes: Bool) throws {
        self.key = key
        self.index = index
        self.source = source
        var item = self
        try reader.readObject { key, reader in
            switch key {
            case "data" where wantsBytes && reader.nextType == .object: item.canonicalData = try reader.readCanonical(indent: 1)
            case "data": item.data = try reader.readValue()
            case "kind": item.kind = try reader.readValue()
            case "id": item.id = try reader.readValue()
            case "at": item.at = try reader.readValue()
            case "by": item.by = try reader.readValue()
            case "device": item.device = try reader.readValue()
            case "importedBy": item.importedBy = try reader.readValue()
            default: break
            }
        }
        self = item
    }

    func string(_ name: String, _ value: JSONValue?) throws -> String {
        guard let text = value?.stringValue else {
            throw ConcordError.invalidInput(.badDump, "\(source): \(place) needs a string \"\(name)\"")
        }
        return text
    }

    func recordData() throws -> [UInt8] {
        guard let canonicalData else { throw ConcordError.invalidInput(.badDump, "\(source): \(place) needs an object \"data\"") }
        return canonicalData
    }

    /// `at`, `by` and `device` as one stamp: all three or none (a dump that does not say who wrote an entry).
    func written() throws -> WriteStamp? {
        guard at != nil || by != nil || device != nil else { return nil }
        guard let at = at?.stringValue, let by = by?.stringValue, let device = device?.stringValue else {
            throw ConcordError.invalidInput(.badDump, "\(source): \(place) needs strings \"at\", \"by\" and \"device\" together "
                                            + "(when, by whom and on which device the entry was written), or none of them")
        }
        guard let stamp = HLC(parsing: at) else {
            throw ConcordError.invalidInput(.badDump, 
                "\(source): \(place) has \"at\": \(at.debugDescription), not a time like 2026-01-01T10:00:00.001Z-0000 (when the entry was written)")
        }
        return WriteStamp(at: stamp, member: by, device: device)
    }

    /// `importedBy` as a stamp: an object `{"at", "by", "device"}`, or absent.
    func importStamp() throws -> WriteStamp? {
        guard let importedBy else { return nil }
        guard let at = importedBy["at"]?.stringValue.flatMap(HLC.init(parsing:)), let by = importedBy["by"]?.stringValue,
              let device = importedBy["device"]?.stringValue else {
            throw ConcordError.invalidInput(.badDump, "\(source): \(place) has an \"importedBy\" that is not an object {\"at\", \"by\", \"device\"} "
                                            + "(who imported the entry, when and on which device)")
        }
        return WriteStamp(at: at, member: by, device: device)
    }

    func values() throws -> [String: JSONValue] {
        guard let data = data?.objectValue else { throw ConcordError.invalidInput(.badDump, "\(source): \(place) needs an object \"data\"") }
        return data
    }
}
