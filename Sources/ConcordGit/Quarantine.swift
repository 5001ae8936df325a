// This file touches the libgit2 C API.
internal import CLibgit2
import Foundation

/// Where objects fetched from a remote wait until the commits that need them have been checked
/// (git's receive-pack quarantine, for fetches): a temporary bare repository inside `.git/concord`
/// that sees the profile's own objects through `objects/info/alternates` and holds refs to the
/// profile's tips, so a fetch negotiates as if from the profile and a thin pack finds its bases.
/// Only `admit()` moves the fetched packs into the profile; a refused fetch leaves nothing behind
/// (the profile passes `git fsck --full`, with no dangling or malformed objects).
public final class Quarantine {
    /// The temporary repository: fetch into it, read and check through it.
    public let repository: Repository
    private let main: Repository
    private let directory: String
    private var admitted = false

    /// Makes a quarantine for `main`, whose current tips `tips` it lists as its own refs. It is
    /// made without the profile lock (a sync fetches without holding it), so each has a name of its
    /// own (`quarantine-<pid>-<random>`), and only quarantines left by a process that is gone (killed)
    /// are removed: another process's fetch under way keeps its own.
    public init(for main: Repository, tips: [ObjectID]) throws {
        let parent = main.gitDirectory + "concord/"
        for stale in (try? FileManager.default.contentsOfDirectory(atPath: parent)) ?? [] where Self.isLeftByAGoneProcess(stale) {
            try? FileManager.default.removeItem(atPath: parent + stale)
        }
        directory = parent + "quarantine-\(getpid())-\(UInt64.random(in: 0...UInt64.max))/"
        self.main = main
        do {
            let manager = FileManager.default
            try manager.createDirectory(atPath: directory + "objects/info", withIntermediateDirectories: true)
            try manager.createDirectory(atPath: directory + "objects/pack", withIntermediateDirectories: true)
            try manager.createDirectory(atPath: directory + "refs/heads", withIntermediateDirectories: true)
            try FileIO.write(Array("ref: refs/heads/main\n".utf8), to: directory + "HEAD", makingParents: false)
            try FileIO.write(Array((main.gitDirectory + "objects\n").utf8), to: directory + "objects/info/alternates", makingParents: false)
            for (index, tip) in tips.enumerated() {
                try FileIO.write(Array((tip.hex + "\n").utf8), to: directory + (index == 0 ? "refs/heads/main" : "refs/heads/tip-\(index)"),
                                 makingParents: false)
            }
            repository = try Repository.open(directory)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// True for a quarantine directory name whose process is gone (`quarantine-<pid>` as older
    /// versions named it, or `quarantine-<pid>-<random>`).
    static func isLeftByAGoneProcess(_ name: String) -> Bool {
        guard name.hasPrefix("quarantine-") else { return false }
        guard let pid = name.dropFirst("quarantine-".count).split(separator: "-").first.flatMap({ Int32($0) }), pid > 0 else { return true }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    deinit {
        if !admitted { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Moves the fetched packs into the profile (fsynced, each pack before its index, as git does, so no
    /// reader sees an index without its pack) and makes the profile see them. Then removes the
    /// quarantine. (What the fetch read and hashed travels on as a value, `FetchedObjects`.)
    public func admit() throws {
        let from = directory + "objects/pack/", to = main.gitDirectory + "objects/pack/"
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: from)) ?? []).filter { $0.hasPrefix("pack-") }
        if !names.isEmpty {
            try FileManager.default.createDirectory(atPath: to, withIntermediateDirectories: true)
            let order: (String) -> Int = { $0.hasSuffix(".idx") ? 1 : 0 }
            for name in names.sorted(by: { order($0) < order($1) }) where name.hasSuffix(".pack") || name.hasSuffix(".idx") {
                // Written without fsync (a refused fetch never needed it): made durable now.
                let descriptor = open(from + name, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0, fsync(descriptor) == 0 else {
                    if descriptor >= 0 { close(descriptor) }
                    throw GitError(function: "fsync", code: .other(-1), message: "cannot write \(from + name) to disk")
                }
                close(descriptor)
                guard rename(from + name, to + name) == 0 else {
                    throw GitError(function: "rename", code: .other(-1), message: "cannot move \(from + name) into \(to)")
                }
            }
            try FileIO.syncDirectory(to)
            var odb: OpaquePointer?
            try check("git_repository_odb", git_repository_odb(&odb, main.handle))
            defer { git_odb_free(odb) }
            try check("git_odb_refresh", git_odb_refresh(odb))
        }
        repository.releaseCaches()
        admitted = true
        try? FileManager.default.removeItem(atPath: directory)
    }
}
