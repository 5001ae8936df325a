import Foundation

/// Facts about the machine and tools a run used, for the report header.
struct MachineFacts {
    let processors: Int
    let kernel: String
    let gitVersion: String
    let concordVersion: String
    let date: String
    let loadAverage: String
    /// Launch-to-exit time of `/bin/true` through the same runner: the floor under every timed command.
    let spawnOverhead: Double
    /// The file system holding the temporary directories, e.g. "ext4 (/dev/vda on /), no journal".
    let temporaryFileSystem: String
    /// Time to create 2,000 small files in a new directory when the bench started: a gauge of how
    /// disturbed the file system was (the same probe runs again at the end).
    let fileCreationProbe: Double
    /// Whether that file system is ext4 without a journal, where file creation right after mass
    /// deletions is slow (see the report).
    let isUnjournaledExt4: Bool

    static func collect(concord: ConcordCLI, git: GitCLI, runner: CommandRunner, home: URL) throws -> MachineFacts {
        let environment = ProcessInfo.processInfo.environment
        let kernel = (try? runner.run("/bin/uname", ["-sr"], environment: environment, what: "uname -sr"))?
            .output.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        var spawn = Samples()
        for _ in 0..<10 {
            spawn.append(try runner.run("/bin/true", [], environment: environment, what: "/bin/true").seconds)
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        try concord.makeHome(home)
        let fileSystem = fileSystem(holding: home.path)
        let probe = try probeFileCreation(in: home.deletingLastPathComponent().appendingPathComponent("probe-start"))
        return MachineFacts(
            processors: ProcessInfo.processInfo.activeProcessorCount, kernel: kernel, gitVersion: git.version(),
            concordVersion: concord.version(home: home), date: formatter.string(from: Date()),
            loadAverage: currentLoadAverage(), spawnOverhead: spawn.median,
            temporaryFileSystem: fileSystem.description, fileCreationProbe: probe, isUnjournaledExt4: fileSystem.unjournaledExt4)
    }

    /// Seconds to create 2,000 files of 300 bytes in a new directory `directory` (left in place:
    /// deleting them would itself slow down later file creation).
    static func probeFileCreation(in directory: URL) throws -> Double {
        let bytes = Data(repeating: 0x78, count: 300)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try measure {
            for index in 0..<2_000 {
                try VocabularyData.writeFile(bytes, to: directory.appendingPathComponent("f\(index)").path)
            }
        }.seconds
    }

    /// The mount holding `path` (longest mount point prefix in /proc/mounts) and, for ext4, whether
    /// it has a journal (a journaled ext4 device shows up in /proc/fs/jbd2).
    static func fileSystem(holding path: String) -> (description: String, unjournaledExt4: Bool) {
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return ("?", false) }
        func holds(_ mountPoint: String) -> Bool {
            mountPoint == "/" || path == mountPoint || path.hasPrefix(mountPoint + "/")
        }
        var best: [String]?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 3, holds(fields[1]) else { continue }
            if let current = best, current[1].count > fields[1].count { continue }
            best = fields
        }
        guard let mount = best else { return ("?", false) }
        var description = "\(mount[2]) (\(mount[0]) on \(mount[1]))"
        var unjournaled = false
        if mount[2] == "ext4" {
            let device = (mount[0] as NSString).lastPathComponent
            let journals = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/fs/jbd2")) ?? []
            unjournaled = !journals.contains { $0.hasPrefix(device + "-") }
            description += unjournaled ? ", no journal" : ", journaled"
        }
        return (description, unjournaled)
    }

    /// The 1-, 5- and 15-minute load averages from /proc/loadavg.
    static func currentLoadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "?" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}
