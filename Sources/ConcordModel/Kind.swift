/// A kind as an app declares it on its record type (`ConcordRecord.kind`): the profile's part
/// (name, directory, merge policy, who may write) and this device's part (the fields its local
/// index keeps ready for queries). Opening a store registers the profile's part where the profile
/// lacks the kind; the indexed fields are never written into the profile.
public struct Kind: Sendable, Hashable {
    /// The kind's name (the record id rules).
    public let name: String
    /// The directory of its files; nil: the name.
    public let directory: String?
    /// How concurrent changes merge.
    public let policy: MergePolicy
    /// The lowest role that may write records of this kind.
    public let writers: Role
    /// The top-level fields this device's index keeps ready for queries (derived data).
    public let indexed: [String]

    /// Declares a kind; validated when a store registers it (`recordKind()`).
    public init(_ name: String, directory: String? = nil, policy: MergePolicy, writers: Role, indexed: [String] = []) {
        (self.name, self.directory, self.policy, self.writers, self.indexed) = (name, directory, policy, writers, indexed)
    }

    /// The kind as the profile stores it in `.concord/kinds.json`; throws on an invalid name or directory.
    public func recordKind() throws(ModelError) -> RecordKind {
        try RecordKind(name: name, directory: directory, policy: policy, writers: writers)
    }

    /// What differs between this declaration and the profile's kind of the same name, one phrase
    /// per difference (`policy is delete-wins in the profile, lww here`); empty when they agree.
    public func differences(from kind: RecordKind) -> [String] {
        var differences: [String] = []
        if kind.directory != (directory ?? name) {
            differences.append("directory is \(kind.directory) in the profile, \(directory ?? name) here")
        }
        if kind.policy != policy {
            differences.append("policy is \(kind.policy.rawValue) in the profile, \(policy.rawValue) here")
        }
        if kind.writers != writers {
            differences.append("writers are \(kind.writers.rawValue) in the profile, \(writers.rawValue) here")
        }
        return differences
    }
}

extension MergePolicy {
    /// `lww` under the name an app reads best.
    public static let lastWriterWins = MergePolicy.lww
}
