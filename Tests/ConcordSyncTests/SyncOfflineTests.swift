import ConcordTestSupport
import Foundation
import XCTest

/// An unreachable remote: `sync` exits 3 with one line saying how many local commits are kept, changes
/// nothing, and the next sync after the remote is back sends them.
final class SyncOfflineTests: ConcordTestCase {
    func testOfflinePathRemoteKeepsCommitsUntilItIsBack() throws { try offlineKeepsCommits(.path) }

    func testOfflineSSHRemoteKeepsCommitsUntilItIsBack() throws { try offlineKeepsCommits(.ssh) }

    private func offlineKeepsCommits(_ transport: SyncTransport) throws {
        let remote = try makeRemote(transport)
        let laptop = try makeDevice("alice", device: "laptop")
        let profile = try publishProfile(owner: laptop, remote: remote, directory: "laptop")
        let published = try XCTUnwrap(try remoteMain(remote))
        for word in ["one", "two", "three"] {
            try concordOK(["put", "vocabulary/\(word)", "--json", #"{"label":"\#(word)"}"#], as: laptop, in: profile)
        }
        let before = try workTreeSnapshot(profile)
        let head = try revParse("HEAD", in: profile)

        // Take the remote away: the directory is renamed, or sshd stops listening.
        let moved = sandbox.appendingPathComponent("remote-away.git")
        switch transport {
        case .path: try FileManager.default.moveItem(at: remote.bare, to: moved)
        case .ssh: remote.server?.stop()
        }
        let offline = try concord(["sync"], as: laptop, in: profile)
        assertOneLineRefusal(offline, status: 3, prefix: "concord: offline:",
                             mentions: ["origin", "your 3 local commits are kept"])
        XCTAssertEqual(try workTreeSnapshot(profile), before, "an offline sync changed the profile")
        XCTAssertEqual(try revParse("HEAD", in: profile), head)
        XCTAssertEqual(try statusJSON(laptop, in: profile)["ahead"] as? Int, 3)

        // Bring it back: the commits arrive.
        switch transport {
        case .path: try FileManager.default.moveItem(at: moved, to: remote.bare)
        case .ssh: try remote.server?.start()
        }
        XCTAssertEqual(try remoteMain(remote), published, "the remote moved while it was away")
        let summary = try syncJSON(laptop, in: profile)
        XCTAssertEqual(summary.sent, 3)
        XCTAssertEqual(summary.received, 0)
        XCTAssertEqual(try remoteMain(remote), head, "the kept commits did not reach the remote")
        XCTAssertEqual(try revParse("HEAD", in: profile), head, "sending must not rewrite local commits")
        XCTAssertEqual(try statusJSON(laptop, in: profile)["ahead"] as? Int, 0)
    }
}
