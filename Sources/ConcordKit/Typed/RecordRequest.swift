import ConcordModel

/// A typed query on the records of a `ConcordRecord` type, built from key paths and run through
/// `StoreReader.query`/`count` (the local index): `Symbol.filter(\.page == 3).order(\.position)`.
///
/// It is an `IndexQuery` (`indexQuery()`, whose semantics it has: conditions compare only values
/// of the same JSON type, a record missing a field does not match, ties in the order are broken by
/// id) and a `StoreRequest` (`store.observe(Symbol.filter(\.page == 3))`). A value, never failing
/// while it is built: a key path with no field name (`ConcordRecord.fields`) or a bad value fails
/// the query when it runs.
public struct RecordRequest<T: ConcordRecord>: StoreRequest {
    /// The records the request selects, in its order.
    public typealias Value = [T]

    private var conditions: [IndexQuery.Condition] = []
    private var ordering: [IndexQuery.Ordering] = []
    private var limit: Int?
    private var offset = 0
    /// The first problem met while building, thrown when the query runs.
    private var problem: ConcordError?
    private var undecodable = UndecodableRecords.fail

    /// Every record of `T.kind`, ordered by id.
    public init() {}

    /// The kinds whose changes can change the result: `T.kind`'s.
    public var observedKinds: Set<String>? { [T.kind.name] }

    // MARK: Building

    /// Adds a condition; all must hold.
    public func filter(_ predicate: RecordPredicate<T>) -> Self {
        var request = self
        switch predicate.condition {
        case .success(let condition): request.conditions.append(condition)
        case .failure(let error): request.problem = request.problem ?? error
        }
        return request
    }

    /// Adds an ordering key after those given before (the first is the primary order); ties left
    /// by all keys are broken by id.
    public func order<Field>(_ keyPath: KeyPath<T, Field>, descending: Bool = false) -> Self {
        var request = self
        switch T.fieldName(keyPath) {
        case .success(let field): request.ordering.append(IndexQuery.Ordering(field, descending: descending))
        case .failure(let error): request.problem = request.problem ?? error
        }
        return request
    }

    /// At most `limit` records, after skipping `offset` (in the query's order).
    public func limit(_ limit: Int, offset: Int = 0) -> Self {
        var request = self
        if limit < 0 || offset < 0 {
            request.problem = request.problem ?? .invalidInput(.badQuery, "a query's limit and offset must not be negative (\(limit), \(offset))")
        }
        (request.limit, request.offset) = (limit, offset)
        return request
    }

    /// What `fetchAll` and `fetchOne` do with a record that does not decode as `T` (`.fail` by
    /// default). Skipped records still take their place in a page: a page may hold fewer than
    /// `limit` values; `fetchCount` counts them.
    public func undecodable(_ policy: UndecodableRecords) -> Self {
        var request = self
        request.undecodable = policy
        return request
    }

    /// The untyped query this is; throws what building it met (`fieldNotNamed`, `invalidInput`).
    public func indexQuery() throws -> IndexQuery {
        if let problem { throw problem }
        return IndexQuery(kind: T.kind.name, conditions: conditions, ordering: ordering, limit: limit, offset: offset)
    }

    // MARK: Running

    /// The records selected, decoded, in order (`StoreReader.query`).
    public func fetchAll(_ reader: StoreReader) throws -> [T] {
        try fetchDecoded(reader, undecodable: undecodable).records
    }

    /// The first record selected, decoded; nil if none.
    public func fetchOne(_ reader: StoreReader) throws -> T? {
        var first = self
        first.limit = 1
        return try first.fetchAll(reader).first
    }

    /// How many records the query selects (its limit and offset apply; records are not decoded).
    public func fetchCount(_ reader: StoreReader) throws -> Int {
        try reader.count(indexQuery())
    }

    /// The records selected that decode as `T`, and those that do not (their files and reasons),
    /// whatever `undecodable` says.
    public func fetchDecoded(_ reader: StoreReader) throws -> DecodedRecords<T> {
        try fetchDecoded(reader, undecodable: .skip)
    }

    /// `fetchAll`, as a `StoreRequest`.
    public func fetch(_ reader: StoreReader) throws -> [T] { try fetchAll(reader) }

    private func fetchDecoded(_ reader: StoreReader, undecodable: UndecodableRecords) throws -> DecodedRecords<T> {
        let query = try indexQuery()
        let kind = try TypedCoding.readableKind(T.kind, in: reader.kinds)
        return try reader.decode(try reader.query(query), of: kind, as: T.self, undecodable: undecodable)
    }
}

extension ConcordRecord {
    /// Every record of this type's kind, ordered by id.
    public static func all() -> RecordRequest<Self> { RecordRequest() }

    /// The records for which `predicate` holds (`RecordRequest.filter`).
    public static func filter(_ predicate: RecordPredicate<Self>) -> RecordRequest<Self> { all().filter(predicate) }

    /// All records in the order of field `keyPath` (`RecordRequest.order`).
    public static func order<Field>(_ keyPath: KeyPath<Self, Field>, descending: Bool = false) -> RecordRequest<Self> {
        all().order(keyPath, descending: descending)
    }

    /// At most `limit` records after `offset`, ordered by id (`RecordRequest.limit`).
    public static func limit(_ limit: Int, offset: Int = 0) -> RecordRequest<Self> { all().limit(limit, offset: offset) }
}
