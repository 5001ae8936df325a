import ConcordTestSupport
import Foundation
import XCTest

/// A CLI test class whose every test starts with alice's device and a profile of hers, under the fixed clock.
class AliceProfileTestCase: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    private(set) var alice: TestDevice!
    private(set) var profile: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        alice = try makeDevice("alice")
        profile = try makeProfile(owner: alice)
    }
}

/// What the CLI tests add to `ConcordTestCase`: profiles, refusals that change nothing, JSON output.
extension ConcordTestCase {
    /// Creates a profile owned by `owner` in a new directory of the sandbox, and adds each of
    /// `members` (device, role) with `addMember`.
    func makeProfile(_ directoryName: String = "profile", owner: TestDevice, template: String = "aac",
                     members: [(TestDevice, String)] = [], file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let url = sandbox.appendingPathComponent(directoryName)
        try concordOK(["init", url.path, "--name", "Test \(directoryName)", "--template", template],
                      as: owner, file: file, line: line)
        for (person, role) in members {
            try addMember(person, role: role, by: owner, in: url, file: file, line: line)
        }
        return url
    }

    /// Adds `person` to `profile` as a member with `role`: their public key as `concord identity show
    /// --public-key` prints it on their device, then `concord members add` by `admin`, with the key's device.
    func addMember(_ person: TestDevice, role: String, by admin: TestDevice, in profile: URL,
                   file: StaticString = #filePath, line: UInt = #line) throws {
        let key = try concordOKResult(["identity", "show", "--public-key"], as: person, file: file, line: line).trimmedStdout
        try concordOK(["members", "add", person.member, "--role", role, "--key", key, "--device", person.device], as: admin, in: profile,
                      file: file, line: line)
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
    func assertRefusedWithoutChange(_ arguments: [String], as person: TestDevice?, profile: URL, status: Int32 = 1,
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
