import ConcordTestSupport
import Foundation
import XCTest

/// Over ssh, a device with commits on top of what it last fetched syncs by the push alone (one
/// connection, `Sync.pushAhead`); when the server's main moved meanwhile, nothing is sent by that
/// push and the sync fetches, merges and pushes as always.
final class SyncPushFirstTests: ConcordTestCase {
    func testAWriterSyncsInOneConnectionAndALateWriterStillMerges() throws {
        let scene = try makeTwoDevices(.ssh)
        let server = try XCTUnwrap(scene.remote.server)
        func connections() -> Int { server.log.components(separatedBy: "Accepted publickey").count - 1 }

        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["put", "vocabulary/dog", "--json", #"{"label":"dog"}"#], as: scene.other, in: scene.otherProfile)
        let before = connections()
        let laptop = try syncJSON(scene.owner, in: scene.ownerProfile)
        XCTAssertEqual(connections() - before, 1, "a sync with only local commits to send is one push:\n\(server.log)")
        XCTAssertEqual(laptop.sent, 1)
        XCTAssertEqual(laptop.received, 0)
        XCTAssertEqual(try remoteMain(scene.remote), try revParse("HEAD", in: scene.ownerProfile))
        XCTAssertEqual(try revParse("refs/remotes/origin/main", in: scene.ownerProfile), try revParse("HEAD", in: scene.ownerProfile))

        // The tablet's main is behind the server now: its push first sends nothing, then it fetches, merges, pushes.
        let tabletBefore = try revParse("HEAD", in: scene.otherProfile)
        let tablet = try syncJSON(scene.other, in: scene.otherProfile)
        XCTAssertEqual(tablet.received, 1)
        XCTAssertGreaterThanOrEqual(tablet.sent, 1)
        let merged = try revParse("HEAD", in: scene.otherProfile)
        XCTAssertNotEqual(merged, tabletBefore)
        XCTAssertEqual(try remoteMain(scene.remote), merged)
        XCTAssertEqual(try gitOK(["cat-file", "-t", "\(laptop.head)"], in: scene.remote.bare), "commit")
        XCTAssertEqual(try git(["merge-base", "--is-ancestor", laptop.head, merged], in: scene.otherProfile).status, 0)
        for id in ["cat", "dog"] {
            XCTAssertEqual(try concord(["get", "vocabulary/\(id)"], as: scene.other, in: scene.otherProfile).status, 0, "\(id) missing on the tablet")
        }
        let laptopAgain = try syncJSON(scene.owner, in: scene.ownerProfile)
        XCTAssertEqual(laptopAgain.head, merged)
        try assertFsck(scene.remote.bare)
    }
}
