import ConcordTestSupport
import Foundation
import XCTest

/// A push the server refuses for a reason other than "the remote moved" is reported with the server's
/// words and not retried; local commits stay.
final class SyncPushRejectionTests: ConcordTestCase {
    func testPreReceiveHookRefusalOverSSH() throws {
        let remote = try makeRemote(.ssh)
        let laptop = try makeDevice("alice", device: "laptop")
        let profile = try publishProfile(owner: laptop, remote: remote, directory: "laptop")
        let published = try XCTUnwrap(try remoteMain(remote))

        let hook = remote.bare.appendingPathComponent("hooks/pre-receive")
        try Data("#!/bin/sh\necho 'policy says no' >&2\nexit 1\n".utf8).write(to: hook)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: hook.path)

        try concordOK(["put", "vocabulary/refused", "--json", #"{"label":"refused"}"#], as: laptop, in: profile)
        try concordOK(["put", "vocabulary/also", "--json", #"{"label":"also"}"#], as: laptop, in: profile)
        let before = try workTreeSnapshot(profile)
        let tracking = try revParse("refs/remotes/origin/main", in: profile)

        let started = Date()
        let refused = try concord(["sync"], as: laptop, in: profile)
        let seconds = Date().timeIntervalSince(started)
        XCTAssertEqual(refused.status, 4, "a refusal has its own exit code: exit \(refused.status): \(refused.stderr)")
        XCTAssertEqual(refused.stdout, "")
        XCTAssertTrue(refused.stderr.contains("policy says no"), "the server's reason is missing: \(refused.stderr)")
        XCTAssertTrue(refused.stderr.hasPrefix("concord: error: "), refused.stderr)
        XCTAssertLessThan(seconds, 5, "a policy refusal is not a race: it must not be retried (\(seconds) s)")

        XCTAssertEqual(try workTreeSnapshot(profile), before, "a refused push changed the profile")
        XCTAssertEqual(try revParse("refs/remotes/origin/main", in: profile), tracking,
                       "the remote-tracking ref moved although the server refused the push")
        XCTAssertEqual(try remoteMain(remote), published)
        XCTAssertEqual(try statusJSON(laptop, in: profile)["ahead"] as? Int, 2)

        // Once the policy allows it, the same commits go through.
        try FileManager.default.removeItem(at: hook)
        XCTAssertEqual(try syncJSON(laptop, in: profile).sent, 2)
        XCTAssertEqual(try remoteMain(remote), try revParse("HEAD", in: profile))
    }
}
