import ConcordGit
import Foundation
import XCTest

/// Fetching from and pushing to a repository on a local path by copying only the missing objects,
/// judged by git: the destination must pass `git fsck --full` and hold every object of the source.
final class ObjectTransferTests: GitTestCase {
    func testFetchCopiesWhatIsNewAndTheResultIsComplete() throws {
        let (source, sourceURL) = try makeRepository("source")
        let (destination, destinationURL) = try makeRepository("destination")
        var tip = try commit(source, files: ["kind/a.json": "a\n", "kind/b.json": "b\n", "other/deep/c.json": "c\n"])
        try source.updateReference("refs/heads/main", to: tip, expected: nil, message: "one")
        XCTAssertEqual(try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main",
                                                               into: "refs/remotes/origin/main"), tip)
        // More history, including a merge and a removed directory, then fetch again.
        let base = try source.commit(tip).tree
        let left = try commit(source, files: ["kind/a.json": "a2\n", "other/deep/c.json": nil], base: base, parents: [tip])
        let right = try commit(source, files: ["kind/new.json": "n\n"], base: base, parents: [tip])
        let merged = try commit(source, files: ["kind/new.json": "n\n"], base: try source.commit(left).tree, parents: [left, right])
        try source.updateReference("refs/heads/main", to: merged, expected: tip, message: "more")
        tip = merged
        let packsBefore = try packFiles(destinationURL).count
        XCTAssertEqual(try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main",
                                                               into: "refs/remotes/origin/main"), tip)
        XCTAssertEqual(try packFiles(destinationURL).count, packsBefore + 1, "one pack per fetch")
        XCTAssertEqual(try destination.resolveReference("refs/remotes/origin/main"), tip)
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: destinationURL).status, 0)
        let all = ["rev-list", "--objects", "refs/remotes/origin/main"]
        XCTAssertEqual(try gitOK(all, in: destinationURL).split(separator: "\n").sorted(),
                       try gitOK(["rev-list", "--objects", "main"], in: sourceURL).split(separator: "\n").sorted())

        // Nothing new: nothing copied, no new pack.
        try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        XCTAssertEqual(try packFiles(destinationURL).count, packsBefore + 1)
    }

    func testPushCopiesWhatTheBareRepositoryLacksThenComparesAndSwaps() throws {
        let (local, _) = try makeRepository("local")
        let bareURL = sandbox.appendingPathComponent("remote.git")
        _ = try Repository.create(at: bareURL.path, bare: true)
        let first = try commit(local, files: ["kind/a.json": "a\n"])
        try local.pushToLocalRepository(at: bareURL.path, ref: "refs/heads/main", tip: first, expected: nil)
        let second = try commit(local, files: ["kind/b.json": "b\n"], base: try local.commit(first).tree, parents: [first])
        try local.pushToLocalRepository(at: bareURL.path, ref: "refs/heads/main", tip: second, expected: first)
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: bareURL), second.hex)
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: bareURL).status, 0)
        // A push from a stale view of the remote is refused, and the ref stays where it was.
        let stale = try commit(local, files: ["kind/c.json": "c\n"], base: try local.commit(first).tree, parents: [first])
        let error = gitError { try local.pushToLocalRepository(at: bareURL.path, ref: "refs/heads/main", tip: stale, expected: first) }
        XCTAssertTrue(error?.code == .modified || error?.code == .exists, "\(String(describing: error))")
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: bareURL), second.hex)
    }

    func testAForgedObjectInTheSourceIsRefusedAndNothingChanges() throws {
        let (source, sourceURL) = try makeRepository("source")
        let (destination, destinationURL) = try makeRepository("destination")
        let tip = try commit(source, files: ["kind/a.json": "the real content\n"])
        try source.updateReference("refs/heads/main", to: tip, expected: nil, message: "one")
        // Replace the blob's loose file with other content under the same name.
        let blob = try XCTUnwrap(try source.entry(at: "kind/a.json", inTree: try source.commit(tip).tree)).id
        let forged = try gitOK(["hash-object", "-w", "--stdin"], in: sourceURL, input: Data("forged content\n".utf8))
        let objects = sourceURL.appendingPathComponent(".git/objects")
        let blobFile = objects.appendingPathComponent("\(blob.hex.prefix(2))/\(blob.hex.dropFirst(2))")
        try FileManager.default.removeItem(at: blobFile)
        try FileManager.default.copyItem(at: objects.appendingPathComponent("\(forged.prefix(2))/\(forged.dropFirst(2))"), to: blobFile)

        let error = gitError {
            try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        }
        XCTAssertTrue(error?.message.contains("does not match its content") == true, "\(String(describing: error))")
        XCTAssertNil(try destination.resolveReference("refs/remotes/origin/main"))
        XCTAssertEqual(try packFiles(destinationURL), [])
    }

    /// The trees a fetch reads are kept for the changed-files walk that follows, but only those
    /// whose bytes hash to their ids: a forged copy of a tree the destination already has (read
    /// from the source only to compare) must not stand in for the destination's own.
    func testAForgedBaseTreeInTheSourceDoesNotSkewTheChangedFiles() throws {
        let (source, sourceURL) = try makeRepository("source")
        let (destination, _) = try makeRepository("destination")
        let first = try commit(source, files: ["kind/a.json": "a\n", "kind/b.json": "b\n"])
        try source.updateReference("refs/heads/main", to: first, expected: nil, message: "one")
        try destination.fetchFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        let second = try commit(source, files: ["kind/c.json": "c\n"], base: try source.commit(first).tree, parents: [first])
        try source.updateReference("refs/heads/main", to: second, expected: first, message: "two")

        // In the source, `kind` of the first commit now holds another tree's bytes (just a.json).
        let kindTree = try XCTUnwrap(try source.entry(at: "kind", inTree: try source.commit(first).tree)).id
        let aBlob = try XCTUnwrap(try source.entry(at: "kind/a.json", inTree: try source.commit(first).tree)).id
        let other = try gitOK(["mktree"], in: sourceURL, input: Data("100644 blob \(aBlob.hex)\ta.json\n".utf8))
        let objects = sourceURL.appendingPathComponent(".git/objects")
        let treeFile = objects.appendingPathComponent("\(kindTree.hex.prefix(2))/\(kindTree.hex.dropFirst(2))")
        try FileManager.default.removeItem(at: treeFile)
        try FileManager.default.copyItem(at: objects.appendingPathComponent("\(other.prefix(2))/\(other.dropFirst(2))"), to: treeFile)

        let fetch = try XCTUnwrap(try destination.fetchObjectsFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main",
                                                                                into: "refs/remotes/origin/main"))
        let changes = try destination.changedFiles(from: try destination.commit(first).tree, to: try destination.commit(second).tree)
        XCTAssertEqual(changes.map(\.path), ["kind/c.json"])
        // The changes kept for the check of the new commits come from the destination's own tree too.
        let kept = fetch.objects.changes[TreePair(old: try destination.commit(first).tree, new: try destination.commit(second).tree)]
        XCTAssertEqual(try XCTUnwrap(kept).map { String(decoding: $0.path, as: UTF8.self) }, ["kind/c.json"])
    }

    /// What a fetch finds changed while copying each new commit (kept so the check of the new
    /// commits reads no tree again) is exactly git's own diff of that commit against its first
    /// parent: a seeded history of edits, removals, a file turned directory and back, reverts to
    /// earlier trees and merges, fetched in two steps. The kept answers must also cover the
    /// history (a cache that keeps nothing would pass the comparison alone).
    func testChangesFoundWhileCopyingAreGitsDiffOfEachNewCommit() throws {
        let (source, sourceURL) = try makeRepository("source")
        var random = SeededGenerator(seed: 0xC0_4C0D)
        let directories = ["vocabulary/0a", "vocabulary/1b", "vocabulary/2c", "scenes", ".concord/members"]
        var commits = [try commit(source, files: ["vocabulary/0a/x.json": "x\n", ".concord/profile.json": "{}\n"])]
        var live = Set(["vocabulary/0a/x.json", ".concord/profile.json"])
        for step in 1..<120 {
            let tip = commits.last!
            let tipTree = try source.commit(tip).tree
            var files = [String: String?]()
            switch step % 23 {
            case 7:   // a file turned directory, then back below
                files["scenes/turn"] = nil
                files["scenes/turn/inner.json"] = "\(step)\n"
                live.remove("scenes/turn"); live.insert("scenes/turn/inner.json")
            case 8:
                files["scenes/turn/inner.json"] = nil
                files["scenes/turn"] = "file again \(step)\n"
                live.remove("scenes/turn/inner.json"); live.insert("scenes/turn")
            case 11:  // back to the tree of a commit a few steps ago
                let earlier = commits[max(0, commits.count - 5)]
                commits.append(try source.createSignedCommit(tree: try source.commit(earlier).tree, parents: [tip],
                                                             author: GitSignature(name: "T", email: "t@example.com", time: 1_767_261_600),
                                                             message: "revert \(step)\n", sign: { _ in Self.fakeSignature }))
                live = Set(try gitOK(["ls-tree", "-r", "--name-only", try source.commit(earlier).tree.hex], in: sourceURL)
                    .split(separator: "\n").map(String.init))
                continue
            case 17:  // a merge of two branches off the tip
                let left = try commit(source, files: ["vocabulary/1b/left\(step).json": "l\n"], base: tipTree, parents: [tip])
                let right = try commit(source, files: ["vocabulary/2c/right\(step).json": "r\n"], base: tipTree, parents: [tip])
                let leftTree = try source.commit(left).tree
                commits.append(try commit(source, files: ["vocabulary/2c/right\(step).json": "r\n"], base: leftTree, parents: [left, right]))
                live.formUnion(["vocabulary/1b/left\(step).json", "vocabulary/2c/right\(step).json"])
                continue
            default:
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    if !live.isEmpty, Int.random(in: 0..<4, using: &random) == 0 {
                        let gone = live.sorted()[Int.random(in: 0..<live.count, using: &random)]
                        files[gone] = nil
                        live.remove(gone)
                    } else {
                        let path = "\(directories.randomElement(using: &random)!)/r\(Int.random(in: 0..<12, using: &random)).json"
                        if live.contains(where: { $0.hasPrefix(path + "/") }) { continue }
                        files[path] = "\(step) \(UInt32.random(in: 0...UInt32.max, using: &random))\n"
                        live.insert(path)
                    }
                }
            }
            commits.append(try commit(source, files: files, base: tipTree, parents: [tip]))
        }

        let (destination, destinationURL) = try makeRepository("destination")
        let middle = commits[40]
        var kept = 0, compared = 0
        for (tip, known) in [(middle, nil), (commits.last!, middle)] as [(ObjectID, ObjectID?)] {
            try source.updateReference("refs/heads/main", to: tip, expected: known, message: "move")
            let fetch = try XCTUnwrap(try destination.fetchObjectsFromLocalRepository(at: sourceURL.path, ref: "refs/heads/main",
                                                                                    into: "refs/remotes/origin/main"))
            let range = known.map { "\($0.hex)..\(tip.hex)" } ?? tip.hex
            for line in try gitOK(["rev-list", range], in: destinationURL).split(separator: "\n") {
                let id = try XCTUnwrap(ObjectID(hex: String(line)))
                let commit = try destination.commit(id)
                let parentTree = try commit.parents.first.map { try destination.commit($0).tree }
                compared += 1
                guard let found = fetch.objects.changes[TreePair(old: parentTree, new: commit.tree)] else { continue }
                kept += 1
                var arguments = ["diff-tree", "-r", "--no-renames", "--raw", "-z"]
                arguments.append(parentTree?.hex ?? "4b825dc642cb6eb9a060e54bf8d69288fbee4904")   // git's empty tree
                arguments.append(commit.tree.hex)
                XCTAssertEqual(Self.describe(found), try Self.gitChanges(try gitOK(arguments, in: destinationURL)), "commit \(id)")
            }
        }
        XCTAssertGreaterThanOrEqual(kept, compared * 9 / 10, "\(kept) of \(compared) new commits had their changes kept")
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: destinationURL).status, 0)
    }

    /// `changes` as "path old-mode old-id new-mode new-id" lines, sorted.
    private static func describe(_ changes: [TreeChange]) -> [String] {
        func side(_ value: TreeEntryValue?) -> String {
            switch value {
            case nil: return "000000 " + String(repeating: "0", count: 40)
            case .file(let id)?: return "100644 \(id.hex)"
            case .tree(let id)?: return "040000 \(id.hex)"
            case .other(let mode)?: return "\(mode) ?"
            }
        }
        return changes.map { "\(String(decoding: $0.path, as: UTF8.self)) \(side($0.old)) \(side($0.new))" }.sorted()
    }

    /// The same lines from `git diff-tree -r --raw -z` output.
    private static func gitChanges(_ output: String) -> [String] {
        let fields = output.split(separator: "\0", omittingEmptySubsequences: true).map(String.init)
        var lines = [String]()
        var index = 0
        while index + 1 < fields.count {
            let meta = fields[index].dropFirst().split(separator: " ")
            lines.append("\(fields[index + 1]) \(meta[0]) \(meta[2]) \(meta[1]) \(meta[3])")
            index += 2
        }
        return lines.sorted()
    }
}
