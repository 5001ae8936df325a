import ConcordGit
import Crypto
import Foundation
import XCTest

/// Index patching, judged by the real git: `git status` must see nothing to do, and git's own
/// cache tree must stay honest.
final class IndexPatchTests: GitTestCase {
    func testPatchedIndexKeepsGitsCacheTreeHonest() throws {
        let (repository, url) = try makeRepository()
        // git builds the index (with a cache-tree extension, which `git commit` writes).
        var files = [String: String]()
        for directory in ["kind", "kind/sub", "other"] {
            for number in 0..<5 { files["\(directory)/r\(number).json"] = "\(directory) \(number)\n" }
        }
        try writeWithGit(files, in: url)
        let extensions = try Data(contentsOf: url.appendingPathComponent(".git/index"))
        XCTAssertNotNil(extensions.range(of: Data("TREE".utf8)), "git's index should carry a cache tree")

        // Concord changes one file deep down, adds one, removes one; the index is patched.
        let head = try XCTUnwrap(try repository.resolveReference("HEAD"))
        let base = try XCTUnwrap(ObjectID(hex: try gitOK(["rev-parse", "HEAD^{tree}"], in: url)))
        let changed = Array("changed\n".utf8), added = Array("added\n".utf8)
        let changedBlob = try repository.writeBlob(changed), addedBlob = try repository.writeBlob(added)
        let tree = try repository.writeTree(base: base, edits: [
            "kind/sub/r2.json": changedBlob, "kind/new.json": addedBlob, "other/r4.json": ObjectID?.none,
        ])
        try repository.applyToWorkingTree([
            WorkingTreeChange(path: "kind/sub/r2.json", bytes: changed, blob: changedBlob),
            WorkingTreeChange(path: "kind/new.json", bytes: added, blob: addedBlob),
            WorkingTreeChange(removing: "other/r4.json"),
        ])
        XCTAssertEqual(try gitOK(["write-tree"], in: url), tree.hex, "a stale cache-tree entry would name the old subtree")
        try commitAndAssertClean(repository, at: url, tree: tree, parent: head, message: "two")
        XCTAssertEqual(try gitOK(["diff-files", "--name-only"], in: url), "", "stat data in the index must match the files")
    }

    /// A file replaced by a directory of the same name, and a directory by a file, in one change:
    /// the index must end with only the new entries (git's write-tree refuses an index with both).
    func testAFileAndADirectorySwappingNamesLeaveAnIndexGitAccepts() throws {
        let (repository, url) = try makeRepository()
        var files = ["notes/x": "file\n", "cards/y/z.json": "deep\n"]
        for number in 0..<40 { files["cards/w\(number).json"] = "\(number)\n" }
        try writeWithGit(files, in: url)
        let head = try XCTUnwrap(try repository.resolveReference("HEAD"))
        let base = try XCTUnwrap(ObjectID(hex: try gitOK(["rev-parse", "HEAD^{tree}"], in: url)))

        let bytes = Array("swapped\n".utf8)
        let blob = try repository.writeBlob(bytes)
        let tree = try repository.writeTree(base: base, edits: [
            "notes/x": ObjectID?.none, "notes/x/inner.json": blob, "cards/y/z.json": ObjectID?.none, "cards/y": blob,
        ])
        try repository.applyToWorkingTree([
            WorkingTreeChange(removing: "notes/x"), WorkingTreeChange(path: "notes/x/inner.json", bytes: bytes, blob: blob),
            WorkingTreeChange(removing: "cards/y/z.json"), WorkingTreeChange(path: "cards/y", bytes: bytes, blob: blob),
        ])
        XCTAssertEqual(try gitOK(["write-tree"], in: url), tree.hex)
        try commitAndAssertClean(repository, at: url, tree: tree, parent: head, message: "swap")
    }

