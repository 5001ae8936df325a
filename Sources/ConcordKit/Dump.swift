import ConcordModel
import Crypto
import Foundation

/// A portable dump of a profile's live data:
/// `{"records":[{"kind","id","data"}...], "logs":[{"kind","id"?,"data"}...]}`.
public struct Dump: Sendable, Equatable {
    public struct RecordItem: Sendable, Equatable {
        public let kind: String
        public let id: String
        public let data: [String: JSONValue]
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

    /// Parses a dump, naming the file and the entry at fault in every error.
    public static func parse(_ bytes: [UInt8], source: String) throws -> Dump {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw ConcordError.invalidJSON(source: source, detail: error.description)
        }
        guard let object = value.objectValue else { throw ConcordError.notAnObject(source: source) }
        let known: Set<String> = ["records", "logs"]
        if let extra = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw ConcordError.invalidInput("\(source): unknown top-level field \"\(extra)\": a dump has only \"records\" and \"logs\"")
        }
        func items(_ key: String) throws -> [[String: JSONValue]] {
            guard let list = object[key] else { return [] }
            guard let array = list.arrayValue else { throw ConcordError.invalidInput("\(source): \"\(key)\" must be an array") }
            return try array.enumerated().map { index, item in
                guard let fields = item.objectValue else {
                    throw ConcordError.invalidInput("\(source): \(key)[\(index)] must be an object")
                }
                return fields
            }
        }
        func field(_ item: [String: JSONValue], _ name: String, _ place: String) throws -> String {
            guard let text = item[name]?.stringValue else {
                throw ConcordError.invalidInput("\(source): \(place) needs a string \"\(name)\"")
            }
            return text
        }
        func data(_ item: [String: JSONValue], _ place: String) throws -> [String: JSONValue] {
            guard let data = item["data"]?.objectValue else {
                throw ConcordError.invalidInput("\(source): \(place) needs an object \"data\"")
            }
            return data
        }
        let records = try items("records").enumerated().map { index, item in
            let place = "records[\(index)]"
            return RecordItem(kind: try field(item, "kind", place), id: try field(item, "id", place), data: try data(item, place))
        }
        let logs = try items("logs").enumerated().map { index, item in
            let place = "logs[\(index)]"
            let kind = try field(item, "kind", place)
            let data = try data(item, place)
            let id = try item["id"] == nil ? derivedID(kind: kind, data: data) : field(item, "id", place)
            return LogItem(kind: kind, id: id, data: data, at: item["at"]?.stringValue,
                           by: item["by"]?.stringValue, device: item["device"]?.stringValue)
        }
        return Dump(records: records, logs: logs)
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

extension Profile {
    /// Writes every record and log entry of `dump` as ONE commit. Records already holding the same
    /// data and log entries already present are skipped, so importing a dump twice changes nothing.
    @discardableResult
    public func importDump(_ dump: Dump, as identity: Identity) throws -> WriteResult<Void> {
        // Check everything before writing anything.
        for (index, item) in dump.records.enumerated() {
            let kind = try kind(named: item.kind)
            guard kind.policy != .append else {
                throw ConcordError.invalidInput("records[\(index)]: kind \"\(kind.name)\" is a log; put its entries under \"logs\"")
            }
            _ = try Transaction.recordID(item.id)
        }
        for (index, item) in dump.logs.enumerated() {
            guard try kind(named: item.kind).policy == .append else {
                throw ConcordError.invalidInput("logs[\(index)]: kind \"\(item.kind)\" is not a log; put it under \"records\"")
            }
            _ = try Transaction.recordID(item.id)
        }
        return try write(as: identity, action: .imported) { transaction in
            for kind in Set(dump.records.map(\.kind)) {
                try transaction.prefetch(kind: try self.kind(named: kind))
            }
            try transaction.put(dump.records.map { ($0.kind, $0.id, $0.data) })
            for item in dump.logs { try transaction.append(item.kind, data: item.data, id: item.id) }
        }
    }

    /// All live records and all log entries as a dump.
    public func exportDump() throws -> Dump {
        var records = [Dump.RecordItem]()
        var logs = [Dump.LogItem]()
        for kind in kinds.kinds {
            if kind.policy == .append {
                logs += try logEntries(kind.name).map {
                    Dump.LogItem(kind: kind.name, id: $0.id.rawValue, data: $0.data, at: $0.at.description, by: $0.by, device: $0.device)
                }
            } else {
                for path in recordFiles(of: kind) {
                    if let record = try readRecord(path), let data = record.data {
                        records.append(Dump.RecordItem(kind: kind.name, id: record.id.rawValue, data: data))
                    }
                }
            }
        }
        return Dump(records: records, logs: logs)
    }
}
