import ConcordKit
import Foundation

/// The record types the typed-record tests declare, on the `aac` template's kinds (vocabulary:
/// lww, editor; logs: append, user).

/// The example type, with a few more field types for queries.
struct SymbolRecord: ConcordRecord, Equatable {
    static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor, indexed: ["page", "position"])
    static let fields: FieldNames<SymbolRecord> = [
        \.label: "label", \.page: "page", \.position: "position", \.weight: "weight", \.hidden: "hidden", \.note: "note",
    ]
    var id: String
    var label: String
    var page: Int
    var position: Int
    var weight: Double = 1.5
    var hidden = false
    var note: String? = nil
}

/// A type whose values hold every kind of value the encoder writes its own way.
struct SpecimenRecord: ConcordRecord, Equatable {
    static let kind = SymbolRecord.kind
    var id: String
    var big: Int64
    var huge: UInt64
    var small: Int8
    var fraction: Double
    var large: Double
    var negativeZero: Double
    var single: Float
    var when: Date
    var blob: Data
    var link: URL
    var amount: Decimal
    var missing: String?
    var nested: [String: [Int]]
    var flags: [Bool]
    var text: String
}

/// The same kind declared with another policy.
struct MisdeclaredRecord: ConcordRecord {
    static let kind = Kind("vocabulary", policy: .deleteWins, writers: .admin)
    var id: String
    var label: String
}

/// A kind the profile lacks.
struct StrangerRecord: ConcordRecord {
    static let kind = Kind("stickers", policy: .lastWriterWins, writers: .editor)
    var id: String
}

/// A record type that names no fields.
struct UnnamedRecord: ConcordRecord {
    static let kind = SymbolRecord.kind
    var id: String
    var page: Int
}

/// An entry of the `logs` kind.
struct UsageEntry: ConcordLogEntry, Equatable {
    static let kind = Kind("logs", policy: .append, writers: .user)
    var word: String
    var count: Int
}
