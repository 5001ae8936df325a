import ConcordTestSupport
import Foundation
import XCTest

/// Issue 42's attacks (ForkAttackTests makes them against a path remote) pushed through `concord
/// serve` behind a real sshd: a decision made later on an old copy, merged with main. Whether the
/// pre-receive refuses the push or takes it with the attacker's decision dropped, the server's main
/// and every honest device that syncs through it end as the published decisions made them.
/// A revoked member or removed key is refused at the server's door, so their fetch and push go
/// through an accomplice still active (uma, a User), as in ServeMemberAttackTests. Where concord
/// will not make the attacker's merge, they make it with plain git (`mainFirstMergeWithGit`).
final class ServeForkAttackTests: ConcordServeTestCase {
    /// Jay (Admin) revokes alice, the creator and the server's admin, adds kim and writes a record.
    /// Alice, on her copy from before, revokes jay and merges main with `concord merge`; uma pushes it.
    func testARevokedCreatorsRevocationOfHerRevokerFallsThroughServe() throws {
        let team = try servedTeam()
        try jayRemovesAlice(team, demoting: false)
        try concordOK(["revoke", "jay"], as: team.alice, in: team.aliceProfile)
        let uma = try gitSSHEnvironment(team.uma, host: team.host)
        try mergeMainAndPushAnyway(in: team.aliceProfile, as: team.alice, environment: uma)
        try assertJayStands(team, alice: ("admin", "revoked"))
    }

    /// The same with plain git: alice's fork first, main second (the tree concord's merge makes
    /// there, or git's own), signed with her key; uma pushes it.
    func testARevokedCreatorsForkFirstPlainGitMergeFallsThroughServe() throws {
        let team = try servedTeam()
        try jayRemovesAlice(team, demoting: false)
        try concordOK(["revoke", "jay"], as: team.alice, in: team.aliceProfile)
        let fork = try revParse("HEAD", in: team.aliceProfile)
        let uma = try gitSSHEnvironment(team.uma, host: team.host)
        try gitOK(["fetch", "--quiet", "origin"], in: team.aliceProfile, environment: uma)
        let merge = try forkFirstMergeWithGit(in: team.aliceProfile, of: "origin/main", as: team.alice, signedWith: team.alice.keyFile)
        XCTAssertEqual(try revParse("\(merge)^1", in: team.aliceProfile), fork, "alice's fork is the first parent")
        try pushAnyway(from: team.aliceProfile, environment: uma)
        try assertJayStands(team, alice: ("admin", "revoked"))
    }

    /// Jay demotes alice to Viewer instead; alice (a Viewer, still let in) demotes jay on her copy
    /// from before and runs plain `concord sync` through the server.
    func testADemotedCreatorsDemotionOfHerDemoterFallsThroughServe() throws {
        let team = try servedTeam()
        try jayRemovesAlice(team, demoting: true)
        try concordOK(["role", "jay", "viewer"], as: team.alice, in: team.aliceProfile)
        let synced = try concord(["sync"], as: team.alice, in: team.aliceProfile)
        print("alice's sync: \(synced.summary)")
        if synced.status != 0 {
            let alices = try gitSSHEnvironment(team.alice, host: team.host)
            try gitOK(["fetch", "--quiet", "origin"], in: team.aliceProfile, environment: alices)
            try mainFirstMergeWithGit(in: team.aliceProfile, of: "origin/main", signedWith: team.alice.keyFile)
            try pushAnyway(from: team.aliceProfile, environment: alices)
        }
        try assertJayStands(team, alice: ("viewer", "active"))
    }

