import ConcordGitFormats
import ConcordTestSupport
import Foundation
import XCTest

/// Plain git as the attacker (a member with any role, a stolen device, the server, or anyone who
/// can write the shared folder): every forged commit is refused before anything is merged or
/// checked out — exit 5, "invalid commit", naming the commit and the path — and nothing on the
/// device changes.
final class HostileRemoteTests: ConcordTestCase {
    struct Scene {
        let alice: TestDevice
        let bob: TestDevice
        let remote: SyncRemote
        let aliceProfile: URL
        let bobProfile: URL
        let forger: Forger
    }

    /// Alice publishes an aac profile with one record; Bob (an editor) clones it. The forger signs
    /// with Alice's key (an Admin's device, stolen): the structural rule must hold even then.
    func makeScene(_ transport: SyncTransport = .path) throws -> Scene {
        let scene = try makeTwoDevices(transport, other: ("bob", "tablet"), role: "editor",
                                       records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        let (alice, bob, remote, aliceProfile, bobProfile) = (scene.owner, scene.other, scene.remote, scene.ownerProfile, scene.otherProfile)
        // The remote stays in fsckAtEnd: most forged objects are sound git objects (git fsck at most warns
        // of names like ".." or ".git"); the tests that damage objects or break git's own rules take it out.
        return Scene(alice: alice, bob: bob, remote: remote, aliceProfile: aliceProfile, bobProfile: bobProfile,
                     forger: Forger(test: self, bare: remote.bare, signingKey: alice.keyFile))
    }

    /// What a refused sync must leave alone: Bob's files, HEAD, status, tracking ref and git
    /// config, and every path in the sandbox outside his object store.
    struct Untouched: Equatable {
        let workTree: [String: Data]
        let tracking: String
        let config: Data
        let paths: Set<String>
    }

    func untouched(_ scene: Scene) throws -> Untouched {
        let bobGit = scene.bobProfile.lastPathComponent + "/.git/"
        let paths = allPaths(under: sandbox).filter {
            !$0.hasPrefix(bobGit + "objects") && !$0.hasPrefix(bobGit + "refs/concord") && !$0.hasPrefix("deadline-")
                && !$0.hasPrefix("concord-sync-run-")
        }
        return Untouched(workTree: try workTreeSnapshot(scene.bobProfile),
                         tracking: try revParse("refs/remotes/origin/main", in: scene.bobProfile),
                         config: try Data(contentsOf: scene.bobProfile.appendingPathComponent(".git/config")), paths: paths)
    }

    /// Bob's sync is refused with exit 5 and one line naming the forged commit and `mentions`;
    /// nothing of his changes; his profile still passes `git fsck --full`.
    func assertSyncRefused(_ scene: Scene, commit: String, mentions: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try untouched(scene)
        let result = try concordWithDeadline(["sync"], as: scene.bob, in: scene.bobProfile)
        XCTAssertFalse(result.timedOut, "sync hung", file: file, line: line)
        assertOneLineRefusal(result, status: 5,
                             mentions: ["invalid commit", String(commit.prefix(7))] + mentions, file: file, line: line)
        XCTAssertEqual(try untouched(scene), before, "a refused sync changed something", file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("escaped").path), file: file, line: line)
        try assertFsck(scene.bobProfile, file: file, line: line)
    }

    // MARK: A. Paths and modes

    func testADotDotEntryIsRefusedAndWritesNothingOutside() throws {
        let scene = try makeScene()
        let commit = try scene.forger.push(try scene.forger.file("pwned\n"), at: "../escaped")
        try assertSyncRefused(scene, commit: commit, mentions: ["../escaped"])
    }

    func testADotGitConfigEntryIsRefusedInEverySpelling() throws {
        let scene = try makeScene()
        let config = "[core]\n\tfsmonitor = touch \(sandbox.path)/escaped\n"
        for spelling in [".git", ".GIT", ".Git.", ".git ", "git~1", "GIT~1"] {
            try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
            let commit = try scene.forger.push(try scene.forger.file(config), at: "\(spelling)/config")
            try assertSyncRefused(scene, commit: commit, mentions: ["\(spelling)/config"])
        }
        // The branch file itself, which would rewind main behind the compare-and-swap.
        try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
        let commit = try scene.forger.push(try scene.forger.file("0000000000000000000000000000000000000000\n"), at: ".git/refs/heads/main")
        try assertSyncRefused(scene, commit: commit, mentions: [".git/refs/heads/main"])
        XCTAssertEqual(try git(["status", "--porcelain"], in: scene.bobProfile).status, 0)
    }

