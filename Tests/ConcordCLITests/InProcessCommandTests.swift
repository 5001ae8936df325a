import ConcordTestSupport
import Foundation
import XCTest

/// Commands run in the tests' process (`InProcessConcord`) as the binary runs them: a working
/// directory that cannot be entered is one line and exit 1, as the binary could not start there,
/// and the process's own directory is left as it was.
final class InProcessCommandTests: ConcordTestCase {
    func testAWorkingDirectoryThatCannotBeEnteredIsOneLineAndRunsNothing() throws {
        let before = FileManager.default.currentDirectoryPath
        let missing = sandbox.appendingPathComponent("gone")
        let result = InProcessConcord.run(["identity", "new", "--name", "alice", "--device", "laptop"],
                                          environment: concordEnvironment(nil).merging(["CONCORD_HOME": missing.appendingPathComponent("home").path]) { $1 },
                                          in: missing, input: nil, executable: try ConcordBinary.required())
        XCTAssertEqual(result.status, 1, result.summary)
        XCTAssertEqual(result.stderrLines, ["concord: error: cannot work in \(missing.path): no such directory or not enterable"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing.path), "nothing was made")
        XCTAssertEqual(FileManager.default.currentDirectoryPath, before)
    }
}