    /// Eve joined by an open link; alice adds zed (Editor), who writes. Eve joins by the same link
    /// as `zed` with a second key on her copy from before zed, merges main with `concord merge` and
    /// pushes with her own key. Zed keeps his name, key and record on the server and on every device.
    func testAnOpenLinksHolderCannotSquatALaterMembersNameThroughServe() throws {
        let team = try servedTeam()
        let (link, eve, eveCopy) = try eveJoinsByAnOpenLink(team)
        let zed = try makeDevice("zed", device: "laptop")
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try concordOK(["members", "add", "zed", "--role", "editor", "--key", zed.publicKeyLine, "--device", "laptop"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let zedCopy = try clone(as: zed, team)
        try concordOK(["put", "vocabulary/zeds", "--json", #"{"label":"by zed"}"#], as: zed, in: zedCopy)
        try concordOK(["sync"], as: zed, in: zedCopy)

        let squat = try eveSquats("zed", by: link, eve: eve, in: eveCopy, team)

        let server = team.host.repository("kid")
        try assertMemberFile("zed", "editor", "active", at: "refs/heads/main", in: server, "the server's main")
        XCTAssertEqual(try memberKeys("zed", at: "refs/heads/main", in: server), [keyBlob(zed.publicKeyLine)], "the server: zed's keys")
        XCTAssertTrue(try holdsRecord("vocabulary", "zeds", at: "refs/heads/main", in: server), "the server keeps zed's record")
        for (device, copy) in [(team.alice, team.aliceProfile), (zed, zedCopy)] {
            let synced = try concord(["sync"], as: device, in: copy)
            XCTAssertEqual(synced.status, 0, "\(device.member)'s sync: \(synced.summary)")
            guard copyIsThere(copy, of: device, after: synced) else { continue }
            try assertMember("zed", "editor", "active", as: device, in: copy)
            XCTAssertEqual(try memberKeys("zed", in: copy), [keyBlob(zed.publicKeyLine)], "\(device.member): zed's keys are his own")
            XCTAssertFalse(try memberKeys("zed", in: copy).contains(keyBlob(squat)), "eve's second key is not zed's")
            XCTAssertTrue(try holdsRecord("vocabulary", "zeds", in: copy), "\(device.member) keeps zed's record")
        }
    }

    /// Alice invites dave by his key; eve squats `dave` by her open link on her copy from before the
    /// invitation and pushes her `concord merge` of main. The server's dave file still invites
    /// exactly dave's key, and dave's accept through the server succeeds.
    func testAnOpenLinksHolderCannotSquatAPendingNamedInvitationThroughServe() throws {
        let team = try servedTeam()
        let (link, eve, eveCopy) = try eveJoinsByAnOpenLink(team)
        let dave = try makeDevice("dave", device: "phone")
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let named = try shareAndSync(["dave", "--role", "editor", "--key", dave.publicKeyLine], as: team.alice, in: team.aliceProfile)

        let squat = try eveSquats("dave", by: link, eve: eve, in: eveCopy, team)

        let server = team.host.repository("kid")
        try assertMemberFile("dave", "editor", "invited", at: "refs/heads/main", in: server, "the server's main")
        XCTAssertEqual(try memberKeys("dave", at: "refs/heads/main", in: server), [keyBlob(dave.publicKeyLine)], "dave's file invites his key only")
        let daveCopy = sandbox.appendingPathComponent("kid-dave")
        let accepted = try concord(["accept", named, daveCopy.path, "--trust-host", team.host.sshd.hostKeyFingerprint], as: dave)
        XCTAssertEqual(accepted.status, 0, "dave's accept: \(accepted.summary)")
        if accepted.status == 0 { fsckAtEnd.append(daveCopy) }
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try assertSquatFell(dave, squat: squat, on: [(team.alice, team.aliceProfile), (dave, daveCopy)])
    }

    /// Bob removes his tablet's key; the thief holding it adds a key X of their own to bob's file on
    /// the tablet's copy from before (signed by the tablet's key, its id ground to sort before the
    /// removal's), writes a record, and merges main with `concord merge` as X (neither key is let in
    /// at the server's door: uma fetches and pushes). On the server and on every device bob's file
    /// holds the phone's key only and the thief's record is nowhere.
    func testARemovedKeysAdditionOnAnOldCopyFallsThroughServe() throws {
        let team = try servedTeam()
        let (_, tabletCopy, thief) = try bobsTabletRemovedAndStolen(team)
        let uma = try gitSSHEnvironment(team.uma, host: team.host)
        try mergeMainAndPushAnyway(in: tabletCopy, as: thief, environment: uma)
        try assertTheTabletStaysRemoved(team, thief: thief)
    }

    /// The same with plain git: the thief's fork first, main second, signed with the thief's key X;
    /// uma pushes it.
    func testARemovedKeysForkFirstPlainGitMergeFallsThroughServe() throws {
        let team = try servedTeam()
        let (tablet, tabletCopy, thief) = try bobsTabletRemovedAndStolen(team)
        let uma = try gitSSHEnvironment(team.uma, host: team.host)
        try gitOK(["fetch", "--quiet", "origin"], in: tabletCopy, environment: uma)
        try forkFirstMergeWithGit(in: tabletCopy, of: "origin/main", as: thief, signedWith: thief.keyFile)
        XCTAssertEqual(try memberKeys("bob", at: "HEAD^1", in: tabletCopy).contains(keyBlob(tablet.publicKeyLine)), true,
                       "the thief's fork, from before the removal, is the first parent")
        try pushAnyway(from: tabletCopy, environment: uma)
        try assertTheTabletStaysRemoved(team, thief: thief)
    }

    /// Alice removes her own phone's key; the thief holding it makes an Admin alias on the phone's
    /// copy from before (its id ground to sort before the removal's) and merges main with `concord
    /// merge` as the alias; uma pushes it. The alias is never an active member on the server or on
    /// a device.
    func testARemovedAdminKeysAliasNeverBecomesAMemberThroughServe() throws {
        let team = try servedTeam()
        let phone = try makeDevice("alice", device: "phone")
        let (phoneCopy, removal) = try deviceRemovedAfterItCopied(phone, by: team.alice, in: team.aliceProfile) { try self.clone(as: $0, team) }

        let alias = try makeDevice("alias", device: "laptop")
        try concordOK(["members", "add", "alias", "--role", "admin", "--key", alias.publicKeyLine, "--device", "laptop"], as: phone, in: phoneCopy)
        try grindHead(in: phoneCopy, before: removal, signedWith: phone.keyFile)
        let uma = try gitSSHEnvironment(team.uma, host: team.host)
        try mergeMainAndPushAnyway(in: phoneCopy, as: alias, environment: uma)

        let server = team.host.repository("kid")
        XCTAssertNotEqual(try memberFile("alias", at: "refs/heads/main", in: server)?["status"] as? String, "active", "the server's alias")
        let bobCopy = team.bobCopy
        for (device, copy) in [(team.alice, team.aliceProfile), (team.bob, bobCopy)] {
            let synced = try concord(["sync"], as: device, in: copy)
            XCTAssertEqual(synced.status, 0, "\(device.member)'s sync: \(synced.summary)")
            guard copyIsThere(copy, of: device, after: synced) else { continue }
            let listed = try memberLine("alias", as: device, in: copy)
            XCTAssertFalse(listed?.contains("active") == true, "\(device.member) lists \(listed ?? "")")
        }
        XCTAssertEqual(try memberKeys("alice", at: "refs/heads/main", in: server), [keyBlob(team.alice.publicKeyLine)], "the phone stays removed")
    }

    // MARK: - The team on a server

    struct ServedTeam {
        let alice: TestDevice   // admin, and the server's admin
        let jay: TestDevice     // admin, added by alice
        let bob: TestDevice     // editor
        let uma: TestDevice     // user: the accomplice
        let kim: TestDevice     // added by jay later
        let host: ConcordServeHost
        let aliceProfile: URL
        let jayCopy: URL, bobCopy: URL
    }

    /// Alice's profile "kid" on a concord server with jay (Admin), bob (Editor) and uma (User);
    /// jay and bob clone it through the server.
    private func servedTeam() throws -> ServedTeam {
        let alice = try makeDevice("alice", device: "laptop")
        let jay = try makeDevice("jay", device: "laptop")
        let bob = try makeDevice("bob", device: "phone")
        let uma = try makeDevice("uma", device: "tablet")
        let kim = try makeDevice("kim", device: "tablet")
        let host = try makeHost(admin: alice)
        let profile = try publish("kid", on: host, members: [(jay, "admin"), (bob, "editor"), (uma, "user")],
                                  records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#)])
        let (jayCloned, jayCopy) = try cloneThroughServer("kid", as: jay, host: host)
        XCTAssertEqual(jayCloned.status, 0, jayCloned.summary)
        let (bobCloned, bobCopy) = try cloneThroughServer("kid", as: bob, host: host)
        XCTAssertEqual(bobCloned.status, 0, bobCloned.summary)
        return ServedTeam(alice: alice, jay: jay, bob: bob, uma: uma, kim: kim, host: host, aliceProfile: profile, jayCopy: jayCopy, bobCopy: bobCopy)
    }

    /// Alice shares an open link for 4 Users; eve joins by it through the server, and keeps that copy unsynced.
    private func eveJoinsByAnOpenLink(_ team: ServedTeam) throws -> (link: String, eve: TestDevice, copy: URL) {
        let link = try shareAndSync(["--open", "--role", "user", "--uses", "4", "--expires", "3h"], as: team.alice, in: team.aliceProfile)
        let eve = try makeDevice("eve", device: "phone")
        return (link, eve, try acceptThroughServer(link, as: eve, host: team.host, profile: "kid", into: "kid-eve"))
    }

    /// Eve joins by `link` as `member` with a second key on her copy from before, merges main with
    /// `concord merge` and pushes with her own key; returns that second key's line.
    private func eveSquats(_ member: String, by link: String, eve: TestDevice, in copy: URL, _ team: ServedTeam) throws -> String {
        let squat = try joinWithAnOpenLink(link, as: member, in: copy, profileID: try profileID(of: copy))
        try mergeMainAndPushAnyway(in: copy, as: eve, environment: try gitSSHEnvironment(eve, host: team.host))
        return squat.key
    }

    /// `device` clones "kid" through the server into a directory of its own.
    private func clone(as device: TestDevice, _ team: ServedTeam) throws -> URL {
        let target = sandbox.appendingPathComponent("kid-\(device.member)-\(device.device)-\(UUID().uuidString.prefix(4))")
        let result = try concord(["clone", team.host.url("kid"), target.path, "--trust-host", team.host.sshd.hostKeyFingerprint], as: device)
        XCTAssertEqual(result.status, 0, result.summary)
        fsckAtEnd.append(target)
        return target
    }

    /// Bob adds his tablet (its copy cloned through the server), then removes its key and syncs.
    /// The thief holding the tablet's copy, as it was before the removal, adds a key X of their own
    /// to bob's file there (signed by the tablet's key, its id ground to sort before the removal's)
    /// and writes vocabulary/thief. Returns the tablet, its copy and the thief's device (key X).
    private func bobsTabletRemovedAndStolen(_ team: ServedTeam) throws -> (tablet: TestDevice, copy: URL, thief: TestDevice) {
        let tablet = try makeDevice("bob", device: "tablet")
        let (tabletCopy, removal) = try deviceRemovedAfterItCopied(tablet, by: team.bob, in: team.bobCopy) { try self.clone(as: $0, team) }
        let thief = try thiefAddsAKeyAndWrites(on: tabletCopy, as: tablet, before: removal)
        return (tablet, tabletCopy, thief)
    }

    /// After the thief's attempt: on the server's main and on alice's and bob's devices after they
    /// sync, bob's file holds the phone's key only (neither the tablet's nor X) and the thief's
    /// record is nowhere.
    private func assertTheTabletStaysRemoved(_ team: ServedTeam, thief: TestDevice, file: StaticString = #filePath, line: UInt = #line) throws {
        let server = team.host.repository("kid")
        XCTAssertEqual(try memberKeys("bob", at: "refs/heads/main", in: server), [keyBlob(team.bob.publicKeyLine)], "the server: bob's keys",
                       file: file, line: line)
        XCTAssertFalse(try holdsRecord("vocabulary", "thief", at: "refs/heads/main", in: server), "the server holds the thief's record",
                       file: file, line: line)
        for (device, copy) in [(team.alice, team.aliceProfile), (team.bob, team.bobCopy)] {
            let synced = try concord(["sync"], as: device, in: copy)
            XCTAssertEqual(synced.status, 0, "\(device.member)'s sync: \(synced.summary)", file: file, line: line)
            guard copyIsThere(copy, of: device, after: synced, file: file, line: line) else { continue }
            XCTAssertEqual(try memberKeys("bob", in: copy), [keyBlob(team.bob.publicKeyLine)], "\(device.member): bob's keys are the phone's",
                           file: file, line: line)
            XCTAssertFalse(try memberKeys("bob", in: copy).contains(keyBlob(thief.publicKeyLine)), "the thief's key is not bob's", file: file, line: line)
            XCTAssertFalse(try holdsRecord("vocabulary", "thief", in: copy), "\(device.member) holds the thief's record", file: file, line: line)
        }
    }

    /// Jay revokes alice (or demotes her to Viewer) and syncs, adds kim and writes vocabulary/jays;
    /// bob syncs. Alice's copy is left as it was before.
    private func jayRemovesAlice(_ team: ServedTeam, demoting: Bool) throws {
        try jayRemovesAlice(demoting: demoting, jay: (team.jay, team.jayCopy), kim: team.kim, bob: (team.bob, team.bobCopy))
    }

    /// After alice's attempt: the server's main, and jay's and bob's devices after they sync, show
    /// jay an active Admin, alice as `alice` (role, status), kim active and jay's record.
    private func assertJayStands(_ team: ServedTeam, alice: (role: String, status: String),
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        let server = team.host.repository("kid")
        try assertMemberFile("jay", "admin", "active", at: "refs/heads/main", in: server, "the server's main", file: file, line: line)
        try assertMemberFile("alice", alice.role, alice.status, at: "refs/heads/main", in: server, "the server's main", file: file, line: line)
        try assertMemberFile("kim", "editor", "active", at: "refs/heads/main", in: server, "the server's main", file: file, line: line)
        XCTAssertTrue(try holdsRecord("vocabulary", "jays", at: "refs/heads/main", in: server), "the server keeps jay's record", file: file, line: line)
        for (device, copy) in [(team.jay, team.jayCopy), (team.bob, team.bobCopy)] {
            let synced = try concord(["sync"], as: device, in: copy)
            XCTAssertEqual(synced.status, 0, "\(device.member)'s sync: \(synced.summary)", file: file, line: line)
            guard copyIsThere(copy, of: device, after: synced, file: file, line: line) else { continue }
            try assertMember("jay", "admin", "active", as: device, in: copy, file: file, line: line)
            try assertMember("alice", alice.role, alice.status, as: device, in: copy, file: file, line: line)
            try assertMember("kim", "editor", "active", as: device, in: copy, file: file, line: line)
            XCTAssertTrue(try holdsRecord("vocabulary", "jays", in: copy), "\(device.member) keeps jay's record", file: file, line: line)
        }
    }
}

