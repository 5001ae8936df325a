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

    // MARK: D. Remote history

    func testAnUnrelatedHistoryIsRefused() throws {
        let scene = try makeScene()
        // Another profile's history, pushed over main.
        let other = try makeRemote(.path, name: "other.git")
        _ = try publishProfile(owner: scene.alice, remote: other, directory: "other")
        let foreign = try gitOK(["rev-parse", "refs/heads/main"], in: other.bare)
        try gitOK(["fetch", "-q", other.bare.path, "refs/heads/main:refs/heads/foreign"], in: scene.remote.bare)
        try scene.forger.run(["update-ref", "refs/heads/main", foreign])
        try assertSyncRefused(scene, commit: foreign, mentions: []) 
    }

    func testAProfileFileNamingAnotherProfileIsRefused() throws {
        let scene = try makeScene()
        let info = try String(contentsOf: scene.bobProfile.appendingPathComponent(".concord/profile.json"), encoding: .utf8)
        let id = try XCTUnwrap(info.range(of: #""id": "[^"]+""#, options: .regularExpression))
        let forged = info.replacingCharacters(in: id, with: #""id": "00000000-0000-0000-0000-000000000000""#)
        let commit = try scene.forger.push(try scene.forger.file(forged), at: ".concord/profile.json")
        try assertSyncRefused(scene, commit: commit, mentions: [".concord/profile.json", "another profile"])
    }

    func testADeletedMainIsReportedAndRestoredByTheNextSync() throws {
        try assertDeletedMainReportedAndRestored(.path)
    }

    /// Over ssh Bob's sync, having a commit to send, first tries the push alone (`Sync.pushAhead`):
    /// its compare-and-swap sees main gone and sends nothing, and the sync fetches and reports as above.
    func testOverSSHADeletedMainIsReportedAndRestored() throws {
        try assertDeletedMainReportedAndRestored(.ssh)
    }

    func testARewoundMainIsReportedAndRestored() throws {
        try assertRewoundMainReportedAndRestored(.path)
    }

    func testOverSSHARewoundMainIsReportedAndRestored() throws {
        try assertRewoundMainReportedAndRestored(.ssh)
    }

    func assertDeletedMainReportedAndRestored(_ transport: SyncTransport, file: StaticString = #filePath, line: UInt = #line) throws {
        let scene = try makeScene(transport)
        let main = try XCTUnwrap(try remoteMain(scene.remote))
        try gitOK(["update-ref", "-d", "refs/heads/main"], in: scene.remote.bare)
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.bob, in: scene.bobProfile)
        let result = try concord(["sync"], as: scene.bob, in: scene.bobProfile)
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains("deleted"), "the deletion is reported: \(result.stderr)", file: file, line: line)
        XCTAssertEqual(try remoteMain(scene.remote), try revParse("HEAD", in: scene.bobProfile), file: file, line: line)
        XCTAssertTrue(try git(["merge-base", "--is-ancestor", main, "refs/heads/main"], in: scene.remote.bare).status == 0, file: file, line: line)
        try assertFsck(scene.remote.bare, file: file, line: line)
    }

    /// main set back one commit on the server while Bob has a commit of his own to send: reported,
    /// and Bob's history (with the lost commit) pushed back.
    func assertRewoundMainReportedAndRestored(_ transport: SyncTransport, file: StaticString = #filePath, line: UInt = #line) throws {
        let scene = try makeScene(transport)
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile)
        try gitOK(["update-ref", "refs/heads/main", "refs/heads/main~1"], in: scene.remote.bare)
        try concordOK(["put", "vocabulary/dog", "--json", #"{"label":"dog"}"#], as: scene.bob, in: scene.bobProfile)
        let head = try revParse("HEAD", in: scene.bobProfile)
        let result = try concord(["sync"], as: scene.bob, in: scene.bobProfile)
        XCTAssertEqual(result.status, 0, result.stderr, file: file, line: line)
        XCTAssertTrue(result.stderr.contains("went back"), "the rewind is reported: \(result.stderr)", file: file, line: line)
        XCTAssertEqual(try remoteMain(scene.remote), head, file: file, line: line)
        XCTAssertEqual(try revParse("HEAD", in: scene.bobProfile), head, file: file, line: line)
    }

    /// Alice's `change` (made and synced, and fetched by Bob) is dropped on the server: main is
    /// set back to the commit before it, and Alice's signed `dog` commit, made on that older tip
    /// with plain git, is put on top (a device that never had the dropped commit pushing).
    /// Returns the commit Bob had fetched.
    func rewriteMain(_ scene: Scene, dropping change: [String]) throws -> String {
        let base = try revParse("HEAD", in: scene.aliceProfile)
        try concordOK(change, as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile)
        let fetched = try revParse("refs/remotes/origin/main", in: scene.bobProfile)
        try gitOK(["reset", "-q", "--hard", base], in: scene.aliceProfile)
        try concordOK(["put", "vocabulary/dog", "--json", #"{"label":"dog"}"#], as: scene.alice, in: scene.aliceProfile)
        // The remote refuses non-fast-forward pushes: the server's own git moves main.
        try gitOK(["push", "-q", scene.remote.bare.path, "HEAD:refs/heads/rewrite"], in: scene.aliceProfile)
        try gitOK(["update-ref", "refs/heads/main", "refs/heads/rewrite"], in: scene.remote.bare)
        return fetched
    }

    /// main rewound on the server past a commit that changed records only, and a commit pushed on
    /// top since: Bob says so, merges the new commit, and his push puts the dropped one back —
    /// on every later sync nothing is refused (a lock-out of every device that had it, before).
    func testARewoundMainWithCommitsOnTopIsMergedAndTheDroppedCommitsPushedBack() throws {
        let scene = try makeScene()
        let fetched = try rewriteMain(scene, dropping: ["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#])
        let result = try concord(["sync"], as: scene.bob, in: scene.bobProfile)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertTrue(result.stderr.contains("main was rewritten on the server") && result.stderr.contains(String(fetched.prefix(7))),
                      "the rewrite is reported: \(result.stderr)")
        XCTAssertTrue(try concordOK(["get", "vocabulary/cat"], as: scene.bob, in: scene.bobProfile).contains("cat"))
        XCTAssertTrue(try concordOK(["get", "vocabulary/dog"], as: scene.bob, in: scene.bobProfile).contains("dog"))
        XCTAssertEqual(try remoteMain(scene.remote), try revParse("HEAD", in: scene.bobProfile))
        XCTAssertEqual(try git(["merge-base", "--is-ancestor", fetched, "refs/heads/main"], in: scene.remote.bare).status, 0,
                       "the dropped commit is back on the remote")
        try concordOK(["sync"], as: scene.bob, in: scene.bobProfile)
        try assertFsck(scene.remote.bare)
    }

    /// main rewritten on the server past a commit that changed the membership (here, Alice adding
    /// Carol): the history pushed on top may rest on access that commit changed, so Bob merges none
    /// of it, says so, and keeps refusing it on the next sync.
    func testARewrittenMainThatDroppedAMembershipChangeIsRefusedAndNothingOfItIsMerged() throws {
        let scene = try makeScene()
        let carol = try makeDevice("carol", device: "phone")
        let fetched = try rewriteMain(scene, dropping: ["members", "add", "carol", "--role", "viewer", "--key", carol.publicKeyLine,
                                                        "--device", "phone"])
        let before = try untouched(scene)
        for _ in 0..<2 {
            let result = try concord(["sync"], as: scene.bob, in: scene.bobProfile)
            assertOneLineRefusal(result, status: 5, mentions: ["main was rewritten on the server", String(fetched.prefix(7)),
                                                               "members, invitations or kinds"])
            XCTAssertEqual(try untouched(scene), before, "a refused rewrite changed Bob's profile")
        }
    }

    /// An Admin's commit (plain git, signed with Alice's key) that sets profile.json back to an
    /// older data format is an invalid commit: accepted, it left every device unable to open the profile.
    func testAProfileFileChangingTheDataFormatIsRefused() throws {
        let scene = try makeScene()
        let current = try String(contentsOf: scene.aliceProfile.appendingPathComponent(".concord/profile.json"), encoding: .utf8)
        let version = try XCTUnwrap(current.range(of: #""formatVersion": [0-9]+"#, options: .regularExpression))
        for older in [2, 3] {
            let forged = current.replacingCharacters(in: version, with: "\"formatVersion\": \(older)")
            let commit = try scene.forger.push(try scene.forger.file(forged), at: ".concord/profile.json")
            try assertSyncRefused(scene, commit: commit, mentions: [".concord/profile.json", "data format"])
            try gitOK(["update-ref", "refs/heads/main", "refs/heads/main~1"], in: scene.remote.bare)
        }
        try concordOK(["ls"], as: scene.bob, in: scene.bobProfile)
    }

    // MARK: Clone

    func testACloneOfAForgedHistoryFailsAndLeavesNothing() throws {
        let scene = try makeScene()
        try scene.forger.push(try scene.forger.file("pwned\n"), at: "../escaped")
        let carol = try makeDevice("carol", device: "phone")
        let target = sandbox.appendingPathComponent("carol")
        let result = try concordWithDeadline(["clone", scene.remote.url, target.path], as: carol, in: sandbox)
        assertOneLineRefusal(result, status: 5, mentions: ["invalid commit", "../escaped"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "a failed clone leaves nothing")
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("escaped").path))
    }

    /// A record over the 1 MiB limit is refused from the size its object declares, unread: its
    /// loose object here holds only the first 2,000 of the 2 MiB its header declares, so reading
    /// it whole (as the fetch did before) fails as "damaged" instead. Sync and clone: exit 5,
    /// naming the commit and the path; nothing changes, the failed clone leaves nothing.
    func testAnOversizedRecordIsRefusedFromItsDeclaredSizeUnread() throws {
        let scene = try makeScene()
        let (path, good) = try puzzleRecord(scene)
        let big = Array((String(repeating: " ", count: 2 << 20) + good).utf8)
        let blob = try scene.forger.blob(Data(big))
        let commit = try scene.forger.push(Forger.Entry(mode: "100644", name: [], id: blob), at: path)
        let file = scene.remote.bare.appendingPathComponent("objects/\(blob.prefix(2))/\(blob.dropFirst(2))")
        try FileManager.default.removeItem(at: file)
        try Data(zlibStored(Array("blob \(big.count)\0".utf8) + big.prefix(2_000))).write(to: file)
        fsckAtEnd.removeAll { $0 == scene.remote.bare }   // its object is cut short on purpose

        try assertSyncRefused(scene, commit: commit, mentions: [path, "\(big.count) bytes, over the 1048576-byte limit"])
        let carol = try makeDevice("carol", device: "phone")
        let clone = sandbox.appendingPathComponent("carol")
        let result = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox)
        assertOneLineRefusal(result, status: 5, mentions: ["invalid commit", String(commit.prefix(7)), path, "over the 1048576-byte limit"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "a failed clone leaves nothing")
    }

    /// Deltas libgit2 must never be handed, in a pack of a path remote holding a new record's
    /// blob: a delta whose base is itself (libgit2 1.5.1 spun forever, holding the profile lock),
    /// two deltas each the other's base, and a chain whose middle object declares 100 MiB (libgit2
    /// rebuilt it: 4 GB taken for a 7 MB pack). Sync and clone refuse each with one line, at once.
    func testDeltaCyclesAndBombsInARemotePackAreRefusedWithoutHangingOrRebuilding() throws {
        let scene = try makeScene()
        let (path, good) = try puzzleRecord(scene)
        let record = Array(good.replacingOccurrences(of: "\"puzzle\"\n  }", with: "\"changed\"\n  }").utf8)
        let puzzle = Array(good.utf8)
        let main = try revParse("refs/remotes/origin/main", in: scene.bobProfile)
        let blobHex = try scene.forger.blob(Data(record))
        let blob = try XCTUnwrap(ObjectID(hex: blobHex)), other = ObjectPack.id(of: Array("other".utf8), type: .blob)
        let puzzleID = ObjectPack.id(of: puzzle, type: .blob), middle = ObjectPack.id(of: Array("middle".utf8), type: .blob)
        let insert = HandPack.delta(baseSize: record.count, resultSize: record.count, inserting: Array("x".utf8))
        let cases: [(name: String, entries: [(id: ObjectID, entry: HandPack.Entry)], mention: String)] = [
            ("self", [(blob, .refDelta(base: blob, data: insert))], "leads back to itself"),
            ("pair", [(blob, .refDelta(base: other, data: insert)), (other, .refDelta(base: blob, data: insert))], "leads back to itself"),
            ("bomb", [(puzzleID, .whole(type: 3, bytes: puzzle)),
                      (middle, .refDelta(base: puzzleID, data: HandPack.delta(baseSize: puzzle.count, resultSize: 100 << 20, inserting: [0x20]))),
                      (blob, .refDelta(base: middle, data: HandPack.delta(baseSize: 100 << 20, resultSize: record.count, inserting: [0x20])))],
             "rebuilding 104857600 bytes, over the 67108864-byte limit"),
        ]
        let objects = scene.remote.bare.appendingPathComponent("objects")
        let loose = objects.appendingPathComponent("\(blobHex.prefix(2))/\(blobHex.dropFirst(2))")
        for item in cases {
            try scene.forger.run(["update-ref", "refs/heads/main", main])
            let commit = try scene.forger.push(Forger.Entry(mode: "100644", name: [], id: blobHex), at: path)
            try? FileManager.default.removeItem(at: loose)   // the blob is in the hand-made pack only
            try HandPack.write(item.entries, name: String(repeating: "e", count: 40), into: objects.appendingPathComponent("pack"))
            let before = try untouched(scene)
            let sync = try concordWithDeadline(["sync"], as: scene.bob, in: scene.bobProfile, seconds: 30)
            XCTAssertFalse(sync.timedOut, "\(item.name): sync hung")
            assertOneLineRefusal(sync, mentions: ["pack", item.mention])
            XCTAssertEqual(try untouched(scene), before, "\(item.name): a refused sync changed something")
            let clone = sandbox.appendingPathComponent("carol-\(item.name)")
            let carol = try makeDevice("carol-\(item.name)", device: "phone")
            let cloned = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox, seconds: 30)
            XCTAssertFalse(cloned.timedOut, "\(item.name): clone hung")
            assertOneLineRefusal(cloned, mentions: ["pack", item.mention])
            XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "a failed clone leaves nothing")
            _ = commit
            for suffix in [".pack", ".idx"] {
                try FileManager.default.removeItem(at: objects.appendingPathComponent("pack/pack-\(String(repeating: "e", count: 40))\(suffix)"))
            }
            try Data(zlibStored(Array("blob \(record.count)\0".utf8) + record)).write(to: loose)
        }
        try assertFsck(scene.bobProfile)
    }

    /// A path remote whose record blob was swapped for other content under the same name: a clone
    /// re-hashes every object it copies (it used to link the files), fails with one line and
    /// leaves nothing; a sync of an existing device refuses the same object.
    func testASwappedBlobInAPathRemoteFailsCloneAndSync() throws {
        let scene = try makeScene()
        // The remote's blob file is swapped for another object's bytes on purpose (a hash mismatch).
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let path = "vocabulary/\(try bucket(of: "cat", scene))/cat.json"
        let blob = try gitOK(["rev-parse", "refs/heads/main:\(path)"], in: scene.remote.bare)
        // Every object of the remote loose (packs moved out, then unpacked), then the blob's file
        // holding another blob's bytes.
        let objects = scene.remote.bare.appendingPathComponent("objects")
        let moved = try makeDirectory("moved-packs")
        for name in try FileManager.default.contentsOfDirectory(atPath: objects.appendingPathComponent("pack").path) {
            try FileManager.default.moveItem(at: objects.appendingPathComponent("pack/" + name), to: moved.appendingPathComponent(name))
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: moved.path) where name.hasSuffix(".pack") {
            try ProcessRunner.runOK("/bin/sh", ["-c", "git unpack-objects -q < " + ProcessRunner.shellQuoted(moved.appendingPathComponent(name).path)],
                                  environment: environment(), in: scene.remote.bare)
        }
        let forged = try scene.forger.blob(Data(#"{"forged": true}"#.utf8))
        let target = objects.appendingPathComponent("\(blob.prefix(2))/\(blob.dropFirst(2))")
        try FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: objects.appendingPathComponent("\(forged.prefix(2))/\(forged.dropFirst(2))"), to: target)

        let carol = try makeDevice("carol", device: "phone")
        let clone = sandbox.appendingPathComponent("carol")
        let result = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox)
        assertOneLineRefusal(result, mentions: [blob, "does not match its content"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "a failed clone leaves nothing")
        let before = try untouched(scene)
        let sync = try concordWithDeadline(["sync"], as: scene.bob, in: scene.bobProfile)
        assertOneLineRefusal(sync, mentions: [blob, "does not match its content"])
        XCTAssertEqual(try untouched(scene), before)
    }

    func testOverSSHTheSameCommitIsRefused() throws {
        let scene = try makeScene(.ssh)
        let commit = try scene.forger.push(try scene.forger.file("pwned\n"), at: "../escaped")
        try assertSyncRefused(scene, commit: commit, mentions: ["../escaped"])
    }

    // MARK: B. Objects

    /// A loose object whose header understates its size (libgit2 1.5.1 overflows its heap on it)
    /// and one cut short (libgit2 spins in inflate): each fails the sync with one line, at once.
    func testDamagedLooseObjectsFailTheSyncWithoutCrashOrHang() throws {
        let scene = try makeScene()
        // Loose object files in the remote are damaged on purpose.
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        let content = Array(#"{"data":{"label":"x"}}"#.utf8)
        let variants: [(name: String, bytes: [UInt8])] = [
            ("understated", zlibStored(Array("blob 1\u{0}".utf8) + content)),
            ("truncated", Array(zlibStored(Array("blob \(content.count)\u{0}".utf8) + content).prefix(12))),
            ("garbage", Array(repeating: 0x41, count: 64)),
        ]
        for variant in variants {
            try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
            let path = "vocabulary/\(try bucket(of: "x-\(variant.name)", scene))/x-\(variant.name).json"
            let entry = try scene.forger.file(#"{"variant":"\#(variant.name)"}"#)
            try scene.forger.push(entry, at: path)
            let file = scene.remote.bare.appendingPathComponent("objects/\(entry.id.prefix(2))/\(entry.id.dropFirst(2))")
            try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
            try Data(variant.bytes).write(to: file)
            let before = try untouched(scene)
            let result = try concordWithDeadline(["sync"], as: scene.bob, in: scene.bobProfile)
            XCTAssertFalse(result.timedOut, "\(variant.name): sync hung")
            assertOneLineRefusal(result, status: 1, mentions: [entry.id])
            XCTAssertEqual(try untouched(scene), before, "\(variant.name): a failed sync changed something")
        }
        try assertFsck(scene.bobProfile)
    }

    /// A path remote's pack files are read by concord's own reader (libgit2 only for deltas):
    /// seeded damage to a pack or its index — a flipped byte, a cut, a run of garbage, an
    /// emptied file — gets each clone refused with one line and nothing left behind, or, where
    /// the damage touched nothing the profile needs, a whole clone git finds complete. Never a
    /// crash or a hang.
    func testDamagedPackFilesGetACloneRefusedOrLeaveItWhole() throws {
        let scene = try makeScene()
        for n in 0..<6 {
            try concordOK(["put", "vocabulary/word\(n)", "--json", #"{"label":"word \#(n)"}"#], as: scene.alice, in: scene.aliceProfile)
        }
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let main = try gitOK(["rev-parse", "refs/heads/main"], in: scene.remote.bare)
        let packDirectory = scene.remote.bare.appendingPathComponent("objects/pack")
        let names = try FileManager.default.contentsOfDirectory(atPath: packDirectory.path).filter { $0.hasSuffix(".pack") || $0.hasSuffix(".idx") }
        XCTAssertFalse(names.isEmpty)
        var pristine = [String: Data]()
        for name in names {
            let path = packDirectory.appendingPathComponent(name).path
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            pristine[name] = try Data(contentsOf: URL(fileURLWithPath: path))
        }
        let carol = try makeDevice("carol", device: "phone")
        var random = SeededGenerator(seed: 0x9ACC)
        var refused = 0, whole = 0
        for number in 0..<150 {
            let name = names.sorted()[Int.random(in: 0..<names.count, using: &random)]
            var bytes = Array(try XCTUnwrap(pristine[name]))
            let at = Int.random(in: 0..<bytes.count, using: &random)
            let mutation: String
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                bytes[at] ^= UInt8.random(in: 1...255, using: &random)
                mutation = "byte \(at) flipped"
            case 1:
                bytes = Array(bytes.prefix(at))
                mutation = "cut at \(at)"
            case 2:
                for index in at..<min(bytes.count, at + 16) { bytes[index] = UInt8.random(in: 0...255, using: &random) }
                mutation = "16 bytes of garbage at \(at)"
            default:
                bytes = []
                mutation = "emptied"
            }
            let context = "case \(number): \(name) \(mutation)"
            try Data(bytes).write(to: packDirectory.appendingPathComponent(name))
            let clone = sandbox.appendingPathComponent("clone-\(number)")
            let result = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox, seconds: 30)
            try Data(try XCTUnwrap(pristine[name])).write(to: packDirectory.appendingPathComponent(name))
            XCTAssertFalse(result.timedOut, "\(context): the clone hung")
            XCTAssertLessThan(result.status, 128, "\(context): the clone crashed: \(result.stderr)")
            if result.status == 0 {
                whole += 1
                XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: clone), main, context)
                XCTAssertEqual(try gitOK(["status", "--porcelain"], in: clone), "", context)
                try assertFsck(clone)
                try FileManager.default.removeItem(at: clone)
            } else {
                refused += 1
                assertOneLineRefusal(result, status: result.status, mentions: [])
                XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "\(context): a failed clone leaves nothing")
            }
        }
        print("damaged packs: \(refused) clones refused, \(whole) whole")
        XCTAssertGreaterThan(refused, 20, "refused \(refused), whole \(whole)")
        XCTAssertGreaterThan(whole, 0, "refused \(refused), whole \(whole)")
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
