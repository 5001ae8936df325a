import Foundation

/// The `concord` binary under test. Every call gets its own `CONCORD_HOME`.
struct ConcordCLI {
    let path: String
    let runner: CommandRunner

    /// Creates a fresh `CONCORD_HOME` at `home` holding identity `member`/`device` (default bench/bench).
    func makeHome(_ home: URL, member: String = "bench", device: String = "bench") throws {
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        try run(["identity", "new", "--name", member, "--device", device], home: home, what: "concord identity new")
    }

    /// Runs `concord arguments...` with `CONCORD_HOME=home` (and `CONCORD_CLOCK=clock` when given,
    /// else the real clock); throws unless it exits 0.
    @discardableResult
    func run(_ arguments: [String], home: URL, clock: String? = nil, what: String) throws -> CommandResult {
        try runner.run(path, arguments, environment: environment(home: home, clock: clock), what: what)
    }

    /// The environment concord runs with: this process's, `CONCORD_HOME=home`, the real clock unless `clock`.
    func environment(home: URL, clock: String? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["CONCORD_HOME"] = home.path
        environment["CONCORD_CLOCK"] = clock
        return environment
    }

    /// `concord arguments... --json` with `CONCORD_HOME=home`, its standard output parsed as one JSON object.
    func runJSON(_ arguments: [String], home: URL, what: String) throws -> (result: CommandResult, object: [String: Any]) {
        let result = try run(arguments + ["--json"], home: home, what: what)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(result.output.utf8))) as? [String: Any] else {
            throw BenchError("\(what) --json did not print one JSON object: \(result.output.prefix(500))")
        }
        return (result, object)
    }

    /// This identity's public key line (`ssh-ed25519 AAAA… member@device`).
    func publicKey(home: URL) throws -> String {
        try run(["identity", "show", "--public-key"], home: home, what: "concord identity show --public-key")
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `concord --version`, for the report.
    func version(home: URL) -> String {
        (try? run(["--version"], home: home, what: "concord --version").output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? "?"
    }
}

/// The real git command line, isolated from the user's and the system's configuration so the
/// numbers do not depend on whoever runs the bench; commits are unsigned. Automatic gc is off:
/// after `git add` of 10,000 files, `git commit` would start a detached `git gc --auto` that
/// packs and deletes the 10,000 loose objects while the next timed run (of either tool) creates
/// files, and this machine's ext4 creates files several times slower right after mass deletions.
struct GitCLI {
    let path: String
    let runner: CommandRunner

    static let identity = ["GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@bench",
                           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@bench"]
    static let settings = ["-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", "-c", "gc.auto=0",
                           "-c", "maintenance.auto=false"]

    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment.merge(Self.identity) { _, new in new }
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_CONFIG_GLOBAL"] = "/dev/null"
        return environment
    }

    /// Runs `git -C repository arguments...`; throws unless it exits 0.
    @discardableResult
    func run(_ arguments: [String], in repository: URL?, input: String? = nil, what: String) throws -> CommandResult {
        let location = repository.map { ["-C", $0.path] } ?? []
        return try runner.run(path, location + Self.settings + arguments, environment: environment, input: input, what: what)
    }

    func commitCount(_ repository: URL) throws -> Int {
        let text = try run(["rev-list", "--count", "HEAD"], in: repository, what: "git rev-list --count HEAD").output
        guard let count = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("git rev-list --count HEAD in \(repository.path) printed \(text)")
        }
        return count
    }

    func resolve(_ revision: String, in repository: URL) throws -> String {
        try run(["rev-parse", "--verify", revision], in: repository, what: "git rev-parse \(revision)")
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func objectSize(_ revision: String, in repository: URL) throws -> Int {
        let text = try run(["cat-file", "-s", revision], in: repository, what: "git cat-file -s \(revision)").output
        guard let size = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError("git cat-file -s \(revision) printed \(text)")
        }
        return size
    }

    /// `git status --porcelain` output; empty when the working tree and index match HEAD.
    func status(_ repository: URL) throws -> String {
        try run(["status", "--porcelain"], in: repository, what: "git status").output
    }

    func version() -> String {
        (try? run(["--version"], in: nil, what: "git --version").output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? "?"
    }

    /// Checks that `operation` added exactly one commit to `repository`.
    func expectOneMoreCommit(_ repository: URL, than before: Int, after operation: String) throws {
        let after = try commitCount(repository)
        guard after == before + 1 else {
            throw BenchError("\(operation) should add exactly 1 commit to \(repository.path), but the count went from \(before) to \(after)")
        }
    }
}
