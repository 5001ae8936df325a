import ConcordGitFormats
import ConcordTestSupport
import Foundation
import XCTest

/// Hostile remotes, continued: a remote's history that is not this profile's, or that was
/// deleted, rewound or rewritten (the scene and the checks are HostileRemoteTests').
extension HostileRemoteTests {
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
}
