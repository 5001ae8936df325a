import ConcordModel

/// The record-level rules of typed records, shared by the write side (`Transaction+Typed`) and the
/// read side (`StoreReader+Typed`): a value's data, a data object decoded as a type, and a
/// declared kind checked against the profile's.
enum TypedCoding {
    /// The data of `record`: its encoding (`JSONValueEncoder`), an object, never with an `id`
    /// member (the record's id is its file name and envelope's, not a data field).
    static func data<T: ConcordRecord>(of record: T) throws -> [String: JSONValue] {
        var members = try object(of: record, reference: "\(T.kind.name)/\(record.id)")
        members["id"] = nil
        return members
    }

    /// The encoding of `value` as an object; `reference` names it in an error.
    static func object<T: Encodable>(of value: T, reference: String) throws -> [String: JSONValue] {
        let encoded: JSONValue
        do { encoded = try JSONValueEncoder().encode(value) } catch {
            throw ConcordError.invalidInput(.notEncodable, "\(reference) (\(T.self)) does not encode as JSON: \(describe(error))")
        }
        guard case .object(let members) = encoded else {
            throw ConcordError.invalidInput(.notEncodable, "\(reference) (\(T.self)) encodes as \(ValueDecoder.describe(encoded)), not as an object")
        }
        return members
    }

    /// `data` (of the record `id` in the file at `path`) decoded as `type`, with what it read;
    /// `recordDoesNotDecode` naming the file and the coding path otherwise. For a record (`id`
    /// given) the `id` member is always the record's id, the file's: a data member of that name is
    /// overridden, so no record's data can make its value name (and save over) another record.
    static func decode<T: Decodable>(_ type: T.Type, data: [String: JSONValue], id: String?, path: String) throws -> (value: T, shape: ReadShape) {
        var members = data
        if let id { members["id"] = .string(id) }
        do { return try JSONValueDecoder().decodeReading(type, from: .object(members)) } catch {
            throw ConcordError.recordDoesNotDecode(path: path, reason: describe(error))
        }
    }

    /// A one-line account of an encoding or decoding failure: where (`page`, `address.city`,
    /// `tags[2]`) and why.
    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "at \(path(context.codingPath + [key])): \(context.debugDescription)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
             DecodingError.dataCorrupted(let context):
            return "at \(path(context.codingPath)): \(context.debugDescription)"
        case EncodingError.invalidValue(_, let context):
            return "at \(path(context.codingPath)): \(context.debugDescription)"
        default:
            return error.localizedDescription
        }
    }

    /// A coding path as `a.b[2].c`; the top level as `the top level`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        guard !codingPath.isEmpty else { return "the top level" }
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key is AnyCodingKey {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }

    /// The profile's kind named as `declared`, if the declaration agrees with it: `unknownKind`
    /// for a kind the profile lacks, `kindDiffers` (what differs) for another policy, writers or
    /// directory.
    static func profileKind(_ declared: Kind, in kinds: KindsTable) throws -> RecordKind {
        guard let kind = kinds.kind(named: declared.name) else {
            throw ConcordError.unknownKind(declared.name, known: kinds.kinds.map(\.name))
        }
        let differences = declared.differences(from: kind)
        guard differences.isEmpty else { throw ConcordError.kindDiffers(kind: declared.name, differences: differences) }
        return kind
    }

    /// The profile's kind named as `declared`, for reading: only the name must be the profile's.
    static func readableKind(_ declared: Kind, in kinds: KindsTable) throws -> RecordKind {
        guard let kind = kinds.kind(named: declared.name) else {
            throw ConcordError.unknownKind(declared.name, known: kinds.kinds.map(\.name))
        }
        return kind
    }
}
