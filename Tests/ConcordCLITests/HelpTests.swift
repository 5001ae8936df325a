import Foundation
import XCTest

/// Every command explains itself: `--help` prints usage and exits 0, with no error line.
final class HelpTests: CLITestCase {
    func testEveryCommandHasHelp() throws {
        let commands: [[String]] = [
            [], ["identity"], ["identity", "new"], ["identity", "show"], ["init"], ["put"], ["get"], ["rm"], ["append"],
            ["ls"], ["import"], ["export"], ["log"], ["history"], ["members"], ["members", "add"], ["revoke"], ["role"], ["devices", "add"], ["devices", "remove"], ["merge"], ["conflicts"],
            ["doctor"], ["merge-driver"], ["remote"], ["remote", "add"], ["remote", "trust"], ["clone"], ["sync"],
            ["status"], ["watch"], ["profiles"], ["leave"], ["destroy"], ["switch"], ["identity", "delete"], ["serve"],
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
        for (arguments, expected) in [(["serve", "--root", "/nowhere"], "give exactly one of --key"),
                                      (["merge-driver", "a"], "Missing expected argument")] {
            let result = try concord(arguments, as: nil)
            XCTAssertEqual(result.status, 2, result.summary)
            XCTAssertTrue(result.stderr.contains(expected), result.summary)
        }
    }

    func testVersion() throws {
        let result = try concord(["--version"], as: nil)
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "0.1.0\n")
    }
}
