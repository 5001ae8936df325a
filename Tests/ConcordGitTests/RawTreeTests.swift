import ConcordGit
import Crypto
import Foundation
import XCTest

/// Tree writes (libgit2's `git_tree_create_updated` behind `Repository.writeTree`, with Concord's
/// checks), judged by the real git: `git write-tree` from an index git builds itself must name the
/// same tree.
final class RawTreeTests: GitTestCase {
    /// Names chosen to stress git's tree order: "a" < "a-b" < "a.b" < "a/" (a directory sorts as if
    /// its name ended in "/"), "a0" after "a/".
    private static let names = ["a", "a-b", "a.b", "a0", "b", "a.json", "ab", "-", "0"]

    func testWrittenTreesMatchTreesGitBuildsForRandomEdits() throws {
        let (repository, url) = try makeRepository()
        var generator = SeededGenerator(seed: 20261122)
        var files = [String: ObjectID]()
        var tree: ObjectID?
        for round in 0..<40 {
            var edits = [TreePath: ObjectID?]()
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                let path = randomPath(&generator)
                if Bool.random(using: &generator), let existing = files.keys.sorted().randomElement(using: &generator) {
                    edits[try TreePath(existing)] = ObjectID?.none
                } else if !clashes(path, with: files, edits: edits) {
                    edits[try TreePath(path)] = .some(try repository.writeBlob(Array("\(round) \(path)\n".utf8)))
                }
            }
            let previous = tree
            tree = try repository.writeTree(base: tree, edits: edits)
            for (path, blob) in edits { files[path.string] = blob ?? nil }
            if let previous, let tree {
                // The raw diff agrees with git's, path for path and blob for blob (before and after).
                let changes = try repository.changedFiles(from: previous, to: tree)
                let ours = changes.map { "\($0.path) \($0.before?.hex ?? "-") \($0.blob?.hex ?? "-")" }
                let theirs = try gitOK(["diff-tree", "-r", "--no-renames", "--format=", previous.hex, tree.hex], in: url)
                    .split(separator: "\n").map { line -> String in
                        let fields = line.split(separator: "\t"), meta = fields[0].split(separator: " ")
                        return "\(fields[1]) \(meta[4] == "A" ? "-" : String(meta[2])) \(meta[4] == "D" ? "-" : String(meta[3]))"
                    }
                XCTAssertEqual(ours, theirs, "round \(round)")
                // Many paths looked up at once find what one-by-one lookups find.
                let probes = files.keys.sorted() + edits.keys.map(\.string).sorted() + ["missing/x.json", "", "a/b/c/d.json"]
                XCTAssertEqual(try repository.entries(at: probes, inTree: tree),
                               try probes.map { try repository.entry(at: $0, inTree: tree) }, "round \(round)")
            }
            if let previous, let tree {
                // The raw diff agrees with git's, path for path and blob for blob.
                let changes = try repository.changedFiles(from: previous, to: tree)
                let ours = changes.map { "\($0.path) \($0.blob?.hex ?? "-")" }
                let theirs = try gitOK(["diff-tree", "-r", "--no-renames", "--format=", previous.hex, tree.hex], in: url)
                    .split(separator: "\n").map { line -> String in
                        let fields = line.split(separator: "\t"), meta = fields[0].split(separator: " ")
                        return "\(fields[1]) \(meta[4] == "D" ? "-" : String(meta[3]))"
                    }
                XCTAssertEqual(ours, theirs, "round \(round)")
            }
            XCTAssertEqual(tree?.hex, try treeGitBuilds(files, in: url), "round \(round), edits \(edits.keys.sorted())")
        }
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: url).status, 0)
    }

    /// A tree write takes only `TreePath`s, and no `TreePath` names what git refuses.
    func testNoTreeWriteCanNameWhatGitRefuses() throws {
        for path in ["a/../b", "a/./b", ".git/config", "x/.GIT"] {
            XCTAssertThrowsError(try TreePath(path), path)
        }
    }

    func testATreeWriteRefusesAPathEditedTwice() throws {
        let (repository, _) = try makeRepository()
        let blob = try repository.writeBlob(Array("x\n".utf8))
        var pack = ObjectPack()
        XCTAssertThrowsError(try repository.writeTree(base: nil, edits: [("kind/a.json", blob), ("kind/a.json", nil)], into: &pack))
        XCTAssertNoThrow(try repository.writeTree(base: nil, edits: [("kind/a.json", blob), ("kind/b.json", blob)], into: &pack))
    }

    // MARK: Helpers

    private func randomPath(_ generator: inout SeededGenerator) -> String {
        let depth = Int.random(in: 1...3, using: &generator)
        return (0..<depth).map { _ in Self.names.randomElement(using: &generator)! }.joined(separator: "/")
    }

    /// True when adding `path` would put a file where a directory is (or the reverse).
    private func clashes(_ path: String, with files: [String: ObjectID], edits: [TreePath: ObjectID?]) -> Bool {
        var all = Set(files.keys)
        for (edited, blob) in edits { if blob == nil { all.remove(edited.string) } else { all.insert(edited.string) } }
        for other in all {
            if other.hasPrefix(path + "/") || path.hasPrefix(other + "/") { return true }
        }
        return false
    }

    /// The tree git itself builds for `files`, through a scratch index.
    private func treeGitBuilds(_ files: [String: ObjectID], in url: URL) throws -> String {
        let indexFile = sandbox.appendingPathComponent("scratch-index-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: indexFile) }
        let input = files.map { "100644 \($0.value.hex)\t\($0.key)\n" }.joined()
        try gitOK(["-c", "core.safecrlf=false", "update-index", "--index-info"], in: url, input: Data(input.utf8),
                  environment: ["GIT_INDEX_FILE": indexFile])
        return try gitOK(["write-tree"], in: url, environment: ["GIT_INDEX_FILE": indexFile])
    }
}
