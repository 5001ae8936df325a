import ConcordModel
import Foundation

/// `$CONCORD_HOME/profiles.json`: the profiles this identity has on this device, and those whose
/// copy was removed because the member's access was (kept, marked `removed`, so `concord profiles`
/// can say so).
package struct ProfileRegistry {
    /// One profile of the registry.
    public struct Entry: Sendable, Equatable {
        /// Its directory.
        public let path: String
        /// Its id.
        public let id: String
        /// Its name.
        public let name: String
        /// Why this device's copy was removed (`access removed by alice at …`); nil while it is here.
        public var removed: String?
    }

    let file: URL

    /// The registry of the identity whose home is `home`.
    public init(home: URL) {
        file = home.appendingPathComponent("profiles.json")
    }

    /// The registered profiles; none when the file is missing or unreadable.
    public func entries() -> [Entry] {
        guard let data = FileManager.default.contents(atPath: file.path), let value = try? JSONValue.parse(Array(data)) else { return [] }
        return (value["profiles"]?.arrayValue ?? []).compactMap { item in
            guard let path = item["path"]?.stringValue, let id = item["id"]?.stringValue, let name = item["name"]?.stringValue else { return nil }
            return Entry(path: path, id: id, name: name, removed: item["removed"]?.stringValue)
        }
    }

    func register(_ profile: Profile) throws {
        var list = entries().filter { $0.path != profile.root.path }
        list.append(Entry(path: profile.root.path, id: profile.info.id, name: profile.info.name, removed: nil))
        try save(list)
    }

    /// Forgets the profile at `path` (its copy is gone from this device).
    func unregister(path: String) throws {
        let list = entries()
        guard list.contains(where: { $0.path == path }) else { return }
        try save(list.filter { $0.path != path })
    }

    /// Keeps the profile at `path` listed, as removed for `reason`.
    func markRemoved(path: String, reason: String) throws {
        try save(entries().map { entry in
            guard entry.path == path else { return entry }
            var removed = entry
            removed.removed = reason
            return removed
        })
    }

    private func save(_ list: [Entry]) throws {
        let json = JSONValue.object(["profiles": .array(list.sorted { $0.path < $1.path }.map { entry in
            var fields: [String: JSONValue] = ["path": .string(entry.path), "id": .string(entry.id), "name": .string(entry.name)]
            if let removed = entry.removed { fields["removed"] = .string(removed) }
            return .object(fields)
        })])
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(json.canonicalBytes()).write(to: file, options: .atomic)
    }
}

/// One profile on this device as `concord profiles` shows it.
package struct ProfileSummary: Sendable {
    /// The profile's name.
    public let name: String
    /// Its directory.
    public let path: String
    /// Its id.
    public let id: String
    /// This identity's role there (nil when it is no member, or the copy is gone).
    public let role: Role?
    /// `origin`'s URL, if the profile has one.
    public let remote: String?
    /// When this device last synced with `origin` (ISO-8601 UTC).
    public let lastSync: String?
    /// `active`, `key not registered` (an active member, but this device's key is not one of theirs
    /// yet: writes are refused), `pending` (invited, not accepted), `removed` (access removed; the
    /// copy deleted), `not a member`, or `missing` (the directory is gone: moved or deleted by hand).
    public let access: String
    /// What `access` is about, when there is more to say.
    public let note: String?
}

extension ProfileRegistry {
    /// Every registered profile, as `identity` sees it on this device, sorted by name.
    public func summaries(for identity: Identity, environment: ConcordEnvironment) -> [ProfileSummary] {
        let member = identity.member
        return entries().map { entry in
            if let removed = entry.removed {
                return ProfileSummary(name: entry.name, path: entry.path, id: entry.id, role: nil, remote: nil, lastSync: nil,
                                      access: "removed", note: removed)
            }
            guard let profile = try? Profile.open(at: URL(fileURLWithPath: entry.path), environment: environment) else {
                let gone = !FileManager.default.fileExists(atPath: entry.path)
                return ProfileSummary(name: entry.name, path: entry.path, id: entry.id, role: nil, remote: nil, lastSync: nil, access: "missing",
                                      note: "no profile at \(entry.path): " + (gone ? "directory removed" : "moved or deleted outside concord"))
            }
            let mine = (try? profile.members.list())?.first { $0.name == member }
            let access: String
            var note: String?
            switch mine?.status {
            case .active? where mine?.keys.contains(where: { $0.publicKey == identity.key.publicKey }) == false:
                access = "key not registered"
                note = "this device's key (\(identity.key.publicKey.fingerprint)) is not one of \(member)'s keys: writes are refused until an Admin adds it"
            case .active?: access = "active"
            case .invited?: access = "pending"
            case .revoked?: access = "removed"
            case nil: access = "not a member"
            }
            let remote = (try? profile.sync.remotes())?.first { $0.name == "origin" }?.url
            return ProfileSummary(name: profile.info.name, path: entry.path, id: entry.id, role: mine?.role, remote: remote,
                                  lastSync: SyncState.load(profile.repository.gitDirectory, remote: "origin").lastSync,
                                  access: access, note: note)
        }.sorted { ($0.name, $0.path) < ($1.name, $1.path) }
    }
}