    func testIndexVersion4IsLeftToLibgit2() throws {
        let (repository, url) = try makeRepository()
        try "one\n".write(to: url.appendingPathComponent("a.txt"), atomically: false, encoding: .utf8)
        try gitOK(["add", "-A"], in: url)
        try gitOK(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"], in: url)
        try gitOK(["update-index", "--index-version", "4"], in: url)
        let head = try XCTUnwrap(try repository.resolveReference("HEAD"))
        let bytes = Array("two\n".utf8)
        let blob = try repository.writeBlob(bytes)
        let tree = try repository.writeTree(base: nil, edits: ["a.txt": blob, "b.txt": blob])
        try repository.applyToWorkingTree([WorkingTreeChange(path: "a.txt", bytes: bytes, blob: blob),
                                           WorkingTreeChange(path: "b.txt", bytes: bytes, blob: blob)])
        try commitAndAssertClean(repository, at: url, tree: tree, parent: head, message: "two")
    }

    func testALeftoverIndexLockIsReportedAndNothingChanges() throws {
        let (repository, url) = try makeRepository()
        try "one\n".write(to: url.appendingPathComponent("a.txt"), atomically: false, encoding: .utf8)
        try gitOK(["add", "-A"], in: url)
        let before = try Data(contentsOf: url.appendingPathComponent(".git/index"))
        let lock = url.appendingPathComponent(".git/index.lock").path
        _ = FileManager.default.createFile(atPath: lock, contents: Data())
        let bytes = Array("two\n".utf8)
        // Waited for (briefly here), then reported naming the file; the lock is not concord's to remove.
        repository.indexLockTimeout = 0.2
        XCTAssertThrowsError(
            try repository.applyToWorkingTree([WorkingTreeChange(path: "b.txt", bytes: bytes, blob: try repository.writeBlob(bytes))])
        ) { error in
            XCTAssertEqual((error as? IndexLockHeld)?.lockPath, lock, "\(error)")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: lock), "a held index.lock was removed")
        XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent(".git/index")), before)
    }

    func testADamagedIndexIsNotPatchedOver() throws {
        let (repository, url) = try makeRepository()
        try "one\n".write(to: url.appendingPathComponent("a.txt"), atomically: false, encoding: .utf8)
        try gitOK(["add", "-A"], in: url)
        let bytes = Array("two\n".utf8)
        let blob = try repository.writeBlob(bytes)
        try FileManager.default.createDirectory(at: url.appendingPathComponent(".git/concord"), withIntermediateDirectories: true)
        // The first patch writes the index and remembers it (.git/concord/index-stamp).
        try repository.applyToWorkingTree([WorkingTreeChange(path: "b.txt", bytes: bytes, blob: blob)])
        XCTAssertTrue(FileManager.default.fileExists(atPath: url.appendingPathComponent(".git/concord/index-stamp").path))
        // Damage one byte of an entry's blob id, as a disk error or a stray writer would.
        let index = url.appendingPathComponent(".git/index")
        var data = try Data(contentsOf: index)
        data[12 + 40 + 3] ^= 0xFF
        try data.write(to: index)
        let error = gitError {
            try repository.applyToWorkingTree([WorkingTreeChange(path: "c.txt", bytes: bytes, blob: blob)])
        }
        XCTAssertNotNil(error, "a damaged index must not be re-checksummed and kept")
        XCTAssertEqual(try Data(contentsOf: index), data, "nothing written over it")
    }

    /// A machine crash can leave the index truncated or half-written (it is swapped in without an
    /// fsync, as git does). Given the tree the working tree is moving to, the damaged file is set
    /// aside and the index rebuilt from that tree, and the changes land in it.
    func testADamagedIndexIsRebuiltFromTheTreeWhenOneIsGiven() throws {
        let damages: [(String, (Data) -> Data)] = [
            ("empty", { _ in Data() }),
            ("truncated", { $0.prefix(40) }),
            ("not an index", { _ in Data((0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37) }) }),
            ("checksum", { data in var copy = data; copy[copy.count - 1] ^= 0xFF; return copy }),
        ]
        for (number, (label, damage)) in damages.enumerated() {
            let (repository, url) = try makeRepository("repo-\(number)")
            var edits = [TreePath: ObjectID?]()
            var changes = [WorkingTreeChange]()
            for name in ["a.txt", "dir/b.txt"] {
                let bytes = Array("\(name)\n".utf8)
                let blob = try repository.writeBlob(bytes)
                edits[TreePath(stringLiteral: name)] = .some(blob)
                changes.append(WorkingTreeChange(path: TreePath(stringLiteral: name), bytes: bytes, blob: blob))
            }
            let first = try repository.writeTree(base: nil, edits: edits)
            try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: first)
            let index = url.appendingPathComponent(".git/index")
            // Damaged without a stamp, so the checksum is verified as git would.
            try? FileManager.default.removeItem(at: url.appendingPathComponent(".git/concord/index-stamp"))
            let damaged = damage(try Data(contentsOf: index))
            try damaged.write(to: index)

            let bytes = Array("c \(label)\n".utf8)
            let blob = try repository.writeBlob(bytes)
            let second = try repository.writeTree(base: first, edits: ["dir/c.txt": blob])
            let commit = try repository.createSignedCommit(tree: second, parents: [], author: Self.author, message: "c\n",
                                                           sign: { _ in Self.fakeSignature })
            try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "c")
            try repository.applyToWorkingTree([WorkingTreeChange(path: "dir/c.txt", bytes: bytes, blob: blob)],
                                              rebuildingDamagedIndexFrom: second)
            XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: url), "", label)
            XCTAssertEqual(try gitOK(["write-tree"], in: url), second.hex, label)
            XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent(".git/index.damaged")), damaged, "\(label): the damaged file is kept")
            XCTAssertFalse(FileManager.default.fileExists(atPath: url.appendingPathComponent(".git/index.lock").path), label)
        }
    }

    /// git 2.40+ with `index.skipHash=true` ends the index with 20 zero bytes and does not check
    /// them. Such an index is patched (what git staged kept), not taken for damaged.
    func testAnIndexWithANullTrailerIsPatchedNotRebuilt() throws {
        let (repository, url) = try makeRepository()
        try "one\n".write(to: url.appendingPathComponent("a.txt"), atomically: false, encoding: .utf8)
        try "staged\n".write(to: url.appendingPathComponent("notes.txt"), atomically: false, encoding: .utf8)
        try gitOK(["add", "-A"], in: url)
        let index = url.appendingPathComponent(".git/index")
        var data = try Data(contentsOf: index)
        data.replaceSubrange((data.count - 20)..., with: Data(count: 20))
        try data.write(to: index)
        let bytes = Array("two\n".utf8)
        let blob = try repository.writeBlob(bytes)
        let tree = try repository.writeTree(base: nil, edits: ["b.txt": blob])
        try repository.applyToWorkingTree([WorkingTreeChange(path: "b.txt", bytes: bytes, blob: blob)], rebuildingDamagedIndexFrom: tree)
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.appendingPathComponent(".git/index.damaged").path))
        XCTAssertEqual(try gitOK(["ls-files"], in: url), "a.txt\nb.txt\nnotes.txt")
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: url), "A  a.txt\nA  b.txt\nA  notes.txt")
    }

    /// A large index is written without its SHA-1 (git's `index.skipHash`: 20 zero bytes), which
    /// git reads, checks with `fsck` and keeps patching. Before libgit2 1.5 (which refuses such a
    /// trailer) reads it, its checksum is restored; `index.skipHash=false` keeps checksums.
    func testASkippedIndexChecksumIsReadByGitAndRestoredForLibgit2() throws {
        let (repository, url) = try makeRepository()
        // Stands in for a profile past the size limit (2 MiB, ~20,000 records).
        try gitOK(["config", "index.skipHash", "true"], in: url)
        let (edits, changes) = try blobs(repository, files: Dictionary(uniqueKeysWithValues: (0..<40).map {
            ("kind/\($0 % 4)/r\($0).json", "record \($0)\n")
        }))
        let tree = try repository.writeTree(base: nil, edits: edits)
        let commit = try repository.createSignedCommit(tree: tree, parents: [], author: Self.author, message: "records\n",
                                                       sign: { _ in Self.fakeSignature })
        try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "records")
        try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: tree)
        let index = url.appendingPathComponent(".git/index")
        XCTAssertEqual(try Data(contentsOf: index).suffix(20), Data(count: 20), "no checksum")
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: url), "")
        XCTAssertEqual(try gitOK(["write-tree"], in: url), tree.hex)
        XCTAssertEqual(try git(["fsck", "--full"], in: url).status, 0)

        // Patched again (not taken for damaged): still no checksum, still clean.
        let bytes = Array("changed\n".utf8)
        let blob = try repository.writeBlob(bytes)
        let second = try repository.writeTree(base: tree, edits: ["kind/0/r0.json": blob])
        try repository.applyToWorkingTree([WorkingTreeChange(path: "kind/0/r0.json", bytes: bytes, blob: blob)],
                                          rebuildingDamagedIndexFrom: second)
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.appendingPathComponent(".git/index.damaged").path))
        XCTAssertEqual(try Data(contentsOf: index).suffix(20), Data(count: 20))
        XCTAssertEqual(try gitOK(["write-tree"], in: url), second.hex)

        // libgit2 reads it (the crash repair asks for the index's tree): the checksum comes back first.
        XCTAssertEqual(try repository.indexTree(), second)
        let restored = try Data(contentsOf: index)
        XCTAssertEqual(Data(Insecure.SHA1.hash(data: restored.dropLast(20))), restored.suffix(20))
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.appendingPathComponent(".git/index.lock").path))

        // index.skipHash=false: checksums again.
        try gitOK(["config", "index.skipHash", "false"], in: url)
        try repository.applyToWorkingTree([WorkingTreeChange(path: "kind/0/r0.json", bytes: bytes, blob: blob)],
                                          rebuildingDamagedIndexFrom: second)
        let checked = try Data(contentsOf: index)
        XCTAssertEqual(Data(Insecure.SHA1.hash(data: checked.dropLast(20))), checked.suffix(20))
        XCTAssertEqual(try gitOK(["write-tree"], in: url), second.hex)
        XCTAssertEqual(try gitOK(["diff-files", "--name-only"], in: url), "")
    }

    /// A crash can leave zeros at the end of the index. Such a file is not given a checksum (which
    /// would pass it off as sound); libgit2 reports it instead.
    func testADamagedIndexWithANullTrailerIsNotGivenAChecksum() throws {
        let (repository, url) = try makeRepository()
        try "one\n".write(to: url.appendingPathComponent("a.txt"), atomically: false, encoding: .utf8)
        try gitOK(["add", "-A"], in: url)
        let index = url.appendingPathComponent(".git/index")
        var data = try Data(contentsOf: index)
        data.replaceSubrange(40..., with: Data(count: data.count - 40))   // the entry runs into zeros
        data.append(Data(count: 8))
        try data.write(to: index)
        XCTAssertNotNil(gitError { try repository.indexTree() })
        XCTAssertEqual(try Data(contentsOf: index), data, "left as it was")
    }

    /// Without a checksum, damage must show in the structure: zeros a crash left in the second
    /// half of the file, or zeros inside one entry's name (entries then fall out of git's order).
    /// Either way the index is set aside and rebuilt, not refused on every later command.
    func testCrashDamageToAnIndexWithoutAChecksumIsFoundAndRebuilt() throws {
        let damages: [(String, (Data, Int) -> Data)] = [
            ("second half zeroed", { data, _ in
                var copy = data
                copy.replaceSubrange((data.count / 2)..., with: Data(count: data.count - data.count / 2))
                return copy
            }),
            ("zeros inside a name", { data, offset in
                var copy = data
                copy.replaceSubrange((offset + 2)..<(offset + 5), with: Data(count: 3))
                return copy
            }),
        ]
        for (number, (label, damage)) in damages.enumerated() {
            let (repository, url) = try makeRepository("repo-\(number)")
            try gitOK(["config", "index.skipHash", "true"], in: url)
            let (edits, changes) = try blobs(repository, files: Dictionary(uniqueKeysWithValues: (10..<60).map {
                ("k/r\($0).json", "r\($0)\n")
            }))
            let tree = try repository.writeTree(base: nil, edits: edits)
            try repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: tree)
            let index = url.appendingPathComponent(".git/index")
            let data = try Data(contentsOf: index)
            XCTAssertEqual(data.suffix(20), Data(count: 20), label)
            // The 26th entry's name starts at 12 + 25 * 80 + 62 ("k/rNN.json": 80-byte entries).
            let damaged = damage(data, 12 + 25 * 80 + 62)
            try damaged.write(to: index)
            try? FileManager.default.removeItem(at: url.appendingPathComponent(".git/concord/index-stamp"))

            XCTAssertTrue(try repository.repairIndexIfDamaged(from: tree), label)
            XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent(".git/index.damaged")), damaged, label)
            XCTAssertEqual(try gitOK(["write-tree"], in: url), tree.hex, label)
            try git(["update-index", "-q", "--refresh"], in: url)
            XCTAssertEqual(try gitOK(["diff-files", "--name-only"], in: url), "", "\(label): the files match the rebuilt index")
        }
    }

    /// A merge makes libgit2 read the index (each conflicting file's `merge=` attribute): a
    /// fresh handle on a profile whose index has no checksum still merges, through the driver.
    func testAMergeWorksWhenTheIndexHasNoChecksum() throws {
        let (repository, url) = try makeRepository()
        try gitOK(["config", "index.skipHash", "true"], in: url)
        let base = try commit(repository, files: ["a.json": "a\n", "b.json": "b\n"])
        try repository.updateReference("refs/heads/main", to: base, expected: nil, message: "base")
        let baseTree = try repository.commit(base).tree
        try repository.applyToWorkingTree(try ["a.json", "b.json"].map { path in
            let bytes = Array("\(path.prefix(1))\n".utf8)
            return WorkingTreeChange(path: try TreePath(path), bytes: bytes, blob: try repository.writeBlob(bytes))
        }, rebuildingDamagedIndexFrom: baseTree)
        XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent(".git/index")).suffix(20), Data(count: 20))
        let ours = try commit(repository, files: ["a.json": "ours\n"], base: baseTree, parents: [base])
        let theirs = try commit(repository, files: ["a.json": "theirs\n"], base: baseTree, parents: [base])

        let fresh = try Repository.open(url.path)
        var resolved = [String]()
        let merged = try fresh.mergeCommits(ours: ours, theirs: theirs) { input in
            resolved.append(input.path)
            return .merged(Array("merged\n".utf8))
        }
        XCTAssertEqual(resolved, ["a.json"])
        XCTAssertEqual(try merged.conflicts().count, 0)
        XCTAssertEqual(try gitOK(["write-tree"], in: url), baseTree.hex, "the index itself is kept")
    }

    func testBulkWritesInParallelKeepGitStatusCleanAndReportAFailure() throws {
        let (repository, url) = try makeRepository()
        var changes = [WorkingTreeChange]()
        var edits = [TreePath: ObjectID?]()
        for number in 0..<600 {
            let path = String(format: "kind/%02x/r%04d.json", number % 256, number)
            let bytes = Array("record \(number)\n".utf8)
            let blob = try repository.writeBlob(bytes)
            changes.append(WorkingTreeChange(path: try TreePath(path), bytes: bytes, blob: blob))
            edits[try TreePath(path)] = .some(blob)
        }
        let tree = try repository.writeTree(base: nil, edits: edits)
        let commit = try repository.createSignedCommit(tree: tree, parents: [], author: Self.author, message: "bulk\n",
                                                       sign: { _ in Self.fakeSignature })
        try repository.updateReference("refs/heads/main", to: commit, expected: nil, message: "bulk")
        try repository.applyToWorkingTree(changes)
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: url), "")
        XCTAssertEqual(try gitOK(["diff-files", "--name-only"], in: url), "")

        // One file that cannot be written (a directory sits at its path): the error surfaces and
        // the index is left as it was.
        let index = try Data(contentsOf: url.appendingPathComponent(".git/index"))
        try FileManager.default.createDirectory(at: url.appendingPathComponent("kind/07/r0599.json/blocker"),
                                                withIntermediateDirectories: true)
        let rewrite = changes.map { WorkingTreeChange(path: $0.path, bytes: Array("again\n".utf8), blob: $0.content!.blob) }
            + [WorkingTreeChange(path: "kind/07/r0599.json", bytes: Array("x\n".utf8), blob: changes[0].content!.blob)]
        XCTAssertThrowsError(try repository.applyToWorkingTree(rewrite))
        XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent(".git/index")), index)
    }

    /// Commits `tree` on `parent` as main, and checks that git then sees a clean working tree and index.
    private func commitAndAssertClean(_ repository: Repository, at url: URL, tree: ObjectID, parent: ObjectID, message: String,
                                      file: StaticString = #filePath, line: UInt = #line) throws {
        let commit = try repository.createSignedCommit(tree: tree, parents: [parent], author: Self.author, message: message + "\n",
                                                       sign: { _ in Self.fakeSignature })
        try repository.updateReference("refs/heads/main", to: commit, expected: parent, message: message)
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: url), "", file: file, line: line)
    }
}
