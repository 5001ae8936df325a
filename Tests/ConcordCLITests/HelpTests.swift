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

    func testVersion() throws {
        let result = try concord(["--version"], as: nil)
        XCTAssertEqual(result.status, 0)
        XCTAssertEqual(result.stdout, "0.1.0\n")
    }
}
