import ConcordTestSupport
import Foundation
import XCTest

/// Every command explains itself: `--help` prints usage and exits 0, with no error line.
final class HelpTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    func testEveryCommandHasHelp() throws {
        let commands: [[String]] = [
            [], ["identity"], ["identity", "new"], ["identity", "show"], ["init"], ["put"], ["get"], ["rm"], ["append"],
            ["ls"], ["query"], ["import"], ["export"], ["log"], ["history"], ["members"], ["members", "add"], ["revoke"], ["role"], ["devices", "add"], ["devices", "remove"], ["merge"], ["conflicts"],
            ["doctor"], ["merge-driver"], ["remote"], ["remote", "add"], ["remote", "trust"], ["clone"], ["sync"],
            ["status"], ["watch"], ["profiles"], ["leave"], ["destroy"], ["switch"], ["identity", "delete"], ["serve"],
            ["identity", "prove"], ["upgrade"],
        ]
        for command in commands {
            let result = try concord(command + ["--help"], as: nil)
            XCTAssertEqual(result.status, 0, "concord \(command.joined(separator: " ")) --help: \(result.summary)")
            XCTAssertTrue(result.stdout.contains("USAGE: concord"), "concord \(command.joined(separator: " ")) --help: \(result.stdout)")
            XCTAssertFalse(result.stderr.contains("error"), result.stderr)
        }
    }

    /// `serve` and `merge-driver` are parsed without the command tree (a faster start for sshd and
    /// git); their mistakes are still one line and the usage, exit 2.
    func testTheCommandsMachinesRunAreParsedAlone() throws {
        let fingerprint = "SHA256:" + String(repeating: "A", count: 43)
        for (arguments, expected) in [(["serve", "--root", "/nowhere"], "give exactly one of --key"),
                                      (["serve", "--root", "/nowhere", "--key", "SHA256:short"], "--key takes a key fingerprint"),
                                      (["serve", "--root", "/nowhere", "--key", fingerprint, "extra"], "unexpected arguments"),
                                      (["serve", "--root", "/nowhere", "--pre-receive", "--post-receive"], "give exactly one of --key"),
                                      (["merge-driver", "a"], "Missing expected argument")] {
            let result = try concord(arguments, as: nil)
            XCTAssertEqual(result.status, 2, result.summary)
            XCTAssertTrue(result.stderr.contains(expected), result.summary)
        }
        // The exact forms sshd and the hooks run skip the parser (`ServeRun.direct`) and fail as the parsed command
        // does: one line naming the server directory, exit 1.
        for mode in [["--key", fingerprint], ["--pre-receive"], ["--post-receive"]] {
            let result = try concord(["serve", "--root", "/nowhere"] + mode, as: nil)
            XCTAssertEqual(result.status, 1, result.summary)
            XCTAssertTrue(result.stderr.hasPrefix("concord serve: ") && result.stderr.contains("/nowhere"), result.summary)
            XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, result.summary)
        }
    }

    func testVersion() throws {
        let result = try concord(["--version"], as: nil)
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "0.1.0\n")
    }
}
