import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Kinds added concurrently on two devices with `concord kinds add` merge to the same bytes under
/// `concord merge` (in process) and plain `git merge` (running `concord merge-driver`, configured by
/// `init` and `doctor --fix`), in both directions.
final class KindsMergeTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    /// The tree of HEAD, and the bytes of kinds.json and .gitattributes in the working tree.
    private func result(_ directory: URL) throws -> (tree: String, kinds: Data, attributes: Data) {
        (try gitOK(["rev-parse", "HEAD^{tree}"], in: directory),
         try Data(contentsOf: directory.appendingPathComponent(".concord/kinds.json")),
         try Data(contentsOf: directory.appendingPathComponent(".gitattributes")))
    }

    /// `ours` merged with `refs/remotes/other/main` in two copies, by concord and by plain git:
    /// both results, after checking each is clean.
    private func mergeBothWays(_ ours: URL, as person: TestDevice, file: StaticString = #filePath, line: UInt = #line)
        throws -> (byConcord: URL, byGit: URL) {
        let byConcord = sandbox.appendingPathComponent("by-concord-\(UUID().uuidString.prefix(6))")
        let byGit = sandbox.appendingPathComponent("by-git-\(UUID().uuidString.prefix(6))")
        try FileManager.default.copyItem(at: ours, to: byConcord)
        try FileManager.default.copyItem(at: ours, to: byGit)
        try concordOK(["merge", "refs/remotes/other/main"], as: person, in: byConcord, file: file, line: line)
        try gitOK(["-c", "user.name=git", "-c", "user.email=git@example.com", "merge", "-q", "--no-edit", "refs/remotes/other/main"],
                  in: byGit, file: file, line: line)
        for directory in [byConcord, byGit] {
            XCTAssertEqual(try gitOK(["status", "--porcelain"], in: directory), "", "a clean merge", file: file, line: line)
            XCTAssertEqual(try gitOK(["log", "-1", "--format=%P"], in: directory).split(separator: " ").count, 2, file: file, line: line)
            try gitOK(["fsck", "--full", "--strict"], in: directory, file: file, line: line)
        }
        try gitOK(["verify-commit", "HEAD"], in: byConcord, file: file, line: line)
        return (byConcord, byGit)
    }

    func testKindsAddedOnTwoDevicesMergeTheSameUnderConcordAndPlainGit() throws {
        let alice = try makeDevice("alice", device: "mac")
        let origin = sandbox.appendingPathComponent("origin")
        try concordOK(["init", origin.path, "--name", "Play", "--template", "screenplay"], as: alice, clock: "2026-01-01T08:00:00.000Z")
        let other = sandbox.appendingPathComponent("other")
        try gitOK(["clone", "-q", origin.path, other.path], in: sandbox)
        try concordOK(["doctor", "--fix"], as: alice, in: other)
        XCTAssertFalse(try gitOK(["config", "merge.concord.driver"], in: other).isEmpty, "plain git runs concord's merge driver")

        // Each device adds a different kind (one a log in a nested directory), and writes a record of it.
        try concordOK(["kinds", "add", "notes", "--policy", "lww", "--writers", "user"], as: alice, in: origin, clock: "2026-01-01T10:00:00.000Z")
        try concordOK(["put", "notes/n1", "--json", #"{"text":"one"}"#], as: alice, in: origin, clock: "2026-01-01T10:00:01.000Z")
        try concordOK(["kinds", "add", "diary", "--policy", "append", "--writers", "viewer", "--directory", "journal/days"],
                      as: alice, in: other, clock: "2026-01-01T10:01:00.000Z")
        try concordOK(["append", "diary", "--json", #"{"text":"two"}"#], as: alice, in: other, clock: "2026-01-01T10:01:01.000Z")
        try gitOK(["fetch", "-q", other.path, "main:refs/remotes/other/main"], in: origin)
        try gitOK(["fetch", "-q", origin.path, "main:refs/remotes/other/main"], in: other)

        let one = try mergeBothWays(origin, as: alice)
        let two = try mergeBothWays(other, as: alice)
        let results = try [one.byConcord, one.byGit, two.byConcord, two.byGit].map(result)
        for (index, other) in results.enumerated().dropFirst() {
            XCTAssertEqual(other.tree, results[0].tree, "result \(index) merged to another tree")
            XCTAssertEqual(other.kinds, results[0].kinds, "result \(index): kinds.json differs")
            XCTAssertEqual(other.attributes, results[0].attributes, "result \(index): .gitattributes differs")
        }

        // The merged files are exactly what the merged table generates, and concord reads both kinds.
        let merged = try KindsTable.decode(Array(results[0].kinds))
        XCTAssertEqual(merged.kinds.map(\.name), ["characters", "comments", "diary", "notes", "scenes"])
        XCTAssertEqual(Array(results[0].kinds), merged.canonicalBytes())
        XCTAssertEqual(String(decoding: results[0].attributes, as: UTF8.self), merged.gitattributes())
        XCTAssertEqual(try concordOK(["kinds"], as: alice, in: one.byGit).split(separator: "\n").count, 5)
        XCTAssertEqual(try concordOK(["ls"], as: alice, in: one.byConcord).split(separator: "\n").count, 2)
        XCTAssertEqual(try concordOK(["get", "notes/n1"], as: alice, in: two.byGit).contains("one"), true)
    }
}
