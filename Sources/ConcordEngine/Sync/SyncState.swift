import ConcordModel
import Foundation

/// What this device remembers about syncing one remote: `.git/concord/sync-<remote>.json`.
struct SyncState {
    var lastSync: String?
    var lastRemoteHead: String?

    static func path(_ gitDirectory: String, remote: String) -> String { gitDirectory + "concord/sync-\(remote).json" }

    static func load(_ gitDirectory: String, remote: String) -> SyncState {
        guard let data = FileManager.default.contents(atPath: path(gitDirectory, remote: remote)),
              let value = try? JSONValue.parse(Array(data)) else { return SyncState() }
        return SyncState(lastSync: value["lastSync"]?.stringValue, lastRemoteHead: value["lastRemoteHead"]?.stringValue)
    }

    func save(_ gitDirectory: String, remote: String) throws {
        var fields = [String: JSONValue]()
        if let lastSync { fields["lastSync"] = .string(lastSync) }
        if let lastRemoteHead { fields["lastRemoteHead"] = .string(lastRemoteHead) }
        try Data(JSONValue.object(fields).canonicalBytes()).write(
            to: URL(fileURLWithPath: Self.path(gitDirectory, remote: remote)), options: .atomic)
    }
}
