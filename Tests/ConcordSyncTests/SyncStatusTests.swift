import ConcordTestSupport
import Foundation
import XCTest

/// `concord status`: ahead/behind as of the last fetch, and when the last sync succeeded.
final class SyncStatusTests: ConcordTestCase {
    func testStatusAheadThenSyncedOverAPath() throws { try statusFollowsSync(.path) }

    func testStatusAheadThenSyncedOverSSH() throws { try statusFollowsSync(.ssh) }

    private func statusFollowsSync(_ transport: SyncTransport) throws {
        let scene = try makeTwoDevices(transport)
        let (remote, laptop, tablet, source, target) = (scene.remote, scene.owner, scene.other, scene.ownerProfile, scene.otherProfile)

        try concordOK(["put", "vocabulary/new", "--json", #"{"label":"new"}"#], as: laptop, in: source)
        let pending = try statusJSON(laptop, in: source)
        XCTAssertEqual(pending["ahead"] as? Int, 1)
        XCTAssertEqual(pending["behind"] as? Int, 0)
        XCTAssertEqual(pending["remote"] as? String, "origin")
        XCTAssertEqual(pending["url"] as? String, remote.url)
        let publishedAt = try XCTUnwrap(pending["lastSync"] as? String, "publishing was a sync")

        let summary = try syncJSON(laptop, in: source)
        XCTAssertEqual(summary.sent, 1)
        let synced = try statusJSON(laptop, in: source)
        XCTAssertEqual(synced["ahead"] as? Int, 0)
        XCTAssertEqual(synced["behind"] as? Int, 0)
        let lastSync = try XCTUnwrap(synced["lastSync"] as? String, "sync did not record lastSync")
        XCTAssertGreaterThanOrEqual(lastSync, publishedAt, "lastSync went backwards")

        // The other device is behind only once it has fetched; status itself never touches the network.
        XCTAssertEqual(try statusJSON(tablet, in: target)["behind"] as? Int, 0)
        XCTAssertEqual(try syncJSON(tablet, in: target).received, 1)
        let caughtUp = try statusJSON(tablet, in: target)
        XCTAssertEqual(caughtUp["ahead"] as? Int, 0)
        XCTAssertEqual(caughtUp["behind"] as? Int, 0)
        XCTAssertEqual(try revParse("HEAD", in: target), try revParse("HEAD", in: source))

        let text = try concordOK(["status"], as: laptop, in: source)
        XCTAssertTrue(text.contains("ahead 0, behind 0"), text)
        XCTAssertTrue(text.contains(lastSync), text)
    }
}
