import ConcordModel
import Crypto
import Foundation

/// A portable dump of a profile's live data:
/// `{"records":[{"kind","id","data"}...], "logs":[{"kind","id"?,"data"}...]}`.
public struct Dump: Sendable, Equatable {
    public struct RecordItem: Sendable, Equatable {
        public let kind: String
        public let id: String
        /// The record's data in canonical form, as its file holds it (`Record.canonicalData`):
        /// read straight from a dump's text, so a large import never builds the values.
        public let canonicalData: [UInt8]

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

    public struct LogItem: Sendable, Equatable {
        public let kind: String
        /// The entry's id; when a dump gives none, one is derived from the kind and data, so
        /// importing the same dump twice adds nothing.
        public let id: String
        public let data: [String: JSONValue]
        /// Only in exports: when, by whom and on which device the entry was written.
        public let at: String?
        public let by: String?
        public let device: String?
    }

    public var records: [RecordItem]
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
                            let kind = try item.string("kind", item.kind), data = try item.values()
                            let id = try item.id == nil ? derivedID(kind: kind, data: data) : item.string("id", item.id)
                            dump.logs.append(LogItem(kind: kind, id: id, data: data, at: item.at?.stringValue,
                                                     by: item.by?.stringValue, device: item.device?.stringValue))
                        }
                    default:
                        throw ConcordError.invalidInput("\(source): unknown top-level field \"\(key)\": a dump has only \"records\" and \"logs\"")
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
        try reader.expect(.object, else: ConcordError.invalidInput("\(source): \(key)[\(index)] must be an object"))
        let item = try DumpItem(key, index, &reader, source: source, canonicalData: true)
        return RecordItem(kind: try item.string("kind", item.kind), id: try item.string("id", item.id),
                          canonicalData: try item.recordData())
    }

    /// The records one half of a large dump's `records` array holds, filled by one thread.
    private final class RecordItems: @unchecked Sendable {
        var items: [RecordItem] = []
    }

    /// Reads the array under `key`, each element an object.
    private static func items(_ key: String, _ reader: inout JSONReader, source: String,
                              _ item: (Int, inout JSONReader) throws -> Void) throws {
        try reader.expect(.array, else: ConcordError.invalidInput("\(source): \"\(key)\" must be an array"))
        try reader.readArray { index, reader in
            try reader.expect(.object, else: ConcordError.invalidInput("\(source): \(key)[\(index)] must be an object"))
            try item(index, &reader)
        }
    }

    /// The id of a log entry given without one: a hash of its kind and canonical data.
    static func derivedID(kind: String, data: [String: JSONValue]) -> String {
        var hasher = SHA256()
        hasher.update(data: Array(kind.utf8) + [0x0A] + JSONValue.object(data).canonicalLine())
        return "d-" + hasher.finalize().prefix(16).map { String(format: "%02x", $0) }.joined()
    }

    /// The dump as canonical JSON (records sorted by kind and id, logs by time).
    public func canonicalBytes() -> [UInt8] {
        func optional(_ name: String, _ value: String?) -> [String: JSONValue] { value.map { [name: .string($0)] } ?? [:] }
        return JSONValue.object([
            "records": .array(records.map { .object(["kind": .string($0.kind), "id": .string($0.id), "data": .object($0.data)]) }),
            "logs": .array(logs.map { item in
                .object(["kind": .string(item.kind), "id": .string(item.id), "data": .object(item.data)]
                    .merging(optional("at", item.at)) { a, _ in a }
                    .merging(optional("by", item.by)) { a, _ in a }
                    .merging(optional("device", item.device)) { a, _ in a })
            }),
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
    var kind, id, at, by, device: JSONValue?
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
            default: break
            }
        }
        self = item
    }

    func string(_ name: String, _ value: JSONValue?) throws -> String {
        guard let text = value?.stringValue else {
            throw ConcordError.invalidInput("\(source): \(place) needs a string \"\(name)\"")
        }
        return text
    }

    func recordData() throws -> [UInt8] {
        guard let canonicalData else { throw ConcordError.invalidInput("\(source): \(place) needs an object \"data\"") }
        return canonicalData
    }

    func values() throws -> [String: JSONValue] {
        guard let data = data?.objectValue else { throw ConcordError.invalidInput("\(source): \(place) needs an object \"data\"") }
        return data
    }
}
