import ConcordKeyIndex
import ConcordKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// B9: what a concord server costs sshd per connection: the key lookup sshd runs for every login
/// (AuthorizedKeysCommand mode), and the authorized_keys rewrite a membership change costs (file
/// mode), for 1,000 hosted profiles of 10 members each.
enum KeyLookupBenchmark {
    static let profiles = 1_000
    static let membersPerProfile = 10
    /// Lookups timed per program (concord serve --lookup, much slower, gets a quarter of them).
    static let lookups = 200
    static let rewrites = 20

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        guard let lookup = TwoDevices.lookupPath(beside: context.concord.path) else {
            throw BenchError("no concord-lookup beside \(context.concord.path): build it with "
                             + "'swift build -c release --static-swift-stdlib --scratch-path .build-release --product concord-lookup'")
        }
        let concord = context.concord
        let home = context.path("admin-home")
        try concord.makeHome(home, member: "alice", device: "a")
        let adminKey = try concord.publicKey(home: home)
        let user = ProcessInfo.processInfo.userName

        // The membership: per profile, 8 active members, 1 pending invitation (not expired), 1 revoked.
        context.progress("B9 preparing: \(Format.count(profiles * membersPerProfile)) keys in \(Format.count(profiles)) profiles")
        var keys = [SSHPublicKey]()
        var lines = [[String]]()
        for profile in 0..<profiles {
            lines.append((0..<membersPerProfile).map { member in
                let key = SigningKey.generate().publicKey
                keys.append(key)
                let (status, expiry): (Substring, Substring) = member == 9 ? ("revoked", "-") : member == 8 ? ("invited", "2999-01-01T00:00:00.000Z") : ("active", "-")
                return KeyIndexLine(fingerprint: Substring(key.fingerprint), profile: Substring(profileName(profile)), status: status,
                                    expiry: expiry, base64: Substring(key.base64)).text
            })
        }

        // Lookup mode: `concord server init` writes the header; the lines are written below it.
        let root = context.path("server")
        try concord.run(["server", "init", "--root", root.path, "--admin-key", adminKey, "--user", user], home: home, what: "concord server init")
        let index = try writeLines(lines.joined(), below: root)

        context.progress("B9 timing \(lookups) runs each of concord-lookup, grep -F and /bin/true, \(lookups / 4) of concord serve --lookup")
        let authorizedKeys = context.path("authorized_keys")
        try Data(keys.map { KeyIndexFormat.authorizedKeysLine(executable: concord.path, root: root.path, fingerprint: Substring($0.fingerprint),
                                                             base64: Substring($0.base64)) + "\n" }.joined().utf8).write(to: authorizedKeys)
        guard let grepPath = executableInPath("grep") else { throw BenchError("grep is not in PATH") }
        var fast = Samples(), whole = Samples(), grep = Samples(), spawnOnly = Samples()
        for round in 0..<lookups {
            let key = keys[(round * 7_919) % keys.count]
            fast.append(try spawn(lookup, [root.path, user, key.base64], expecting: "--key \(key.fingerprint)\","))
            grep.append(try spawn(grepPath, ["-F", "-m", "1", "--", key.base64, authorizedKeys.path], expecting: key.base64))
            spawnOnly.append(try spawn("/bin/true", [], expecting: ""))
            if round % 4 == 0 {
                whole.append(try spawn(concord.path, ["serve", "--root", root.path, "--lookup", user, key.base64],
                                       expecting: "--key \(key.fingerprint)\","))
            }
        }

