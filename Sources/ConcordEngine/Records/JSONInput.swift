import ConcordModel

/// Reading JSON a person typed or a file they gave, with errors that say where.
package enum JSONInput {
    /// Parses `bytes` as a JSON object; `source` names where it came from in errors.
    public static func object(_ bytes: [UInt8], source: String) throws -> [String: JSONValue] {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
            throw ConcordError.invalidJSON(source: source, detail: error.description)
        }
        guard let object = value.objectValue else { throw ConcordError.notAnObject(source: source) }
        return object
    }
}
