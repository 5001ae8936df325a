import ConcordGit
@testable import ConcordEngine
@testable import ConcordKit
import ConcordServer
import ConcordTestSupport
import Foundation
import XCTest

/// The pack a concord server sends with a `concord-wait` answer (`ServerWait.pack`) stands in for
/// the sync's fetch (`SyncPipeline.transport`): taken like a fetched pack, checked commit by commit
/// like one, and, when it does not index, replaced by the fetch. Here the remote is a path whose
/// repository is moved away once the pack is made, so a sync that fetched would fail offline.
extension HostileRemoteTests {
    /// Bob's sync with the pack of the remote's main beyond Bob's last fetch, the remote gone.
    func syncWithPackAndNoRemote(_ scene: Scene, pack override: [UInt8]? = nil) throws -> Result<SyncReport, Error> {
        let tracking = try XCTUnwrap(ObjectID(hex: try revParse("refs/remotes/origin/main", in: scene.bobProfile)))
        let main = try XCTUnwrap(ObjectID(hex: try XCTUnwrap(try remoteMain(scene.remote))))
        let pack = try override ?? XCTUnwrap(ServerWait.pack(repository: scene.remote.bare.path, from: tracking, to: main),
                                            "git pack-objects made no pack")
        XCTAssertEqual(Array(pack.prefix(4)), Array("PACK".utf8))
        let away = sandbox.appendingPathComponent("remote-away")
        try FileManager.default.moveItem(at: scene.remote.bare, to: away)
        defer { try? FileManager.default.moveItem(at: away, to: scene.remote.bare) }
        let profile = try Profile.open(at: scene.bobProfile, environment: ConcordEnvironment(home: scene.bob.home))
        let bob = try Identity.load(from: scene.bob.home)
        return Result { try profile.sync.run(remote: "origin", as: bob, prefetched: PrefetchedPack(base: tracking, tip: main, bytes: pack)) }
    }

    func testAPackSentWithTheWaitIsTakenWithoutAFetch() throws {
        let scene = try makeScene()
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let report = try syncWithPackAndNoRemote(scene).get()
        XCTAssertEqual(report.received, 1)
        XCTAssertEqual(report.head, try revParse("HEAD", in: scene.aliceProfile))
        XCTAssertEqual(try revParse("refs/remotes/origin/main", in: scene.bobProfile), report.head)
        XCTAssertEqual(try concord(["get", "vocabulary/cat"], as: scene.bob, in: scene.bobProfile).status, 0)
        try assertFsck(scene.bobProfile)
    }

    /// A server that sends a forged commit with its answer gets what a forged fetch gets: exit-5
    /// refusal naming the commit and the path, and nothing of Bob's changes.
    func testAForgedCommitInAPackSentWithTheWaitIsRefused() throws {
        let scene = try makeScene()
        let commit = try scene.forger.push(try scene.forger.file("pwned\n"), at: "../escaped")
        let before = try untouched(scene)
        let result = try syncWithPackAndNoRemote(scene)
        guard case .failure(let error) = result else { return XCTFail("the forged commit was taken") }
        guard case ConcordError.invalidCommit = error else { return XCTFail("not refused as an invalid commit: \(error)") }
        XCTAssertTrue(error.localizedDescription.contains(String(commit.prefix(7))) && error.localizedDescription.contains("../escaped"),
                      error.localizedDescription)
        XCTAssertEqual(try untouched(scene), before, "a refused pack changed something")
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("escaped").path))
        try assertFsck(scene.bobProfile)
    }

    /// Bytes that are not a pack (cut short, here) are dropped and the sync fetches as usual: with
    /// the remote away, that fetch fails offline, and nothing of Bob's changed.
    func testAPackThatDoesNotIndexIsDroppedForTheFetch() throws {
        let scene = try makeScene()
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let tracking = try XCTUnwrap(ObjectID(hex: try revParse("refs/remotes/origin/main", in: scene.bobProfile)))
        let main = try XCTUnwrap(ObjectID(hex: try XCTUnwrap(try remoteMain(scene.remote))))
        let pack = try XCTUnwrap(ServerWait.pack(repository: scene.remote.bare.path, from: tracking, to: main))
        let before = try untouched(scene)
        guard case .failure(let error) = try syncWithPackAndNoRemote(scene, pack: Array(pack.dropLast(30))) else {
            return XCTFail("a cut pack was taken")
        }
        guard case ConcordError.offline = error else { return XCTFail("the sync did not go on to fetch: \(error)") }
        XCTAssertEqual(try untouched(scene), before)
        // With the remote back, the same sync fetches and takes Alice's commit.
        let profile = try Profile.open(at: scene.bobProfile, environment: ConcordEnvironment(home: scene.bob.home))
        let report = try profile.sync.run(remote: "origin", as: try Identity.load(from: scene.bob.home),
                                          prefetched: PrefetchedPack(base: tracking, tip: main, bytes: Array(pack.dropLast(30))))
        XCTAssertEqual(report.received, 1)
        XCTAssertEqual(report.head, main.hex)
    }
}
