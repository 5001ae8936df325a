/// The repository's record kinds, as stored in `.concord/kinds.json`, sorted by name.
///
/// Names and directories are unique. File format history:
/// - `formatVersion` 1: `{"formatVersion": 1, "kinds": [{"directory", "name", "policy", "writers"}, ...]}`.
public struct KindsTable: Sendable, Equatable {
    /// The newest `formatVersion` this code reads and the one it writes.
    public static let formatVersion = 1
    /// The path of the kinds file, relative to the repository root.
    public static let path = ".concord/kinds.json"
    /// A table with no kinds.
    public static let empty = KindsTable(unchecked: [])

    /// The kinds, sorted by name.
    public let kinds: [RecordKind]

    /// Creates a table; throws if two kinds share a name or a directory.
    public init(_ kinds: [RecordKind]) throws(ModelError) {
        var names = Set<String>()
        var directories = Set<String>()
        for kind in kinds {
            guard names.insert(kind.name).inserted else {
                throw .malformedKindsFile("kind \(quoted(kind.name)) is defined twice")
            }
            guard directories.insert(kind.directory).inserted else {
                throw .malformedKindsFile("directory \(quoted(kind.directory)) is used by two kinds")
            }
        }
        // A kind's files (and a record kind's bucket directories) live below its directory, so no
        // kind may sit inside another's.
        for inner in kinds {
            if let outer = kinds.first(where: { inner.directory.hasPrefix($0.directory + "/") }) {
                throw .malformedKindsFile("directory \(quoted(inner.directory)) of kind \(quoted(inner.name)) lies inside "
                                          + "\(quoted(outer.directory)) of kind \(quoted(outer.name))")
            }
        }
        self.init(unchecked: kinds)
    }

    init(unchecked kinds: [RecordKind]) {
        self.kinds = kinds.sorted { utf8Precedes($0.name, $1.name) }
    }

    /// A copy with `kind` added; throws if its name or directory is already taken.
    public func adding(_ kind: RecordKind) throws(ModelError) -> KindsTable {
        try KindsTable(kinds + [kind])
    }

    /// The kind called `name`.
    public func kind(named name: String) -> RecordKind? {
        kinds.first { $0.name == name }
    }

    /// The kind a file belongs to, with the path's file name: a log kind's day file sits directly
    /// in its directory (`"logs/2026-01-01.jsonl"` → (logs, `"2026-01-01.jsonl"`)), a record kind's
    /// file in a bucket directory below it (`"vocabulary/3f/puzzle.json"` → (vocabulary, `"puzzle.json"`)).
    public func kind(forPath path: String) -> (RecordKind, fileName: String)? {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
        let parent = String(path[..<slash])
        let fileName = String(path[path.index(after: slash)...])
        guard !fileName.isEmpty else { return nil }
        if let kind = kinds.first(where: { $0.directory == parent && $0.policy == .append }) {
            return (kind, fileName: fileName)
        }
        guard let bucketSlash = parent.utf8.lastIndex(of: UInt8(ascii: "/")),
              RecordPaths.isBucket(parent[parent.index(after: bucketSlash)...]) else { return nil }
        let directory = String(parent[..<bucketSlash])
        guard let kind = kinds.first(where: { $0.directory == directory && $0.policy != .append }) else { return nil }
        return (kind, fileName: fileName)
    }

    /// The canonical contents of `.concord/kinds.json`.
    public func canonicalBytes() -> [UInt8] {
        JSONValue.object([
            "formatVersion": .number(String(Self.formatVersion)),
            "kinds": .array(kinds.map(\.jsonValue)),
        ]).canonicalBytes()
    }

    /// Reads `.concord/kinds.json`; throws ``ModelError/malformedKindsFile(_:)`` naming what is wrong.
    public static func decode(_ bytes: some Collection<UInt8>) throws(ModelError) -> KindsTable {
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch {
            throw .malformedKindsFile("invalid JSON at \(error.description)")
        }
        guard case .object(let top) = root else { throw .malformedKindsFile("the top level must be an object") }
        for key in top.keys.sorted(by: utf8Precedes) where key != "formatVersion" && key != "kinds" {   // the first in byte order, the same every time
            throw .malformedKindsFile("unknown field \(quoted(key))")
        }
        guard let version = top["formatVersion"]?.intValue else {
            throw .malformedKindsFile("\"formatVersion\" must be an integer")
        }
        guard version <= formatVersion else {
            throw .malformedKindsFile("formatVersion \(version) is newer than this concord understands; upgrade concord")
        }
        guard version >= 1 else { throw .malformedKindsFile("unknown formatVersion \(version)") }
        guard let entries = top["kinds"]?.arrayValue else {
            throw .malformedKindsFile("\"kinds\" must be an array")
        }
        var kinds: [RecordKind] = []
        for (index, entry) in entries.enumerated() {
            kinds.append(try decodeKind(entry, index: index))
        }
        return try KindsTable(kinds)
    }

    static func decodeKind(_ entry: JSONValue, index: Int) throws(ModelError) -> RecordKind {
        let at = "kinds[\(index)]"
        guard case .object(let fields) = entry else { throw .malformedKindsFile("\(at) must be an object") }
        for key in fields.keys.sorted(by: utf8Precedes) where !["name", "directory", "policy", "writers"].contains(key) {
            throw .malformedKindsFile("\(at) has unknown field \(quoted(key))")
        }
        guard let name = fields["name"]?.stringValue else { throw .malformedKindsFile("\(at).name must be a string") }
        let directory = fields["directory"]
        guard directory == nil || directory?.stringValue != nil else {
            throw .malformedKindsFile("\(at).directory must be a string")
        }
        guard let policy = fields["policy"]?.stringValue.flatMap(MergePolicy.init(rawValue:)) else {
            throw .malformedKindsFile("\(at).policy must be one of lww, append, delete-wins")
        }
        guard let writers = fields["writers"]?.stringValue.flatMap(Role.init(parsing:)) else {
            throw .malformedKindsFile("\(at).writers must be one of viewer, user, editor, admin")
        }
        do {
            return try RecordKind(name: name, directory: directory?.stringValue, policy: policy, writers: writers)
        } catch {
            throw .malformedKindsFile("\(at): \(error.errorDescription ?? "invalid kind")")
        }
    }

    /// The contents of `.gitattributes`, routing every Concord file to the `concord` merge driver,
    /// `.gitattributes` itself included: the driver writes it anew from the merged kinds, so two
    /// kinds added at once do not leave it conflicted.
    public func gitattributes() -> String {
        var lines = ["# Generated by concord from .concord/kinds.json; do not edit."]
        lines += kinds.map { "\($0.filePattern) merge=concord" }
        lines += [".concord/kinds.json merge=concord", ".concord/members/*.json merge=concord", ".gitattributes merge=concord"]
        return lines.joined(separator: "\n") + "\n"
    }
}
