/// Strict field access for decoding record envelopes and log entries.
struct RecordFields {
    let fields: [String: JSONValue]
    /// Prefix for `what` in errors, e.g. `log line 3: ` (empty for record files).
    let context: String

    /// Throws if any field is not in `allowed`, naming the first such field in byte order.
    func requireOnly(_ allowed: Set<String>, shape: String) throws(ModelError) {
        guard !fields.keys.allSatisfy(allowed.contains) else { return }
        let unknown = fields.keys.filter { !allowed.contains($0) }.sorted(by: utf8Precedes)
        if let first = unknown.first {
            let list = allowed.sorted(by: utf8Precedes).joined(separator: ", ")
            throw .malformedRecord(what: "\(context)field \(quoted(first))", why: "is not allowed in \(shape) (allowed: \(list))")
        }
    }

    func value(_ name: String) throws(ModelError) -> JSONValue {
        guard let value = fields[name] else { throw .malformedRecord(what: "\(context)field \(quoted(name))", why: "is missing") }
        return value
    }

    func string(_ name: String) throws(ModelError) -> String {
        guard let s = try value(name).stringValue else { throw wrongType(name, "a string") }
        return s
    }

    func object(_ name: String) throws(ModelError) -> [String: JSONValue] {
        guard let o = try value(name).objectValue else { throw wrongType(name, "an object") }
        return o
    }

    func id(_ name: String) throws(ModelError) -> RecordID {
        let raw = try string(name)
        do {
            return try RecordID(raw)
        } catch {
            throw .malformedRecord(what: "\(context)field \(quoted(name))", why: "is not a valid record id (\(quoted(raw)))")
        }
    }

    func kindName(_ name: String) throws(ModelError) -> String {
        let raw = try string(name)
        guard RecordID.isValid(raw) else {
            throw .malformedRecord(what: "\(context)field \(quoted(name))", why: "is not a valid kind name (\(quoted(raw)))")
        }
        return raw
    }

    func stamp(_ name: String) throws(ModelError) -> HLC {
        let raw = try string(name)
        guard let hlc = HLC(parsing: raw) else {
            throw .malformedRecord(
                what: "\(context)field \(quoted(name))",
                why: "is not an HLC timestamp like 2026-01-01T10:00:00.001Z-0000 (\(quoted(raw)))")
        }
        return hlc
    }

    func wrongType(_ name: String, _ expected: String) -> ModelError {
        .malformedRecord(what: "\(context)field \(quoted(name))", why: "must be \(expected)")
    }

    /// Parses `bytes` as a JSON object, enforcing the size limit.
    static func parseObject(_ bytes: some Collection<UInt8>, what: String) throws(ModelError) -> [String: JSONValue] {
        let size = bytes.count
        guard size <= maxRecordBytes else { throw .recordTooLarge(size: size) }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw .invalidJSON(error)
        }
        guard case .object(let fields) = value else { throw .notAnObject(what: what) }
        return fields
    }
}
