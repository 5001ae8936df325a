import ConcordTestSupport
import Foundation
import XCTest

/// `concord remote add | list | remove`: URLs are checked when added, names are unique, every refusal is
/// one line and exit 1. Adding and listing never connect, so the ssh URLs need no server.
final class SyncRemoteCommandTests: ConcordTestCase {
    func testRemoteCommandsWithAPathURL() throws {
        let bare = sandbox.appendingPathComponent("remote.git")
        try manageRemotes(url: bare.path, listed: bare.path)
    }

    func testRemoteCommandsWithAnSSHURL() throws {
        let url = "ssh://alice@127.0.0.1:2222/srv/concord/remote.git"
        try manageRemotes(url: url, listed: url)
    }

    private func manageRemotes(url: String, listed: String) throws {
        let laptop = try makeDevice("alice", device: "laptop")
        let profile = sandbox.appendingPathComponent("laptop")
        try concordOK(["init", profile.path, "--name", "Shared", "--template", "aac"], as: laptop)
        XCTAssertEqual(try concordOK(["remote", "list"], as: laptop, in: profile), "")

        XCTAssertEqual(try concordOK(["remote", "add", "origin", url], as: laptop, in: profile), "added remote origin")
        if !url.hasPrefix("ssh://") {
            assertOneLineRefusal(try concord(["remote", "trust", "origin"], as: laptop, in: profile),
                                 mentions: ["origin is a path remote"])
        }
        XCTAssertEqual(try concordOK(["remote", "list"], as: laptop, in: profile), "origin  \(listed)")
        let json = try concordOK(["remote", "list", "--json"], as: laptop, in: profile)
        let entries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: String]], json)
        XCTAssertEqual(entries, [["name": "origin", "url": listed]])

        let before = try gitOK(["config", "--get-regexp", "^remote\\."], in: profile)
        assertOneLineRefusal(try concord(["remote", "add", "origin", "/somewhere/else.git"], as: laptop, in: profile),
                             mentions: ["origin", "already exists"])
        assertOneLineRefusal(try concord(["remote", "remove", "backup"], as: laptop, in: profile),
                             mentions: ["backup", "concord remote add"])
        for unsupported in ["http://example.com/remote.git", "https://example.com/remote.git", "ftp://example.com/x.git"] {
            assertOneLineRefusal(try concord(["remote", "add", "web", unsupported], as: laptop, in: profile),
                                 mentions: [unsupported, "not a supported remote"])
        }
        assertOneLineRefusal(try concord(["remote", "add", "bad name", url], as: laptop, in: profile),
                             mentions: ["bad name"])
        XCTAssertEqual(try gitOK(["config", "--get-regexp", "^remote\\."], in: profile), before,
                       "a refused remote command changed the git config")

        XCTAssertEqual(try concordOK(["remote", "add", "backup", url], as: laptop, in: profile), "added remote backup")
        XCTAssertEqual(try concordOK(["remote", "list"], as: laptop, in: profile), "backup  \(listed)\norigin  \(listed)")
        XCTAssertEqual(try concordOK(["remote", "remove", "origin"], as: laptop, in: profile), "removed remote origin")
        XCTAssertEqual(try concordOK(["remote", "list"], as: laptop, in: profile), "backup  \(listed)")
        assertOneLineRefusal(try concord(["remote", "remove", "origin"], as: laptop, in: profile), mentions: ["origin"])
        assertOneLineRefusal(try concord(["sync"], as: laptop, in: profile), mentions: ["no remote named \"origin\""])
        assertOneLineRefusal(try concord(["status"], as: laptop, in: profile), mentions: ["no remote named \"origin\""])
    }
}