        // File mode: the post-receive of a push that changed one profile's members rewrites the
        // index and concord's block of the authorized_keys file. One real profile (p0000, with 10
        // members) lets `concord serve --post-receive` run as git runs it; the other 999 are lines.
        context.progress("B9 file mode: \(rewrites) post-receive rewrites of a \(Format.count(keys.count))-key authorized_keys block")
        let fileRoot = context.path("server-file"), file = context.path("server-file-authorized_keys")
        try concord.run(["server", "init", "--root", fileRoot.path, "--admin-key", adminKey, "--user", user, "--authorized-keys", file.path],
                        home: home, what: "concord server init --authorized-keys")
        let profile = context.path("p0000")
        try concord.run(["init", profile.path, "--name", profileName(0), "--template", "aac"], home: home, what: "concord init")
        for member in 1..<membersPerProfile {
            try concord.run(["members", "add", "m\(member)", "--role", "editor", "--key", SigningKey.generate().publicKey.line(comment: nil),
                             "--device", "d", "-C", profile.path], home: home, what: "concord members add")
        }
        let repository = fileRoot.appendingPathComponent("repositories/\(profileName(0)).git")
        try context.git.run(["clone", "-q", "--bare", profile.path, repository.path], in: nil, what: "git clone --bare")
        let update = try "\(context.git.resolve("HEAD~1", in: profile)) \(context.git.resolve("HEAD", in: profile)) refs/heads/main\n"
        let updateFile = context.path("post-receive-input")
        try Data(update.utf8).write(to: updateFile)
        _ = try writeLines(lines.dropFirst().joined(), below: fileRoot)
        var rewrite = Samples()
        var environment = concord.environment(home: home)
        environment["GIT_DIR"] = repository.path
        for _ in 0..<rewrites {
            rewrite.append(try concord.runner.run(concord.path, ["serve", "--root", fileRoot.path, "--post-receive"], environment: environment,
                                                  input: updateFile.path, what: "concord serve --post-receive").seconds)
        }
        let block = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("command=") }.count
        // Every key here is let in; p0000's admin is the server's admin key, listed once.
        guard block == keys.count else { throw BenchError("B9: the authorized_keys block has \(block) lines, expected \(keys.count)") }

        let target = context.scenario.targetRatio
        func percentiles(_ samples: Samples) -> String {
            "p50 \(Format.duration(samples.median)), p95 \(Format.duration(samples.percentile(95)))"
        }
        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                ResultRow(label: "B9 key lookup per connection, 1,000 profiles × 10 members: `concord-lookup` (git column: `grep -F` of "
                              + "the key in an authorized_keys file of the same keys)",
                          concordCell: percentiles(fast), gitCell: percentiles(grep), ratio: fast.median / grep.median,
                          targetCell: "p95 ≤ \(Format.duration(target))", met: fast.percentile(95) <= target,
                          fastest: "concord-lookup \(Format.duration(fast.fastest)), grep -F \(Format.duration(grep.fastest))"),
                ResultRow(label: "B9 reference: the same lookups by `concord serve --lookup` (the whole concord binary)",
                          concordCell: percentiles(whole), gitCell: percentiles(grep), ratio: whole.median / grep.median,
                          targetCell: nil, met: nil, fastest: nil),
                ResultRow(label: "B9 file mode: the post-receive's rewrite of the index and a \(Format.count(block))-key authorized_keys "
                              + "block (`concord serve --post-receive`; no git counterpart)",
                          concordCell: percentiles(rewrite), gitCell: "—", ratio: .nan, targetCell: "p95 ≤ 200 ms",
                          met: rewrite.percentile(95) <= 0.2, fastest: nil),
            ],
            notes: [
                "Membership: \(Format.count(profiles)) profiles × \(membersPerProfile) members, each with its own Ed25519 key: 8 "
                    + "active, 1 pending invitation (expiring in 2999), 1 revoked, all let in. The lookup needs no repositories: "
                    + "`concord server init` writes the index's header (user, executable, root, admin key) and the bench writes "
                    + "the \(Format.count(keys.count)) lines below it with ConcordKeyIndex's `KeyIndexLine`, as `KeyIndex` "
                    + "writes them (\(Format.bytes(index)) in all); no repository of those profiles exists.",
                "Lookup mode, timed per process from `posix_spawn` to exit (what sshd waits for on each connection; Foundation's "
                    + "`Process` would add milliseconds of its own): `concord-lookup ROOT USER KEY` for \(lookups) keys spread "
                    + "over the index (every 7,919th), each answer checked to name the key's fingerprint; "
                    + "`concord serve --root ROOT --lookup USER KEY` for every 4th of them. min / p50 / p95 / max: concord-lookup "
                    + "\(spread(fast)); concord serve --lookup \(spread(whole)).",
                "The git column is what the lookup replaces: sshd reading an authorized_keys file of the same \(Format.count(keys.count)) "
                    + "forced-command lines, stood in for by `grep -F -m 1 -- KEY FILE` as a process (sshd's own file reading "
                    + "happens inside sshd and cannot be timed apart): \(spread(grep)). Starting a process that does nothing "
                    + "(`/bin/true`): \(spread(spawnOnly)).",
                "File mode: `concord server init --authorized-keys FILE` on a second directory, the same \(Format.count(keys.count - membersPerProfile)) "
                    + "lines for p0001–p0999, and one real profile p0000 (alice, the admin, and 9 editors added with `concord members "
                    + "add`) in `repositories/p0000.git`. Timed: \(rewrites) runs of `concord serve --post-receive` as git runs it "
                    + "(`GIT_DIR` set, the update of main by the last `members add` on standard input): it reads p0000's members "
                    + "at main, rewrites the index under its lock, then concord's block of FILE (\(Format.count(block)) lines, "
                    + "written aside, fsynced, renamed), process start included. min / p50 / p95 / max: \(spread(rewrite)).",
            ])
    }

    static func profileName(_ index: Int) -> String { String(format: "p%04d", index) }

    static func spread(_ samples: Samples) -> String {
        [samples.fastest, samples.median, samples.percentile(95), samples.percentile(100)].map(Format.duration).joined(separator: " / ")
    }

    /// Writes `lines` below the header `concord server init` left in `<root>/keys.index` (aside, then
    /// renamed, as concord writes it); returns the file's size.
    static func writeLines<S: Sequence<String>>(_ lines: S, below root: URL) throws -> Int {
        let path = root.appendingPathComponent("keys.index")
        let header = try String(contentsOf: path, encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("#") }
        guard header.first?.hasPrefix(KeyIndexFormat.firstLine) == true else {
            throw BenchError("B9: \(path.path) does not start with '\(KeyIndexFormat.firstLine)'")
        }
        let text = Data((header.map { $0 + "\n" }.joined() + lines.map { $0 + "\n" }.joined()).utf8)
        try text.write(to: path, options: .atomic)
        return text.count
    }

    /// Runs `path arguments` with `posix_spawn`, its standard output in a pipe and its standard
    /// error discarded, and waits for it: the seconds from spawn to exit. Throws unless it exits 0
    /// and its output contains `expecting`.
    static func spawn(_ path: String, _ arguments: [String], expecting: String) throws -> Double {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw BenchError("pipe: \(String(cString: strerror(errno)))") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
        posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + environment).forEach { free($0) } }
        let clock = ContinuousClock()
        let start = clock.now
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environment)
        close(pipeEnds[1])
        defer { close(pipeEnds[0]) }
        guard spawned == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(spawned)))") }
        var output = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
            if count > 0 { output += buffer[..<count] } else if count == 0 || errno != EINTR { break }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let seconds = start.duration(to: clock.now).seconds
        let text = String(decoding: output, as: UTF8.self)
        guard status == 0, expecting.isEmpty || text.contains(expecting) else {
            throw BenchError("\(([path] + arguments).joined(separator: " ")) exited with wait status \(status), printing: \(text.prefix(300))")
        }
        return seconds
    }
}
