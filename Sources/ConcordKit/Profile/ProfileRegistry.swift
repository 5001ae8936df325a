import ConcordModel
import Foundation

/// `$CONCORD_HOME/profiles.json`: the profiles this identity has on this device.
public struct ProfileRegistry {
    public struct Entry: Sendable, Equatable {
        public let path: String
        public let id: String
        public let name: String
    }

    let file: URL

    public init(home: URL) {
        file = home.appendingPathComponent("profiles.json")
    }

    public func entries() -> [Entry] {
        guard let data = FileManager.default.contents(atPath: file.path), let value = try? JSONValue.parse(Array(data)) else { return [] }
        return (value["profiles"]?.arrayValue ?? []).compactMap { item in
            guard let path = item["path"]?.stringValue, let id = item["id"]?.stringValue, let name = item["name"]?.stringValue else { return nil }
            return Entry(path: path, id: id, name: name)
        }
    }

    func register(_ profile: Profile) throws {
        var list = entries().filter { $0.path != profile.root.path }
        list.append(Entry(path: profile.root.path, id: profile.info.id, name: profile.info.name))
        try save(list)
    }

    /// Forgets the profile at `path` (its copy is gone from this device).
    func unregister(path: String) throws {
        let list = entries()
        guard list.contains(where: { $0.path == path }) else { return }
        try save(list.filter { $0.path != path })
    }

    private func save(_ list: [Entry]) throws {
        let json = JSONValue.object(["profiles": .array(list.sorted { $0.path < $1.path }.map {
            .object(["path": .string($0.path), "id": .string($0.id), "name": .string($0.name)])
        })])
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(json.canonicalBytes()).write(to: file, options: .atomic)
    }
}
