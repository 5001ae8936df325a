extension JSONValue: Encodable {
    /// Encodes the value as itself, so a typed value (a record, a command's output) may hold free JSON:
    /// ConcordKit's `JSONValueEncoder` keeps it exactly, a number's lexeme included; another encoder
    /// gets a number as an integer where it is one and a `Double` otherwise.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let lexeme):
            if let integer = Int(lexeme) { try container.encode(integer) } else { try container.encode(Double(lexeme) ?? .nan) }
        case .string(let value): try container.encode(value)
        case .array(let values): try container.encode(values)
        case .object(let members): try container.encode(members)
        }
    }
}
