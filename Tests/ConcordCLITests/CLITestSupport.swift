import Foundation
import XCTest
@_exported import ConcordTestSupport

/// One simulated person: their own CONCORD_HOME.
struct Person {
    let name: String
    let device: String
    let home: URL
}

/// The fixed clock most tests run under, so stamps and commit dates are predictable.
let fixedClock = "2026-01-01T10:00:00.001Z"

/// Base class of the CLI tests: temp dirs, people, and runners for `concord` and the real `git`.
class CLITestCase: XCTestCase {
    /// The root temp directory of the running test; it doubles as HOME for every child, so no
    /// ~/.gitconfig of the machine leaks in.
    private(set) var sandbox: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        sandbox = try makeSandbox(prefix: "concord-cli-tests", removedBy: addTeardownBlock)
        guard FileManager.default.isExecutableFile(atPath: gitPath) else {
            throw XCTSkip("git is not installed at \(gitPath)")
        }
    }

    /// A new empty directory inside the sandbox.
    func makeDirectory(_ name: String) throws -> URL {
        let url = sandbox.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The environment every child process gets: nothing from this process but PATH.
    func baseEnvironment() -> [String: String] {
        isolatedEnvironment(home: sandbox)
    }

    /// The environment `person` runs concord with; `clock` nil leaves CONCORD_CLOCK unset.
    func environment(for person: Person?, clock: String? = fixedClock) -> [String: String] {
        var environment = baseEnvironment()
        if let person { environment["CONCORD_HOME"] = person.home.path }
        if let clock { environment["CONCORD_CLOCK"] = clock }
        return environment
    }

    /// Runs `concord` as `person`, in `directory` (the sandbox when nil), with `input` on its standard input.
    @discardableResult
    func concord(_ arguments: [String], as person: Person?, in directory: URL? = nil, clock: String? = fixedClock, input: Data? = nil,
                 file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        try ProcessRunner.run(try ConcordBinary.required(), arguments,
                              environment: environment(for: person, clock: clock), in: directory ?? sandbox, input: input)
    }

    /// Runs `concord` and fails the test unless it exits 0.
    @discardableResult
    func concordOK(_ arguments: [String], as person: Person?, in directory: URL? = nil, clock: String? = fixedClock, input: Data? = nil,
                   file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        let result = try concord(arguments, as: person, in: directory, clock: clock, input: input, file: file, line: line)
        XCTAssertEqual(result.status, 0, "concord \(arguments.joined(separator: " ")) failed: \(result.summary)",
                       file: file, line: line)
        return result
    }

    /// Runs the real git in `directory`.
    @discardableResult
    func git(_ arguments: [String], in directory: URL) throws -> RunResult {
        try ProcessRunner.run(gitPath, arguments, environment: baseEnvironment(), in: directory)
    }

    /// Every repository `repositories` names (profiles, their clones, remotes) must pass `git fsck --full`
    /// when the test ends (ConcordSyncTests' `fsckAtEnd`, for this target): checked in a teardown block, so
    /// after the test and its own teardown blocks but before the sandbox goes (blocks run last registered
    /// first, and the sandbox's block was registered in setUp).
    func fsckAtEnd(_ repositories: URL..., file: StaticString = #filePath, line: UInt = #line) {
        addTeardownBlock {
            for problem in repositories.compactMap(fsckProblem(in:)) { XCTFail(problem, file: file, line: line) }
        }
    }

    /// Runs git and returns its trimmed standard output, failing the test unless it exits 0.
    @discardableResult
    func gitOK(_ arguments: [String], in directory: URL, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try git(arguments, in: directory)
        XCTAssertEqual(result.status, 0, "git \(arguments.joined(separator: " ")) failed: \(result.summary)",
                       file: file, line: line)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `person`'s proof of possession of their key for the profile in `profile` and `member` (their
    /// own member name when nil), as `concord identity prove` prints it.
    func keyProof(of person: Person, for profile: URL, member: String? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let info = try JSONSerialization.jsonObject(with: Data(contentsOf: profile.appendingPathComponent(".concord/profile.json"))) as? [String: Any]
        let id = try XCTUnwrap(info?["id"] as? String, file: file, line: line)
        return try concordOK(["identity", "prove", id] + (member.map { ["--member", $0] } ?? []), as: person, file: file, line: line)
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Creates a person with an identity (`concord identity new`).
    func makePerson(_ name: String, device: String = "laptop", file: StaticString = #filePath, line: UInt = #line) throws -> Person {
        let person = Person(name: name, device: device, home: sandbox.appendingPathComponent("home-\(name)-\(device)"))
        try concordOK(["identity", "new", "--name", name, "--device", device], as: person, file: file, line: line)
        return person
    }

    /// Creates a profile owned by `owner` in a new directory of the sandbox.
    func makeProfile(_ directoryName: String = "profile", owner: Person, template: String = "aac",
                     file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let url = sandbox.appendingPathComponent(directoryName)
        try concordOK(["init", url.path, "--name", "Test \(directoryName)", "--template", template],
                      as: owner, file: file, line: line)
        return url
    }

    /// What must not change when a command is refused: the branch tip and the working tree state.
    struct Snapshot: Equatable {
        let head: String
        let status: String
        let files: [String: Data]
    }

    func snapshot(_ profile: URL) throws -> Snapshot {
        let head = try git(["rev-parse", "HEAD"], in: profile).stdout
        let status = try git(["status", "--porcelain", "--untracked-files=all", "--ignored"], in: profile).stdout
        return Snapshot(head: head, status: status, files: try workTreeFiles(of: profile))
    }

    /// Asserts `result` is a refusal: exit `status`, exactly one stderr line starting
    /// `concord: error: ` that contains every string of `mentions`, nothing on stdout.
    func assertRefusal(_ result: RunResult, status: Int32 = 1, mentions: [String],
                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, status, "wrong exit status: \(result.summary)", file: file, line: line)
        XCTAssertEqual(result.stderrLines.count, 1, "want exactly one line on stderr: \(result.summary)", file: file, line: line)
        XCTAssertTrue(result.stderr.hasSuffix("\n"), "stderr line must end with a newline", file: file, line: line)
        XCTAssertTrue(result.stderr.hasPrefix("concord: error: "), "stderr must start with 'concord: error: ': \(result.stderr)",
                      file: file, line: line)
        XCTAssertEqual(result.stdout, "", "a refused command prints nothing on stdout", file: file, line: line)
        for mention in mentions {
            XCTAssertTrue(result.stderr.contains(mention), "stderr should mention \(mention): \(result.stderr)", file: file, line: line)
        }
    }

    /// Runs `concord arguments` expecting it to be refused, and checks nothing in `profile` changed.
    func assertRefusedWithoutChange(_ arguments: [String], as person: Person?, profile: URL, status: Int32 = 1,
                                    mentions: [String], in directory: URL? = nil,
                                    file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try snapshot(profile)
        let result = try concord(arguments, as: person, in: directory ?? profile, file: file, line: line)
        assertRefusal(result, status: status, mentions: mentions, file: file, line: line)
        let after = try snapshot(profile)
        XCTAssertEqual(before.head, after.head, "HEAD moved after a refused command", file: file, line: line)
        XCTAssertEqual(before.status, after.status, "git status changed after a refused command", file: file, line: line)
        XCTAssertEqual(before.files.keys.sorted(), after.files.keys.sorted(), "files appeared or vanished", file: file, line: line)
        for (path, bytes) in before.files where after.files[path] != bytes {
            XCTFail("\(path) changed after a refused command", file: file, line: line)
        }
    }

    /// Parses JSON output, failing the test if it is not JSON.
    func parseJSON(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> Any? {
        do {
            return try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            XCTFail("not JSON (\(error)): \(text)", file: file, line: line)
            return nil
        }
    }

    /// Writes `text` to a new file in the sandbox and returns its URL.
    func writeFile(_ name: String, _ text: String) throws -> URL {
        let url = sandbox.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url
    }

    /// The commits of the profile's branch, newest first.
    func commits(_ profile: URL) throws -> [String] {
        try gitOK(["rev-list", "HEAD"], in: profile).split(separator: "\n").map(String.init)
    }
}
