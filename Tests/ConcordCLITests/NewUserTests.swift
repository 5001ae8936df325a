import Foundation
import XCTest

/// The command line as a new user met it (issue 32): where `-C` goes, what `--help` says, advice
/// that names the right command, what goes to standard output, and who may read what concord wrote.
final class NewUserTests: CLITestCase {
    /// Publishes `profile` to a new bare repository in the sandbox (its `origin`).
    private func publish(_ profile: URL, as owner: Person, remote name: String = "remote.git") throws -> URL {
        let bare = sandbox.appendingPathComponent(name)
        try concordOK(["init", "--bare", bare.path], as: owner)
        try concordOK(["remote", "add", "origin", bare.path], as: owner, in: profile)
        try concordOK(["sync"], as: owner, in: profile)
        return bare
    }

    /// `-C DIR` works before the command as after it, in each of its spellings; `--help` says so.
    func testDirectoryOptionBeforeTheCommand() throws {
        let alice = try makePerson("alice")
        let profile = try makeProfile("sam", owner: alice)
        try concordOK(["put", "vocabulary/juice", "--json", #"{"label":"juice"}"#], as: alice, in: profile)
        let after = try concordOK(["ls", "-C", profile.path], as: alice).stdout
        XCTAssertTrue(after.contains("vocabulary/juice"), after)
        for arguments in [["-C", profile.path, "ls"], ["-C=\(profile.path)", "ls"], ["-C\(profile.path)", "ls"],
                          ["-C", "sam", "ls"], ["-C", profile.path, "remote", "list"]] {
            let result = try concord(arguments, as: alice)
            XCTAssertEqual(result.status, 0, "concord \(arguments.joined(separator: " ")): \(result.summary)")
            if arguments.last == "ls" { XCTAssertEqual(result.stdout, after, arguments.joined(separator: " ")) }
        }
        let help = try concordOK(["--help"], as: nil).stdout
        XCTAssertTrue(help.contains("concord -C sam sync"), help)
        XCTAssertTrue(help.contains("USAGE: concord <subcommand>"), help)
    }

    /// `concord --help` lists every exit code, 0 to 5, with docs/cli.md's words.
    func testHelpListsEveryExitCode() throws {
        let help = try concordOK(["--help"], as: nil).stdout
        for start in ["0  success", "1  error: one line on stderr", "2  usage error:", "3  offline: the remote could not be reached",
                      "4  refused: this device's member was revoked", "5  invalid commit: the remote holds a commit"] {
            XCTAssertTrue(help.contains("  " + start), "--help lacks \"\(start)\": \(help)")
        }
    }
}
