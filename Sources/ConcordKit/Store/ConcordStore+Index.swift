import ConcordModel

extension ConcordStore {
    /// Keeps the indexed fields of `kinds` (`Kind.indexed`) ready for queries in this device's
    /// record index: one SQLite expression index per field, created when missing. Indexes are
    /// this device's derived data, never part of the profile: any member's app may add them.
    public func index(_ kinds: [Kind]) throws {
        try engine.run { profile in
            for kind in kinds where !kind.indexed.isEmpty {
                try profile.index.addIndexes(kind: kind.name, fields: kind.indexed)
            }
        }
    }
}
