import ConcordTestSupport
import Foundation
import XCTest

/// Membership is a pure function of the head's first-parent chain (docs/security.md, "Decisions in
/// the order they reached the remote", rule 2): devices that reach the same head agree on it,
/// whichever of the remote's mains they saw on the way.
final class MainlineAgreementTests: ConcordTestCase {
    /// Jay (Admin), offline, adds Zed and promotes Uma; meanwhile Alice revokes Jay and adds Kim, and
    /// syncs first; then Jay syncs: his decisions, arriving after his revocation, do not count
    /// (his device is told its access is gone, so Alice merges his line herself). Uma's device synced
    /// after every main, Vic's only at the first and the last, Wes's is a clone of the last: all three
    /// hold one head, one membership and one `members --json`.
    func testDevicesThatSawDifferentMainsAgreeOnTheSameHead() throws {
        let remote = try makeRemote(.path)
        let alice = try makeDevice("alice", device: "laptop")
        let jay = try makeDevice("jay", device: "phone")
        let uma = try makeDevice("uma", device: "tablet")
        let vic = try makeDevice("vic", device: "desk")
        let wes = try makeDevice("wes", device: "watch")
        let profile = try publishProfile(owner: alice, remote: remote, directory: "alice",
                                         members: [(jay, "admin"), (uma, "user"), (vic, "viewer"), (wes, "viewer")])
        let jays = try cloneProfile(jay, from: remote, into: "jay")
        let umas = try cloneProfile(uma, from: remote, into: "uma")
        let vics = try cloneProfile(vic, from: remote, into: "vic")
        var mains = [try revParse("HEAD", in: profile)]

        let zed = try makeDevice("zed", device: "pad")
        try concordOK(["members", "add", "zed", "--role", "editor", "--key", zed.publicKeyLine, "--device", "pad"], as: jay, in: jays)
        try concordOK(["role", "uma", "admin"], as: jay, in: jays)
        try concordOK(["put", "vocabulary/jays", "--json", #"{"label":"jay's"}"#], as: jay, in: jays)

        try concordOK(["revoke", "jay"], as: alice, in: profile)
        try concordOK(["sync"], as: alice, in: profile)
        mains.append(try revParse("HEAD", in: profile))
        try concordOK(["sync"], as: uma, in: umas)
        let kim = try makeDevice("kim", device: "phone")
        try concordOK(["members", "add", "kim", "--role", "user", "--key", kim.publicKeyLine, "--device", "phone"], as: alice, in: profile)
        try concordOK(["sync"], as: alice, in: profile)
        mains.append(try revParse("HEAD", in: profile))
        try concordOK(["sync"], as: uma, in: umas)

        // Jay's sync is refused (his access is gone, and his device drops its copy); Alice, who had
        // fetched his line, merges it (`concord merge` of a commit id: a side line, judged against
        // her main) and publishes it.
        try gitOK(["fetch", "--quiet", jays.path, "main:refs/peers/jay"], in: profile)
        let refused = try concord(["sync"], as: jay, in: jays)
        XCTAssertEqual(refused.status, 4, refused.summary)
        let told = try concordOK(["merge", try revParse("refs/peers/jay", in: profile)], as: alice, in: profile)
        XCTAssertTrue(told.contains("does not count: jay's addition of zed"), told)
        XCTAssertTrue(told.contains("does not count: jay's change of uma's role"), told)
        try concordOK(["sync"], as: alice, in: profile)
        mains.append(try revParse("HEAD", in: profile))
        XCTAssertEqual(Set(mains).count, 4, "four mains: \(mains)")

        try concordOK(["sync"], as: uma, in: umas)
        try concordOK(["sync"], as: vic, in: vics)
        let wess = try cloneProfile(wes, from: remote, into: "wes")
        let head = try revParse("HEAD", in: profile)
        let listed = try concordOK(["members", "--json"], as: alice, in: profile)
        for (device, copy) in [(uma, umas), (vic, vics), (wes, wess)] {
            XCTAssertEqual(try revParse("HEAD", in: copy), head, "\(device.member)'s head")
            XCTAssertEqual(try gitOK(["rev-parse", "HEAD:.concord/members"], in: copy), try gitOK(["rev-parse", "HEAD:.concord/members"], in: profile))
            XCTAssertEqual(try concordOK(["members", "--json"], as: device, in: copy), listed, "\(device.member)'s membership")
            try concordOK(["verify"], as: device, in: copy)
        }
        let members = try concordOK(["members"], as: wes, in: wess)
        XCTAssertTrue(members.contains("uma  user  active"), members)
        XCTAssertTrue(members.contains("kim  user  active"), members)
        XCTAssertTrue(members.contains("jay  admin  revoked"), members)
        XCTAssertFalse(members.contains("zed  editor  active"), members)
    }

    /// Red-team finding (issue 42): `concord merge <id>` of a commit that descends from this device's
    /// main fast-forwarded to it, taking its first-parent line whole. Mallory (Admin), revoked by
    /// Alice, revokes Alice on her old copy and merges Alice's main into it, her own line first;
    /// Alice, handed that merge's id, does not take it whole, and since the third red-team pass not
    /// as a side either: that merge judged Alice's main as its side, and in that order keeps what
    /// Alice's main first would not, so it is refused, naming it, and nothing changes. Alice stays an
    /// Admin, Mallory revoked.
    func testMergingACommitWhoseMainLineIsAnOldForkTakesItAsASide() throws {
        let remote = try makeRemote(.path)
        let alice = try makeDevice("alice", device: "laptop")
        let mallory = try makeDevice("mallory", device: "phone")
        let profile = try publishProfile(owner: alice, remote: remote, directory: "alice", members: [(mallory, "admin")])
        let mallorys = try cloneProfile(mallory, from: remote, into: "mallory")
        try concordOK(["revoke", "mallory"], as: alice, in: profile)
        try concordOK(["sync"], as: alice, in: profile)
        let main = try revParse("HEAD", in: profile)

        try concordOK(["revoke", "alice"], as: mallory, in: mallorys)
        try gitOK(["fetch", "--quiet", remote.bare.path, "main:refs/heads/theirs"], in: mallorys)
        try concordOK(["merge", try revParse("theirs", in: mallorys)], as: mallory, in: mallorys)
        let evil = try revParse("HEAD", in: mallorys)
        XCTAssertNotEqual(try gitOK(["rev-parse", "\(evil)^1"], in: mallorys), main, "her own line first")

        try gitOK(["fetch", "--quiet", mallorys.path, "main:refs/peers/mallory"], in: profile)
        assertOneLineRefusal(try concord(["merge", evil], as: alice, in: profile), status: 5,
                             mentions: ["\(evil.prefix(7)) by mallory", "took the main line's commits (\(main.prefix(7))) as the side of another line",
                                        "refused, nothing here changed"])
        XCTAssertEqual(try revParse("HEAD", in: profile), main, "nothing changed")
        let members = try concordOK(["members"], as: alice, in: profile)
        XCTAssertTrue(members.contains("alice  admin  active"), members)
        XCTAssertTrue(members.contains("mallory  admin  revoked"), members)
        try concordOK(["verify"], as: alice, in: profile)
        try concordOK(["sync"], as: alice, in: profile)
    }
}