    func testSymlinksGitlinksAndOtherModesAreRefused() throws {
        let scene = try makeScene()
        let bucketPath = "vocabulary/\(try bucket(of: "link", scene))/link.json"
        for (mode, content) in [("120000", sandbox.path), ("100755", #"{"label":"x"}"#), ("160000", "")] {
            try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
            var entry = try scene.forger.file(content, mode: mode)
            if mode == "160000" { entry.id = try revParse("refs/remotes/origin/main", in: scene.bobProfile) }
            let commit = try scene.forger.push(entry, at: bucketPath)
            try assertSyncRefused(scene, commit: commit, mentions: [bucketPath, "mode \(mode)"])
        }
    }

    /// Trees git cannot read, sound objects all the same: an entry with an empty name, a directory
    /// entry naming a blob, a file entry naming a tree. Each is an invalid commit (exit 5, naming
    /// the commit and where), not an unreadable remote (exit 1, as they were).
    func testTreesGitCannotReadMakeTheCommitInvalid() throws {
        let scene = try makeScene()
        let bucket = try bucket(of: "puzzle", scene)
        let blob = try scene.forger.file(#"{"label":"x"}"#)
        let emptyName = try scene.forger.tree([Forger.Entry(mode: "100644", name: [], id: blob.id)])
        let aTree = try scene.forger.run(["rev-parse", "refs/heads/main^{tree}"])
        let cases: [(leaf: Forger.Entry, components: [String], mentions: [String])] = [
            (Forger.Entry(mode: "40000", name: [], id: emptyName), ["vocabulary", bucket], ["vocabulary/\(bucket)", "cannot read"]),
            (Forger.Entry(mode: "40000", name: [], id: blob.id), ["vocabulary", "zz"], ["vocabulary/zz", "is not a tree"]),
            (Forger.Entry(mode: "100644", name: [], id: aTree), ["vocabulary", bucket, "puzzle.json"],
             ["vocabulary/\(bucket)/puzzle.json", "not a"]),
        ]
        for item in cases {
            try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
            let commit = try scene.forger.push(item.leaf, atComponents: item.components.map { Array($0.utf8) })
            try assertSyncRefused(scene, commit: commit, mentions: item.mentions)
        }
        fsckAtEnd.removeAll { $0 == scene.remote.bare }   // a tree with an empty name is an error to fsck
    }

    func testControlCharactersAndPathsOutsideTheFormatAreRefused() throws {
        let scene = try makeScene()
        let cases: [(components: [[UInt8]], mention: String)] = [
            ([Array("vocabulary".utf8), Array("00".utf8), Array("a\u{1}b.json".utf8)], "vocabulary/00/a"),
            ([Array("vocabulary".utf8), Array("puzzle.json".utf8)], "vocabulary/puzzle.json"),           // outside any bucket
            ([Array("vocabulary".utf8), Array("00".utf8), Array("puzzle.json".utf8)], "wrong bucket"),     // puzzle's bucket is not 00
            ([Array("notakind".utf8), Array("00".utf8), Array("x.json".utf8)], "notakind/00/x.json"),
            ([Array("README".utf8)], "README"),
            // Under .concord/conflicts/ only copies a merge makes: another .gitattributes git would honour there is not one.
            ([Array(".concord".utf8), Array("conflicts".utf8), Array(".gitattributes".utf8)], ".concord/conflicts/.gitattributes"),
            ([Array(".concord".utf8), Array("conflicts".utf8), Array("vocabulary".utf8), Array(".gitattributes".utf8)],
             ".concord/conflicts/vocabulary/.gitattributes"),
            ([Array(".concord".utf8), Array("conflicts".utf8), Array("a".utf8), Array("b".utf8), Array("c".utf8)], ".concord/conflicts/a/b/c"),
        ]
        for item in cases {
            try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
            let commit = try scene.forger.push(try scene.forger.file(#"{"label":"x"}"#), atComponents: item.components)
            try assertSyncRefused(scene, commit: commit, mentions: [item.mention])
        }
    }

    func testATreeWithEntriesOutOfOrderIsRefused() throws {
        let scene = try makeScene()
        // A tree out of git's order is an invalid object (fsck: treeNotSorted), left in the remote on purpose.
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        let root = try scene.forger.entries(try scene.forger.run(["rev-parse", "refs/heads/main^{tree}"]))
        let tree = try scene.forger.tree(root.reversed(), sorted: false)
        let commit = try scene.forger.pushTree(tree, parents: [try scene.forger.run(["rev-parse", "refs/heads/main"])])
        try assertSyncRefused(scene, commit: commit, mentions: ["out of order"])
    }

    /// A commit whose tree holds a file `directories` directories deep (`deep/a/a/…/x.json`), its
    /// trees written by hand into one pack of the remote (10,000 `git hash-object` runs would take
    /// minutes): 5,000 and 10,000 deep crashed sync and clone (SIGSEGV, the walks recursed per
    /// directory). Deeper than `TreePath.maxDepth` is refused from the walk itself, one line, exit
    /// 5, nothing changed, the failed clone leaving nothing; exactly that deep passes the walk and
    /// is refused by the path rules instead.
    func testATreeNestedDeeperThanTheLimitIsRefusedWithoutCrashing() throws {
        let scene = try makeScene()
        // Trees git itself refuses to walk this deep (core.maxTreeDepth), left in the remote on purpose.
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        let main = try scene.forger.run(["rev-parse", "refs/heads/main"])
        for directories in [TreePath.maxDepth, 5_000, 10_000] {
            let commit = try pushNestedTree(scene, directories: directories, onto: main)
            let tooDeep = directories > TreePath.maxDepth
            let mentions = tooDeep ? ["deep/a/a/a/…", "nested deeper than \(TreePath.maxDepth)"] : ["deep/a/a/a/"]
            try assertSyncRefused(scene, commit: commit, mentions: mentions)

            let carol = try makeDevice("carol-\(directories)", device: "phone")
            let clone = sandbox.appendingPathComponent("carol-\(directories)")
            let cloned = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox)
            XCTAssertFalse(cloned.timedOut, "\(directories): clone hung")
            assertOneLineRefusal(cloned, status: 5, mentions: ["invalid commit", String(commit.prefix(7))] + mentions)
            XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "a failed clone leaves nothing")
            if !tooDeep { XCTAssertFalse(cloned.stderr.contains("nested deeper"), cloned.stderr) }
        }
    }

    /// Over ssh the fetch is libgit2's, and the check's comparison of trees refuses the deep one.
    func testOverSSHATreeNestedDeeperThanTheLimitIsRefused() throws {
        let scene = try makeScene(.ssh)
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        let commit = try pushNestedTree(scene, directories: 5_000, onto: try scene.forger.run(["rev-parse", "refs/heads/main"]))
        try assertSyncRefused(scene, commit: commit, mentions: ["deep/a/a/a/…", "nested deeper than \(TreePath.maxDepth)"])
    }

    /// Makes the remote's main a commit on `main` whose tree is `main`'s with `deep/a/…/a/x.json`
    /// inside `directories` directories; returns its id.
    func pushNestedTree(_ scene: Scene, directories: Int, onto main: String) throws -> String {
        let root = try scene.forger.entries(try scene.forger.run(["rev-parse", "\(main)^{tree}"]))
        let blob = try XCTUnwrap(ObjectID(hex: try scene.forger.blob(Data("{}\n".utf8))))
        // The innermost directory holds x.json; each one above holds the next as "a".
        var trees = [(id: ObjectID, entry: HandPack.Entry)]()
        var inner = Array("100644 x.json\0".utf8) + blob.bytes
        for _ in 1..<directories {
            trees.append((ObjectPack.id(of: inner, type: .tree), .whole(type: 2, bytes: inner)))
            inner = Array("40000 a\0".utf8) + trees.last!.id.bytes
        }
        trees.append((ObjectPack.id(of: inner, type: .tree), .whole(type: 2, bytes: inner)))
        try HandPack.write(trees, name: String(format: "%040d", directories),
                           into: scene.remote.bare.appendingPathComponent("objects/pack"))
        let top = Forger.Entry(mode: "40000", name: Array("deep".utf8), id: trees.last!.id.hex)
        return try scene.forger.pushTree(try scene.forger.tree(root + [top]), parents: [main])
    }

    // MARK: C. Records

    func testUnreadableMisplacedAndOversizedRecordsAreRefused() throws {
        let scene = try makeScene()
        let (path, good) = try puzzleRecord(scene)
        let cases: [(content: String, mention: String)] = [
            ("not json", "unreadable record"),
            ("[1, 2]", "unreadable record"),
            (good.replacingOccurrences(of: "\"id\": \"puzzle\"", with: "\"id\": \"other\""), "vocabulary/other"),
            (good.replacingOccurrences(of: "\"kind\": \"vocabulary\"", with: "\"kind\": \"settings\""), "settings/puzzle"),
            (good.replacingOccurrences(of: "\"label\": \"puzzle\"", with: "\"label\": \"a\", \"label\": \"b\""), "unreadable record"),
            (String(repeating: " ", count: (1 << 20) + 10) + good, "over the"),
        ]
        for item in cases {
            try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
            let commit = try scene.forger.push(try scene.forger.file(item.content), at: path)
            try assertSyncRefused(scene, commit: commit, mentions: [path, item.mention])
        }
        // Invalid UTF-8.
        try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
        var bytes = Array(good.utf8)
        bytes[bytes.firstIndex(of: UInt8(ascii: "z"))!] = 0xFF
        let invalid = Forger.Entry(mode: "100644", name: [], id: try scene.forger.blob(Data(bytes)))
        let commit = try scene.forger.push(invalid, at: path)
        try assertSyncRefused(scene, commit: commit, mentions: [path, "unreadable record"])
    }

    /// A record stamped in year 9999 is accepted (it is well formed) but does not drag the
    /// device's clock: later local writes are stamped at the device's own time.
    func testAFarFutureStampDoesNotDragTheClock() throws {
        let scene = try makeScene()
        let (path, good) = try puzzleRecord(scene)
        let future = try restamped(good, "9999-12-31T23:59:59.999Z-0000")
            .replacingOccurrences(of: "\"puzzle\"\n  }", with: "\"from the future\"\n  }")
        try scene.forger.push(try scene.forger.file(future), at: path)
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile, clock: "2027-06-01T10:00:00.000Z")
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: scene.bob, in: scene.bobProfile).contains("9999"))
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.bob, in: scene.bobProfile,
                      clock: "2027-06-01T10:00:01.000Z")
        let cat = try concordOK(["get", "vocabulary/cat"], as: scene.bob, in: scene.bobProfile)
        XCTAssertTrue(cat.contains("2027-06-01T10:00:01.000Z"), "the clock was dragged: \(cat)")
        // An edit of the future record itself still wins over it.
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"edited"}"#], as: scene.bob, in: scene.bobProfile,
                      clock: "2027-06-01T10:00:02.000Z")
        try concordOK(["put", "vocabulary/dog", "--json", #"{"label":"dog"}"#], as: scene.bob, in: scene.bobProfile,
                      clock: "2027-06-01T10:00:03.000Z")
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: scene.bob, in: scene.bobProfile).contains("edited"))
        XCTAssertTrue(try concordOK(["get", "vocabulary/dog"], as: scene.bob, in: scene.bobProfile).contains("2027-06-01T10:00:03.000Z"))
    }

    /// A record stamped with the last stamp there is (year 9999, counter 9999) has no stamp after
    /// it: an edit or removal of it is refused with one line and writes nothing. (Stamped before it,
    /// the edit made a record whose fields are stamped after it, which every other device refused.)
    func testAnEditOfARecordWithTheLastStampThereIsIsRefused() throws {
        let scene = try makeScene()
        let (path, good) = try puzzleRecord(scene)
        let last = try restamped(good, "9999-12-31T23:59:59.999Z-9999")
        try scene.forger.push(try scene.forger.file(last), at: path)
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile)
        let head = try revParse("HEAD", in: scene.bobProfile)
        for arguments in [["put", "vocabulary/puzzle", "--json", #"{"label":"edited"}"#], ["rm", "vocabulary/puzzle"]] {
            let refused = try concord(arguments, as: scene.bob, in: scene.bobProfile)
            assertOneLineRefusal(refused, status: 1, mentions: ["9999-12-31T23:59:59.999Z-9999", "the last stamp there is", "new id"])
            XCTAssertEqual(try revParse("HEAD", in: scene.bobProfile), head, "\(arguments[0]) committed something")
            XCTAssertEqual(try String(contentsOf: scene.bobProfile.appendingPathComponent(path), encoding: .utf8), last)
        }
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.bob, in: scene.bobProfile)
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: scene.alice, in: scene.aliceProfile).contains("puzzle"))
    }

    func testARemovedRecordFileIsRefused() throws {
        let scene = try makeScene()
        let path = "vocabulary/\(try bucket(of: "puzzle", scene))/puzzle.json"
        let commit = try scene.forger.push(nil, at: path)
        try assertSyncRefused(scene, commit: commit, mentions: [path, "removed"])
    }

    /// .gitattributes is what kinds.json generates: removed, plain git would merge records as text.
    func testARemovedGitattributesIsRefused() throws {
        let scene = try makeScene()
        let commit = try scene.forger.push(nil, at: ".gitattributes")
        try assertSyncRefused(scene, commit: commit, mentions: [".gitattributes", "removed"])
    }

    /// A copy a merge keeps of a record's other side (`<path>.<commit>.json`) is in the format.
    func testAConflictCopyOfARecordIsAccepted() throws {
        let scene = try makeScene()
        let path = "vocabulary/\(try bucket(of: "puzzle", scene))/puzzle.json"
        let copy = ".concord/conflicts/" + path.dropLast(5) + ".abc1234.json"
        try scene.forger.push(try scene.forger.file(#"{"label":"the other side"}"#), at: copy)
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile)
        XCTAssertTrue(FileManager.default.fileExists(atPath: scene.bobProfile.appendingPathComponent(copy).path))
    }

    // MARK: E. Integrity without an attacker

    /// A and B edit the same record, A syncs, B syncs (B's edit is later, so the merge result is
    /// B's own tree): the remote used to be left missing a tree.
    func testAMergeWhoseResultIsThisDevicesTreeLeavesTheRemoteComplete() throws {
        let scene = try makeScene()
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"A"}"#], as: scene.alice, in: scene.aliceProfile,
                      clock: "2026-01-01T10:00:00.000Z")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"B"}"#], as: scene.bob, in: scene.bobProfile,
                      clock: "2026-01-01T10:01:00.000Z")
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile)
        try assertFsck(scene.remote.bare)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        try assertFsck(scene.aliceProfile)
        XCTAssertEqual(try concordOK(["get", "vocabulary/puzzle"], as: scene.alice, in: scene.aliceProfile).contains("\"B\""), true)
    }

    // MARK: Helpers

    /// The bucket of record id `id` (as concord computes it), read back from a put in a scratch profile.
    /// Bob's `puzzle` record: its path and its file's text.
    func puzzleRecord(_ scene: Scene) throws -> (path: String, text: String) {
        let path = "vocabulary/\(try bucket(of: "puzzle", scene))/puzzle.json"
        return (path, try String(contentsOf: scene.bobProfile.appendingPathComponent(path), encoding: .utf8))
    }

    /// The record file `text` with its `updatedAt` set to `stamp`.
    func restamped(_ text: String, _ stamp: String) throws -> String {
        let range = try XCTUnwrap(text.range(of: #""updatedAt": "[^"]+""#, options: .regularExpression))
        return text.replacingCharacters(in: range, with: "\"updatedAt\": \"\(stamp)\"")
    }

    func bucket(of id: String, _ scene: Scene) throws -> String {
        var hash: UInt32 = 0x811C_9DC5
        for byte in id.utf8 { hash ^= UInt32(byte); hash = hash &* 0x0100_0193 }
        return String(format: "%02x", hash & 0xFF)
    }
}
