import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// OldFormatForkTests through `concord serve` behind a real sshd: a fork from a commit of an older
/// data format, merged into main and pushed, is judged by the format where it joins the main line.
/// The pre-receive refuses a merge that keeps what that format forbids (pushed with plain git);
/// `concord merge` and `sync` leave a fallen key decision out, and the server's main never holds it.
final class ServeOldFormatForkTests: ConcordServeTestCase {
    /// Mallory (Viewer), on her format 4 copy, lists zed's public key (an Admin added after the
    /// upgrade) as her device. Merged by git keeping her side and pushed: refused, the server's main
    /// unchanged. Merged by concord and synced: the decision does not count; zed's key stays his, and
    /// his revocation of mallory goes through the server.
    func testAFormat4ForkCannotListAnAdminsKeyThroughServe() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let mallory = try makeDevice("mallory", device: "phone")
        let zed = try makeDevice("zed", device: "desk")
        let host = try makeHost(admin: alice)
        let profile = try publish("kid", on: host, members: [(mallory, "viewer")], format: (4, concordFormatVersion))
        let (cloned, malloryCopy) = try cloneThroughServer("kid", as: mallory, host: host)
        XCTAssertEqual(cloned.status, 0, cloned.summary)
        let old = try revParse("HEAD", in: malloryCopy)
        try concordOK(["members", "add", "zed", "--role", "admin", "--key", zed.publicKeyLine, "--device", "desk"], as: alice, in: profile)
        try upgradeAndSync(alice, profile, then: [(mallory, malloryCopy)])
        let fork = try commitOnABranch(from: old, in: malloryCopy, signedWith: mallory.keyFile, message: "members/mallory: devices") { clone in
            try self.editMember("mallory", in: clone) { member in
                member["keys"] = (member["keys"] as? [Any] ?? []) + [["device": "desk2", "publicKey": self.keyLine(zed.publicKeyLine)]]
            }
        }
        try gitOK(["checkout", "--quiet", "old"], in: malloryCopy)
        let start = try serverMain("kid", host: host)
        try mainFirstMergeWithGit(in: malloryCopy, of: "origin/main", signedWith: mallory.keyFile)
        let pushed = try git(["push", "origin", "HEAD:main"], in: malloryCopy, environment: try gitSSHEnvironment(mallory, host: host))
        XCTAssertNotEqual(pushed.status, 0, pushed.summary)
        XCTAssertEqual(try serverMain("kid", host: host), start, "the server stores nothing")

        try gitOK(["checkout", "--quiet", "-B", "main", "origin/main"], in: malloryCopy)
        let merged = try concordOK(["merge", fork], as: mallory, in: malloryCopy)
        XCTAssertTrue(merged.contains("does not count") && merged.contains("zed holds the key it gives mallory"), merged)
        try concordOK(["sync"], as: mallory, in: malloryCopy)
        XCTAssertNotEqual(try serverMain("kid", host: host), start, "the merge without the key went through")
        XCTAssertEqual(try memberKeys("mallory", at: "refs/heads/main", in: host.repository("kid")), [keyBlob(mallory.publicKeyLine)])

        let (zedCloned, zedsCopy) = try cloneThroughServer("kid", as: zed, host: host)
        XCTAssertEqual(zedCloned.status, 0, zedCloned.summary)
        try concordOK(["revoke", "mallory"], as: zed, in: zedsCopy)
        try concordOK(["sync"], as: zed, in: zedsCopy)
        try assertMemberFile("mallory", "viewer", "revoked", at: "refs/heads/main", in: host.repository("kid"), "the server's main")
    }

    /// Eddie (Editor), on his format 6 copy (no stamp rule), rewrites alice's record keeping her
    /// name on it and merges the fork in after the upgrade to format 7; pushed with plain git, the
    /// pre-receive refuses it, naming the commit it brings in; the server stores nothing.
    func testAFormat6ForkWritingInAnothersNameIsRefusedByThePreReceive() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let eddie = try makeDevice("eddie", device: "laptop")
        let host = try makeHost(admin: alice)
        let profile = try publish("kid", on: host, members: [(eddie, "editor")], records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)],
                                  format: (6, concordFormatVersion))
        let (cloned, eddiesCopy) = try cloneThroughServer("kid", as: eddie, host: host)
        XCTAssertEqual(cloned.status, 0, cloned.summary)
        let old = try revParse("HEAD", in: eddiesCopy)
        try upgradeAndSync(alice, profile, then: [(eddie, eddiesCopy)])
        let fork = try commitOnABranch(from: old, in: eddiesCopy, signedWith: eddie.keyFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "poison, says alice""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try concordOK(["merge", fork], as: eddie, in: eddiesCopy)
        let start = try serverMain("kid", host: host)
        let pushed = try git(["push", "origin", "HEAD:main"], in: eddiesCopy, environment: try gitSSHEnvironment(eddie, host: host))
        XCTAssertNotEqual(pushed.status, 0, pushed.summary)
        XCTAssertTrue(pushed.stderr.contains("made on a format 6 copy") && pushed.stderr.contains("in alice's name"), pushed.summary)
        XCTAssertEqual(try serverMain("kid", host: host), start, "the server stores nothing")
        try concordOK(["sync"], as: alice, in: profile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: alice, in: profile).contains(#""label": "puzzle""#))
    }

    private func keyLine(_ line: String) -> String {
        line.split(separator: " ").prefix(2).joined(separator: " ")
    }
}
