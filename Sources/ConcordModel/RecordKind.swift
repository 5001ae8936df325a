/// One kind of record: where its files live, how they merge, and who may write them.
public struct RecordKind: Sendable, Hashable, Codable {
    /// The kind's name; follows the record id rules.
    public let name: String
    /// The directory holding the kind's files, relative to the repository root: one or more id-like
    /// segments separated by `/`, none starting with `.`.
    public let directory: String
    /// How concurrent changes merge; also decides the file extension.
    public let policy: MergePolicy
    /// The minimum role allowed to write records of this kind.
    public let writers: Role

    /// Validates and creates a kind; `directory` defaults to `name`.
    public init(name: String, directory: String? = nil, policy: MergePolicy, writers: Role) throws(ModelError) {
        guard RecordID.isValid(name) else { throw .invalidKindName(name) }
        let directory = directory ?? name
        guard Self.isValidDirectory(directory) else { throw .invalidDirectory(directory) }
        self.init(unchecked: name, directory: directory, policy: policy, writers: writers)
    }

    /// Creates a kind from values known to be valid (built-in templates).
    init(unchecked name: String, directory: String, policy: MergePolicy, writers: Role) {
        self.name = name
        self.directory = directory
        self.policy = policy
        self.writers = writers
    }

    /// Whether `directory` is a relative path of id-like segments, none starting with `.`.
    public static func isValidDirectory(_ directory: String) -> Bool {
        let segments = directory.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        return !segments.isEmpty && segments.allSatisfy { segment in
            (1...128).contains(segment.count) && segment.first != UInt8(ascii: ".") && segment.allSatisfy(isIDByte)
        }
    }

    /// The `.gitattributes` pattern matching this kind's files: `logs/*.jsonl` for a log kind,
    /// `vocabulary/*/*.json` for a record kind (records sit in bucket directories, see `RecordPaths`).
    public var filePattern: String { policy == .append ? "\(directory)/*.jsonl" : "\(directory)/*/*.json" }

    /// The path of record `id` of this kind (see `RecordPaths`).
    public func recordPath(_ id: RecordID) -> String { RecordPaths.file(directory: directory, id: id.rawValue) }

    enum CodingKeys: String, CodingKey {
        case name, directory, policy, writers
    }

    /// Decodes a kind of `kinds.json`, checking its name and directory.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let name = try container.decode(String.self, forKey: .name)
        let directory = try container.decodeIfPresent(String.self, forKey: .directory)
        let policy = try container.decode(MergePolicy.self, forKey: .policy)
        let writers = try container.decode(Role.self, forKey: .writers)
        do {
            try self.init(name: name, directory: directory, policy: policy, writers: writers)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.errorDescription ?? "invalid kind"))
        }
    }

    /// The kind as it appears in `.concord/kinds.json`.
    var jsonValue: JSONValue {
        .object([
            "name": .string(name), "directory": .string(directory),
            "policy": .string(policy.rawValue), "writers": .string(writers.rawValue),
        ])
    }
}
