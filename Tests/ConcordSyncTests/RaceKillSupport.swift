import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Support for the race, kill and watch tests: a fleet of devices (each its own CONCORD_HOME and
/// clone of one profile) around one bare remote, reached by path or over the sshd fixture. Every
/// child runs through `ChildProcess` (posix_spawn + waitpid on its own pid), which is safe from many
/// threads at once and lets a test kill a child at any moment.
enum RaceKill {
    static let gitPath = "/usr/bin/git"

    /// A finished child: its exit status (128 + signal when a signal ended it) and everything it
    /// printed, stdout and stderr interleaved.
    struct Outcome: Sendable {
        let status: Int32
        let output: String
        let seconds: Double

        var trimmed: String { output.trimmingCharacters(in: .whitespacesAndNewlines) }
        var lines: [String] { output.split(separator: "\n").map(String.init) }
    }

    /// A child that exited non-zero (or hung) when it had to succeed.
    struct Failure: Error, CustomStringConvertible {
        let command: String
        let outcome: Outcome?
        var description: String {
            guard let outcome else { return "`\(command)` did not finish in time and was killed" }
            return "`\(command)` exited \(outcome.status): \(outcome.trimmed)"
        }
    }

    /// Runs `path` to completion with exactly `environment`; kills it and throws after `timeout` s.
    static func run(_ path: String, _ arguments: [String], environment: [String: String], scratch: URL,
                    timeout: TimeInterval = 120) throws -> Outcome {
        let output = scratch.appendingPathComponent("out-\(UUID().uuidString)")
        defer { unlink(output.path) }
        let started = Date()
        let child = try ChildProcess(path: path, arguments: arguments, environment: environment, output: output)
        var pause: useconds_t = 200
        while child.exitStatus() == nil {
            if Date().timeIntervalSince(started) > timeout {
                child.signal(SIGKILL)
                child.wait()
                throw Failure(command: ([path] + arguments).joined(separator: " "), outcome: nil)
            }
            usleep(pause)
            pause = min(pause * 2, 5_000)
        }
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return Outcome(status: child.exitStatus() ?? -1, output: text, seconds: Date().timeIntervalSince(started))
    }

    /// The `q`-quantile (0...1, nearest rank) of `values`; 0 when empty.
    static func quantile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    static func format(_ seconds: Double) -> String { String(format: "%.2f s", seconds) }
}

extension RaceKill {
    /// One device: a member key of "alice" in its own CONCORD_HOME, and its clone of the profile.
    struct Device: Sendable {
        let name: String
        let home: URL
        let profile: URL
        let publicKey: String
    }

    /// How the devices reach the bare repository.
    enum Transport {
        case path
        case ssh(SSHServer)

        var label: String {
            if case .ssh = self { return "ssh" }
            return "path"
        }
    }

    /// A bare remote and devices that all sync with it as `origin`. Only `let`s: safe to share
    /// between the threads of a race.
    final class Fleet: @unchecked Sendable {
        let concord: String
        let sandbox: URL
        let scratch: URL
        let bare: URL
        /// What `origin` is on every device: the bare repository's path, or its ssh URL.
        let url: String
        let label: String
        let devices: [Device]
        private let baseEnvironment: [String: String]

        /// Creates the bare remote (keeping a reflog of every update of its `main`), `count`
        /// identities of alice (d1…dN, all authorized on the server for ssh), the profile on d1 with
        /// every other device's key added, publishes it, and clones it on d2…dN.
        init(in testCase: ConcordTestCase, devices count: Int, transport: Transport,
             file: StaticString = #filePath, line: UInt = #line) throws {
            let binary = try ConcordBinary.required()
            concord = binary
            sandbox = testCase.sandbox
            scratch = try testCase.makeDirectory("scratch")
            baseEnvironment = testCase.environment()
            bare = sandbox.appendingPathComponent("remote.git")
            label = transport.label
            var fingerprint: String?
            switch transport {
            case .path:
                url = bare.path
            case .ssh(let server):
                url = server.url(for: bare)
                fingerprint = server.hostKeyFingerprint
            }
            var devices = [Device]()
            for index in 1...count {
                let name = "d\(index)"
                let home = sandbox.appendingPathComponent("home-\(name)")
                let environment = Self.environment(baseEnvironment, home: home)
                try Self.runOK(binary, ["identity", "new", "--name", "alice", "--device", name], environment: environment, scratch: scratch)
                let key = try Self.runOK(binary, ["identity", "show", "--public-key"], environment: environment, scratch: scratch).trimmed
                if case .ssh(let server) = transport { try server.authorize(publicKeyLine: key) }
                devices.append(Device(name: name, home: home, profile: sandbox.appendingPathComponent("device-\(name)"), publicKey: key))
            }
            self.devices = devices

            try concordOK(["init", "--bare", bare.path], as: nil)
            try gitOK(["-C", bare.path, "config", "core.logAllRefUpdates", "always"])
            let first = devices[0]
            try concordOK(["init", first.profile.path, "--name", "Race", "--template", "aac"], as: first)
            let info = try JSONSerialization.jsonObject(with: Data(contentsOf: first.profile.appendingPathComponent(".concord/profile.json")))
            let profileID = (info as? [String: Any])?["id"] as? String ?? ""
            for other in devices.dropFirst() {
                // alice's other devices: each signs its key's proof of possession.
                let proof = try concordOK(["identity", "prove", profileID], as: other).trimmed
                try concordOK(on: first, ["members", "add", "alice", "--role", "admin",
                                         "--key", other.publicKey, "--device", other.name, "--proof", proof])
            }
            try concordOK(on: first, ["remote", "add", "origin", url])
            if fingerprint != nil { try concordOK(on: first, ["remote", "trust", "origin"]) }
            let publish = try concord(on: first, ["sync"])
            if publish.status != 0 {
                // Reported, then retried: the push may have happened, and the rest of the test still has things to say.
                XCTFail("publishing the profile with `concord sync` failed: \(publish.trimmed)", file: file, line: line)
                try concordOK(on: first, ["sync"])
            }
            for other in devices.dropFirst() {
                try concordOK(["clone", url, other.profile.path] + (fingerprint.map { ["--trust-host", $0] } ?? []), as: other)
            }
            testCase.fsckAtEnd += [bare] + devices.map(\.profile)
            // git-receive-pack and libgit2 append to an existing reflog; make sure there is one.
            let log = bare.appendingPathComponent("logs/refs/heads/main")
            if !FileManager.default.fileExists(atPath: log.path) {
                try FileManager.default.createDirectory(at: log.deletingLastPathComponent(), withIntermediateDirectories: true)
                _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            }
        }

        private static func environment(_ base: [String: String], home: URL?) -> [String: String] {
            var environment = base
            if let home { environment["CONCORD_HOME"] = home.path }
            return environment
        }

        @discardableResult
        private static func runOK(_ path: String, _ arguments: [String], environment: [String: String], scratch: URL) throws -> Outcome {
            let outcome = try RaceKill.run(path, arguments, environment: environment, scratch: scratch)
            guard outcome.status == 0 else { throw Failure(command: ([path] + arguments).joined(separator: " "), outcome: outcome) }
            return outcome
        }

        /// The environment `device` runs concord with (its own CONCORD_HOME; real clock).
        func environment(for device: Device?) -> [String: String] {
            Self.environment(baseEnvironment, home: device?.home)
        }

        @discardableResult
        func concord(_ arguments: [String], as device: Device?, timeout: TimeInterval = 120) throws -> Outcome {
            try RaceKill.run(concord, arguments, environment: environment(for: device), scratch: scratch, timeout: timeout)
        }

        /// `concord arguments -C <device's profile>` (`-C` is an option of each subcommand).
        @discardableResult
        func concord(on device: Device, _ arguments: [String], timeout: TimeInterval = 120) throws -> Outcome {
            try concord(arguments + ["-C", device.profile.path], as: device, timeout: timeout)
        }

        @discardableResult
        func concordOK(_ arguments: [String], as device: Device?) throws -> Outcome {
            try Self.runOK(concord, arguments, environment: environment(for: device), scratch: scratch)
        }

        @discardableResult
        func concordOK(on device: Device, _ arguments: [String]) throws -> Outcome {
            try concordOK(arguments + ["-C", device.profile.path], as: device)
        }

        /// Starts `concord arguments -C <profile>` as `device` without waiting; output appended to `output`.
        func spawn(on device: Device, _ arguments: [String], output: URL, environment extra: [String: String] = [:]) throws -> ChildProcess {
            try ChildProcess(path: concord, arguments: arguments + ["-C", device.profile.path],
                             environment: environment(for: device).merging(extra) { $1 }, output: output)
        }

        @discardableResult
        func git(_ arguments: [String]) throws -> Outcome {
            try RaceKill.run(RaceKill.gitPath, arguments, environment: baseEnvironment, scratch: scratch)
        }

        @discardableResult
        func gitOK(_ arguments: [String]) throws -> String {
            try Self.runOK(RaceKill.gitPath, arguments, environment: baseEnvironment, scratch: scratch).trimmed
        }

        func head(_ device: Device) throws -> String { try gitOK(["-C", device.profile.path, "rev-parse", "HEAD"]) }

        func bareMain() throws -> String { try gitOK(["--git-dir", bare.path, "rev-parse", "refs/heads/main"]) }

        func isAncestor(_ old: String, of new: String, in repository: URL) throws -> Bool {
            try git(["-C", repository.path, "merge-base", "--is-ancestor", old, new]).status == 0
        }

        /// nil when `git fsck --full` finds nothing wrong in `repository`, else what it printed.
        func fsckProblems(_ repository: URL) throws -> String? {
            let outcome = try git(["-C", repository.path, "fsck", "--full", "--no-progress"])
            let bad = outcome.lines.filter { line in
                ["error", "fatal", "missing", "broken", "bad", "corrupt"].contains(where: line.lowercased().hasPrefix)
            }
            return outcome.status == 0 && bad.isEmpty ? nil : "exit \(outcome.status): \(outcome.trimmed)"
        }

        /// `git status --porcelain` of the device's working tree (empty when it matches its branch).
        func workingTreeChanges(_ device: Device) throws -> [String] {
            try gitOK(["-C", device.profile.path, "status", "--porcelain", "--untracked-files=all"])
                .split(separator: "\n").map(String.init)
        }

        /// The ids `concord ls vocabulary` lists on `device` (read from its working tree).
        func listedIDs(_ device: Device) throws -> [String] {
            try concordOK(on: device, ["ls", "vocabulary"]).lines.compactMap { line in
                line.hasPrefix("vocabulary/") ? String(line.dropFirst("vocabulary/".count)) : nil
            }
        }

        /// The vocabulary record ids in the tree of the device's branch.
        func committedIDs(_ device: Device) throws -> [String] {
            try gitOK(["-C", device.profile.path, "ls-tree", "-r", "--name-only", "HEAD", "vocabulary/"])
                .split(separator: "\n").compactMap { path in
                    let name = path.split(separator: "/").last.map(String.init) ?? ""
                    return name.hasSuffix(".json") ? String(name.dropLast(5)) : nil
                }
        }

        /// Files a process killed mid-write can leave: git `.lock` files in `gitDirectory` and
        /// Concord's `.concord-tmp` working-tree files under `root`, as paths relative to the sandbox.
        func leftovers(gitDirectory: URL, root: URL? = nil) -> [String] {
            var found = [String]()
            let sandboxPrefix = sandbox.path + "/"
            func scan(_ directory: URL, _ suffixes: [String], skipGit: Bool) {
                guard let walker = FileManager.default.enumerator(atPath: directory.path) else { return }
                while let relative = walker.nextObject() as? String {
                    if skipGit, relative == ".git" { walker.skipDescendants(); continue }
                    if suffixes.contains(where: relative.hasSuffix) {
                        found.append(directory.appendingPathComponent(relative).path.replacingOccurrences(of: sandboxPrefix, with: ""))
                    }
                }
            }
            scan(gitDirectory, [".lock"], skipGit: false)
            if let root { scan(root, [".concord-tmp"], skipGit: true) }
            return found.sorted()
        }

        /// Every update of the bare repository's `main` its reflog recorded, oldest first.
        func bareReflog() throws -> [(old: String, new: String)] {
            let text = try String(contentsOf: bare.appendingPathComponent("logs/refs/heads/main"), encoding: .utf8)
            return text.split(separator: "\n").compactMap { line in
                let words = line.split(separator: " ", maxSplits: 2)
                guard words.count >= 2 else { return nil }
                return (String(words[0]), String(words[1]))
            }
        }
    }
}

extension RaceKill {
    /// SplitMix64: a seeded generator, so a failing run's delays and choices can be replayed.
    /// The seed of a randomized test: `CONCORD_TEST_SEED` when set (to replay a run), else fixed.
    static func seed(default value: UInt64) -> UInt64 {
        ProcessInfo.processInfo.environment["CONCORD_TEST_SEED"].flatMap { UInt64($0) } ?? value
    }

    /// The JSON object a `--json` command printed, or nil when its output is not one.
    static func jsonObject(_ outcome: Outcome) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(outcome.output.utf8))) as? [String: Any]
    }
}
