import ConcordModel

/// A record type an app declares: a `Codable` struct whose values are the records of one kind.
///
/// ```swift
/// struct Symbol: ConcordRecord {
///     static let fields: FieldNames<Symbol> = [\.page: "page", \.position: "position", \.label: "label"]
///     static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor, indexed: fields.names)
///     var id: String; var label: String; var page: Int; var position: Int
/// }
/// try await store.write { try $0.save(Symbol(id: "puzzle", label: "puzzle", page: 3, position: 2)) }
/// let page3 = try await store.read { try Symbol.filter(\.page == 3).order(\.position).fetchAll($0) }
/// ```
///
/// A value is stored as the record `kind/id`: its `id` is the record's id (the file name and the
/// envelope's `id`, not a data field: the encoded `id` member is never written to `data`, and
/// when decoding the record's id is always given as `id`, over any data member of that name, so
/// a record's data cannot make its value save over another record), its other encoded members
/// are the record's `data`, written as canonical JSON exactly as `Transaction.put` writes the
/// same `[String: JSONValue]` (`JSONValueEncoder` says how each Swift value is written). Saving over a stored record keeps the members this type does not
/// know (a newer app version's fields), at every depth: see `UnknownFields`.
public protocol ConcordRecord: Codable, Sendable, Identifiable where ID == String {
    /// The kind the records are: its name, policy and writers must be the profile's (writes
    /// otherwise fail with `ConcordError.kindDiffers`).
    static var kind: Kind { get }
    /// The data field each queryable property is stored under, for the query builder
    /// (`filter(\.page == 3)`); a key path not named here fails a query with
    /// `ConcordError.fieldNotNamed`. Names are given, not reflected from key paths or `CodingKeys`.
    /// Default: none.
    static var fields: FieldNames<Self> { get }
}

extension ConcordRecord {
    /// No field is named: the type is not queried by key path.
    public static var fields: FieldNames<Self> { FieldNames() }
}

/// An entry type of a log kind (a kind whose policy is `.append`): appended with
/// `Transaction.append(_:)`, read with `StoreReader.logEntries(_:)`. Its encoded members are the
/// entry's `data`, written as `JSONValueEncoder` writes them.
public protocol ConcordLogEntry: Codable, Sendable {
    /// The log kind the entries are: its name, policy and writers must be the profile's.
    static var kind: Kind { get }
}

/// The data field names of a record type's properties, given as a dictionary literal of key paths
/// and names: `[\.page: "page", \.label: "label"]`. Only the top-level fields a query compares or
/// orders by need a name. The key paths are literals (`Sendable`), so a `static let` compiles under
/// strict concurrency.
public struct FieldNames<Root>: Sendable, ExpressibleByDictionaryLiteral {
    /// The named key paths, in the order given.
    private let entries: [(keyPath: any PartialKeyPath<Root> & Sendable, name: String)]

    /// Names for the given key paths; a key path given twice keeps its first name.
    public init(dictionaryLiteral elements: (any PartialKeyPath<Root> & Sendable, String)...) {
        entries = elements.map { (keyPath: $0.0, name: $0.1) }
    }

    /// The data field `keyPath` is stored under; nil if it has no name.
    public func name(of keyPath: PartialKeyPath<Root>) -> String? {
        entries.first { ($0.keyPath as PartialKeyPath<Root>) == keyPath }?.name
    }

    /// The names given, in order.
    public var names: [String] { entries.map(\.name) }
}
