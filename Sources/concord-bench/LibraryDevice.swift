import ConcordEngine
import ConcordKit
import Foundation

/// Members' devices writing one profile through the library in this process, each with its own home
/// and its own clone of one bare remote, `origin`: the histories of B14–B16 (many commits, merges and
/// membership decisions) are written so, as apps write them, without a process per commit.
struct LibraryDevice {
    let home: URL
    let directory: URL
    let identity: Identity
    let profile: Profile

    /// The first of `members` creates an `aac` profile in `root` with the bare remote `root/origin.git`,
    /// adds the others with their roles (each with a device of their own), publishes; the others clone it.
    static func make(_ context: BenchContext, in root: URL, members: [(name: String, role: Role)]) throws -> [LibraryDevice] {
        let concord = context.concord
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let bare = root.appendingPathComponent("origin.git")
        func home(_ name: String) -> URL { root.appendingPathComponent("home-\(name)") }
        for member in members { try concord.makeHome(home(member.name), member: member.name, device: "d-\(member.name)") }
        let creator = members[0].name, first = root.appendingPathComponent(creator)
        try concord.run(["init", "--bare", bare.path], home: home(creator), what: "concord init --bare")
        try concord.run(["init", first.path, "--name", "bench", "--template", "aac"], home: home(creator), what: "concord init")
        try concord.run(["remote", "add", "origin", bare.path, "-C", first.path], home: home(creator), what: "concord remote add")
        let owner = try open(home: home(creator), directory: first)
        for member in members.dropFirst() {
            try owner.profile.members.add(member.name, role: member.role, device: "d-\(member.name)",
                                          key: try Identity.load(from: home(member.name)).key.publicKey, as: owner.identity)
        }
        _ = try owner.sync()
        var devices = [owner]
        for member in members.dropFirst() {
            let directory = root.appendingPathComponent(member.name)
            try concord.run(["clone", bare.path, directory.path], home: home(member.name), what: "concord clone (\(member.name))")
            devices.append(try open(home: home(member.name), directory: directory))
        }
        return devices
    }

    static func open(home: URL, directory: URL) throws -> LibraryDevice {
        LibraryDevice(home: home, directory: directory, identity: try Identity.load(from: home),
                      profile: try Profile.open(at: directory, environment: ConcordEnvironment(home: home)))
    }

    /// One commit putting vocabulary record `index` (revision `revision`).
    func put(_ index: Int, revision: Int = 1) throws {
        try profile.records.write(as: identity) { transaction in
            try transaction.put(VocabularyData.kind, VocabularyData.id(index), data: VocabularyData.data(index, revision: revision))
        }
    }

    /// One commit appending an entry to the log kind `logs` (with `id`, or a new one).
    func append(id: String? = nil, text: String) throws {
        try profile.records.write(as: identity) { transaction in
            try transaction.append("logs", data: ["text": .string(text)], id: id)
        }
    }

    @discardableResult
    func sync(_ remote: String = "origin") throws -> SyncReport {
        try profile.sync.run(remote: remote, as: identity)
    }
}
