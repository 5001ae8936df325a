import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// The membership replay on its own (no git): histories given as values, as ConcordKit reads them.
/// The reference model (AuthorityModelTests) judges it on real repositories; these pin its main cases.
final class MembershipReplayTests: XCTestCase {
    let alice = SigningKey.generate().publicKey
    let bob = SigningKey.generate().publicKey
    let carol = SigningKey.generate().publicKey

    func file(_ name: String, _ role: Role, _ status: Member.Status = .active, keys: [SSHPublicKey],
              revokedBy: String? = nil) -> (path: String, bytes: [UInt8]) {
        let member = Member(name: name, role: role, status: status, keys: keys.map { Member.Key(device: "tablet", publicKey: $0) },
                            addedBy: "alice", addedAt: "2026-01-01T00:00:00.000Z", revokedBy: revokedBy,
                            revokedAt: revokedBy == nil ? nil : "2026-01-02T00:00:00.000Z")
        return (ProfilePaths.member(name), member.json.canonicalBytes())
    }

    /// Alice revokes Bob while Bob, offline, adds Carol: the revocation wins, and Carol's admission,
    /// resting on Bob's rights, falls (her file stays, admitting nobody) — whichever order the two
    /// decisions are listed in.
    func testARevocationBeatsTheRevokedAdminsConcurrentAdmission() throws {
        let aliceFile = file("alice", .admin, keys: [alice])
        let bobActive = file("bob", .admin, keys: [bob])
        let bobRevoked = file("bob", .admin, .revoked, keys: [], revokedBy: "alice")
        let carolFile = file("carol", .editor, keys: [carol])
        let root = MembershipResolution.HistoryCommit(id: "00", parents: [], change: nil)
        let revocation = MembershipResolution.AuthorityChange(signer: alice, files: [bobActive.path: (bobActive.bytes, bobRevoked.bytes)])
        let admission = MembershipResolution.AuthorityChange(signer: bob, files: [carolFile.path: (nil, carolFile.bytes)])
        XCTAssertTrue(revocation.removes)
        XCTAssertFalse(admission.removes)
        let rootFiles = [aliceFile.path: aliceFile.bytes, bobActive.path: bobActive.bytes]
        let ours = [aliceFile.path: aliceFile.bytes, bobRevoked.path: bobRevoked.bytes]
        let theirs = [aliceFile.path: aliceFile.bytes, bobActive.path: bobActive.bytes, carolFile.path: carolFile.bytes]

        var results = [[String: [UInt8]]]()
        for (first, second) in [(revocation, admission), (admission, revocation)] {
            let commits = [root, .init(id: "01", parents: [0], change: first), .init(id: "02", parents: [0], change: second)]
            let state = try XCTUnwrap(MembershipResolution.replay(commits, rootFiles: rootFiles, creator: alice))
            results.append(MembershipResolution.resolution(replayed: state, sides: [ours, theirs]).overrides)
        }
        XCTAssertEqual(results[0], results[1])
        let overrides = results[0]
        XCTAssertEqual(overrides[bobRevoked.path], bobRevoked.bytes)
        XCTAssertEqual(overrides[aliceFile.path], aliceFile.bytes)
        let fallen = try XCTUnwrap(overrides[carolFile.path].flatMap { MembershipResolution.memberFile($0, path: carolFile.path) })
        XCTAssertEqual(fallen.status, .revoked)
        XCTAssertEqual(fallen.keys, [])
    }

    /// A history with no change to member or invitation files has nothing to replay.
    func testAHistoryWithoutMembershipChangesReplaysToNothing() {
        let commits = [MembershipResolution.HistoryCommit(id: "00", parents: [], change: nil),
                       .init(id: "01", parents: [0], change: nil), .init(id: "02", parents: [0, 1], change: nil)]
        XCTAssertNil(MembershipResolution.replay(commits, rootFiles: [:], creator: alice))
    }

    /// Both Admins leave at once: each departure is valid alone, and the replay keeps one of them an
    /// Admin, the same one whichever order the departures are listed in.
    func testConcurrentDeparturesOfTheLastAdminsKeepOne() throws {
        let aliceFile = file("alice", .admin, keys: [alice])
        let bobFile = file("bob", .admin, keys: [bob])
        let aliceGone = file("alice", .admin, .revoked, keys: [], revokedBy: "alice")
        let bobGone = file("bob", .admin, .revoked, keys: [], revokedBy: "bob")
        let departures: [MembershipResolution.AuthorityChange] = [.init(signer: alice, files: [aliceFile.path: (aliceFile.bytes, aliceGone.bytes)]),
                                                                  .init(signer: bob, files: [bobFile.path: (bobFile.bytes, bobGone.bytes)])]
        var results = [[String: [UInt8]]]()
        for order in [departures, departures.reversed()] {
            let commits = [MembershipResolution.HistoryCommit(id: "00", parents: [], change: nil),
                           .init(id: "01", parents: [0], change: order[0]), .init(id: "02", parents: [0], change: order[1])]
            results.append(try XCTUnwrap(MembershipResolution.replay(commits, rootFiles: [aliceFile.path: aliceFile.bytes, bobFile.path: bobFile.bytes],
                                                                     creator: alice)))
        }
        XCTAssertEqual(results[0], results[1])
        let admins = results[0].compactMap { path, bytes in MembershipResolution.memberFile(bytes, path: path) }
            .filter { $0.status == .active && $0.role == .admin }
        XCTAssertEqual(admins.count, 1)
    }
}
