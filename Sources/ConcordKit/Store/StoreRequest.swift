import ConcordModel

/// A value read from a store that `ConcordStore.observe` can watch: what it reads (`fetch`) and
/// which kinds' changes can change it (`observedKinds`), so that an observer is woken only by a
/// transaction or merge that touched one of them.
public protocol StoreRequest: Sendable {
    /// What the request reads.
    associatedtype Value: Sendable
    /// The kinds whose records the value depends on; nil: any change may change it.
    var observedKinds: Set<String>? { get }
    /// Reads the value.
    func fetch(_ reader: StoreReader) throws -> Value
}

/// A `StoreRequest` made of a closure, for values no typed request describes.
public struct ClosureRequest<Value: Sendable>: StoreRequest {
    /// The kinds given at creation (nil: any change wakes the request).
    public let observedKinds: Set<String>?
    private let body: @Sendable (StoreReader) throws -> Value

    /// A request that reads `body`, woken by changes to `kinds` (nil: any change).
    public init(kinds: Set<String>?, _ body: @escaping @Sendable (StoreReader) throws -> Value) {
        (observedKinds, self.body) = (kinds, body)
    }

    /// Runs the closure with `reader`.
    public func fetch(_ reader: StoreReader) throws -> Value { try body(reader) }
}
