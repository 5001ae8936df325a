@testable import ConcordEngine
@testable import ConcordKit
@testable import ConcordServer
import ConcordGit
import ConcordTestSupport
import Foundation
import XCTest

/// The forced command's policy as library code: for each command a device may send and each
/// standing its key may have on the server, the exact plan `concord serve` carries out — the
/// program, arguments and environment it execs, or the one line it refuses with.
final class ServePlanTests: XCTestCase {
    private var sandbox: URL!
    private let now = HLClock.parseInstant("2026-01-01T10:00:00.000Z")!

    override func setUpWithError() throws {
        try super.setUpWithError()
        sandbox = try makeSandbox(prefix: "concord-server-tests", removedBy: addTeardownBlock)
    }

    private func identity(_ member: String, device: String = "laptop") throws -> Identity {
        try Identity.create(member: member, device: device, in: sandbox.appendingPathComponent("home-\(member)"))
    }

    private func makeServer(admin: Identity) throws -> ConcordServer {
        try ConcordServer.initialize(root: sandbox.appendingPathComponent("server"), adminKey: admin.key.publicKey,
                                     user: "concord", executable: "/usr/local/bin/concord")
    }

    /// What a member's (or the creator's) git runs with: the key for the hook, the views hidden.
    private func memberExec(_ program: String, _ repository: String, key: String) -> ServePlan {
        .exec(ServePlan.Exec(program: program, arguments: [program, repository],
                             setting: ["CONCORD_SERVE_KEY": key, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "transfer.hideRefs",
                                       "GIT_CONFIG_VALUE_0": "refs/namespaces/"],
                             removing: []))
    }

    // MARK: The exec'd program, decided without I/O

    func testAMembersGitRunsWithItsKeyAndTheRevokedViewsHidden() {
        let key = "SHA256:" + String(repeating: "A", count: 43)
        for grant in [ServerGrant.member, .invited, .creator] {
            let admitted = ConcordServer.Admitted(repository: "/srv/concord/repositories/kid.git", grant: grant, namespace: nil)
            for verb in [ServeRequest.Verb.upload, .receive] {
                let exec = ServePlan.Exec(ServeRequest(verb: verb, profile: "kid"), key: key, admitted: admitted)
                XCTAssertEqual(ServePlan.exec(exec), memberExec(verb.rawValue, "/srv/concord/repositories/kid.git", key: key), "\(grant) \(verb)")
            }
        }
    }

    func testARevokedKeysGitSeesItsViewAloneOverProtocolV0() {
        let key = "SHA256:" + String(repeating: "B", count: 43)
        let admitted = ConcordServer.Admitted(repository: "/srv/concord/repositories/kid.git", grant: .revoked, namespace: "revoked-626f62")
        let exec = ServePlan.Exec(ServeRequest(verb: .upload, profile: "kid"), key: key, admitted: admitted)
        XCTAssertEqual(exec, ServePlan.Exec(program: "git-upload-pack", arguments: ["git-upload-pack", "/srv/concord/repositories/kid.git"],
                                            setting: ["CONCORD_SERVE_KEY": key, "GIT_NAMESPACE": "revoked-626f62"],
                                            removing: ["GIT_PROTOCOL"]))
        XCTAssertEqual(admitted.mainRef, "refs/namespaces/revoked-626f62/refs/heads/main")
    }

    // MARK: Whole connections, on a server directory

    func testHostileOrMalformedCommandsAreRefusedBeforeAnyFileIsTouched() throws {
        let alice = try identity("alice")
        let server = try makeServer(admin: alice)
        let key = alice.key.publicKey.fingerprint
        let verbs = "only git-upload-pack, git-receive-pack, concord-wait, concord-notice and concord-destroy are served"
        let name = "a profile name is lower-case letters, digits, '-' and '_', starting with a letter or digit"
        let cases: [(String?, String)] = [
            (nil, "this account serves Concord profiles over git only (no shell): use an ssh:// URL with concord or git"),
            ("", "this account serves Concord profiles over git only (no shell): use an ssh:// URL with concord or git"),
            ("git-upload-pack 'kid'; rm -rf ~", "refused a command with ';' in it: one git command per connection"),
            ("git-receive-pack '../../etc/kid'", "refused a command with '..' in it: profiles are named, not reached by path"),
            ("git-upload-pack 'kid'\ncat /etc/passwd", "refused a command with a newline in it"),
            ("git-upload-pack 'kid'\u{1B}[2J", "refused a command with a control character (0x1b) in it"),
            ("bash -c id", "refused 'bash': \(verbs)"),
            ("id", "refused 'id': \(verbs)"),
            ("git-upload-pack kid", "refused git-upload-pack kid: the profile must be one name in single quotes, as git sends it"),
            ("git-upload-pack '$(reboot)'", "refused git-upload-pack '$(reboot)': \(name)"),
            ("git-receive-pack 'Kid'", "refused git-receive-pack 'Kid': \(name)"),
            ("git-upload-pack '" + String(repeating: "k", count: 300) + "'", "refused a command of 318 bytes: at most 256 are read"),
            ("concord-wait 'kid' 123 5", "refused concord-wait 'kid' 123 5: it takes '<profile>', the 40-digit id of the main the device "
                + "has, 1 to 60 seconds, and optionally 'pack'"),
            ("concord-wait 'kid' \(String(repeating: "0", count: 40)) 61", "refused concord-wait 'kid' \(String(repeating: "0", count: 40)) 61: "
                + "it takes '<profile>', the 40-digit id of the main the device has, 1 to 60 seconds, and optionally 'pack'"),
        ]
        for (command, message) in cases {
            // The admin's key, which could create a profile with a good command, creates nothing with these.
            XCTAssertEqual(try ServePlan.connection(command, key: key, server: server, now: now), .refuse(ServerRefusal(message)),
                           command.debugDescription)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: server.root.appendingPathComponent("repositories").path), [])
    }

    func testAProfileThatIsNotThereIsTheAdminsToCreateAndNoOneElsesToSee() throws {
        let alice = try identity("alice"), mallory = try identity("mallory")
        let server = try makeServer(admin: alice)
        let stranger = mallory.key.publicKey.fingerprint
        let refusal = { (what: String) in ServerRefusal("no profile \"kid\" here that the key \(stranger) may \(what): ask the profile's admin to add this device") }
        XCTAssertEqual(try ServePlan.connection("git-upload-pack 'kid'", key: stranger, server: server, now: now), .refuse(refusal("read")))
        XCTAssertEqual(try ServePlan.connection("git-receive-pack '/kid.git'", key: stranger, server: server, now: now), .refuse(refusal("write")))
        XCTAssertEqual(try ServePlan.connection("concord-destroy 'kid'", key: stranger, server: server, now: now), .refuse(refusal("read")))
        XCTAssertEqual(try ServePlan.connection("concord-notice 'kid'", key: stranger, server: server, now: now),
                       .refuse(ServerRefusal("\"kid\" has not been deleted: there is no deletion notice to give")))
        XCTAssertFalse(FileManager.default.fileExists(atPath: server.repositoryPath("kid")), "a refused key creates nothing")

        // The admin may wait on nothing, and its first fetch or push creates the repository it then runs on.
        let admin = alice.key.publicKey.fingerprint
        let adminWait = ServerRefusal("no profile \"kid\" here that the key \(admin) may read: ask the profile's admin to add this device")
        XCTAssertEqual(try ServePlan.connection("concord-wait 'kid' \(String(repeating: "0", count: 40)) 5", key: admin, server: server, now: now),
                       .refuse(adminWait))
        XCTAssertEqual(try ServePlan.connection("git-receive-pack 'kid.git'", key: admin, server: server, now: now),
                       memberExec("git-receive-pack", server.repositoryPath("kid"), key: admin))
        XCTAssertTrue(FileManager.default.fileExists(atPath: server.repositoryPath("kid") + "/hooks/pre-receive"))
    }

    func testMembersRunGitAndWaitWhileARevokedKeyReadsItsViewOnceThePostReceiveRecordedIt() throws {
        let alice = try identity("alice"), bob = try identity("bob", device: "phone"), carol = try identity("carol", device: "tablet")
        let server = try makeServer(admin: alice)
        let main = try publishKid(on: server, admin: alice, editor: bob, revoked: carol)
        let path = server.repositoryPath("kid")
        let (bobKey, carolKey) = (bob.key.publicKey.fingerprint, carol.key.publicKey.fingerprint)

        XCTAssertEqual(try ServePlan.connection("git-upload-pack 'kid'", key: bobKey, server: server, now: now),
                       memberExec("git-upload-pack", path, key: bobKey))
        XCTAssertEqual(try ServePlan.connection("git-receive-pack 'kid'", key: bobKey, server: server, now: now),
                       memberExec("git-receive-pack", path, key: bobKey))
        let wait = "concord-wait 'kid' \(main.hex) 30 pack"
        XCTAssertEqual(try ServePlan.connection(wait, key: bobKey, server: server, now: now),
                       .wait(ServeRequest(verb: .wait, profile: "kid", known: main, seconds: 30, withPack: true),
                             ConcordServer.Admitted(repository: path, grant: .member, namespace: nil, member: "bob")))
        XCTAssertEqual(try ServePlan.connection("concord-destroy 'kid'", key: bobKey, server: server, now: now), .destroy(profile: "kid"))
        // A key no member holds learns nothing, not even that the profile is there.
        let stranger = try identity("mallory").key.publicKey.fingerprint
        XCTAssertEqual(try ServePlan.connection("git-upload-pack 'kid'", key: stranger, server: server, now: now),
                       .refuse(ServerRefusal("no profile \"kid\" here that the key \(stranger) may read: ask the profile's admin to add this device")))

        // Revoked, with no view recorded yet (no post-receive ran): refused, as after a failed one.
        let removed = ServerRefusal("access removed: alice revoked carol's access to \"kid\"")
        XCTAssertEqual(try ServePlan.connection("git-upload-pack 'kid'", key: carolKey, server: server, now: now), .refuse(removed))

        try PushCheck(server: server, repositoryPath: path).refreshKeyIndex([PushCheck.Update(old: nil, new: main, ref: "refs/heads/main")])
        let namespace = "revoked-" + Array("carol".utf8).map { String(format: "%02x", $0) }.joined()
        XCTAssertEqual(namespace, "revoked-6361726f6c")
        XCTAssertEqual(try ServePlan.connection("git-upload-pack 'kid'", key: carolKey, server: server, now: now),
                       .exec(ServePlan.Exec(program: "git-upload-pack", arguments: ["git-upload-pack", path],
                                            setting: ["CONCORD_SERVE_KEY": carolKey, "GIT_NAMESPACE": namespace],
                                            removing: ["GIT_PROTOCOL"])))
        XCTAssertEqual(try ServePlan.connection("concord-wait 'kid' \(String(repeating: "0", count: 40)) 5", key: carolKey, server: server, now: now),
                       .wait(ServeRequest(verb: .wait, profile: "kid", known: nil, seconds: 5),
                             ConcordServer.Admitted(repository: path, grant: .revoked, namespace: namespace, member: "carol")))
        XCTAssertEqual(try ServePlan.connection("git-receive-pack 'kid'", key: carolKey, server: server, now: now), .refuse(removed))
        XCTAssertEqual(try ServePlan.connection("concord-destroy 'kid'", key: carolKey, server: server, now: now), .refuse(removed))
    }

    func testADeletedProfileGivesItsMembersTheNoticeAndNothingElse() throws {
        let alice = try identity("alice"), bob = try identity("bob", device: "phone"), carol = try identity("carol", device: "tablet")
        let server = try makeServer(admin: alice)
        let main = try publishKid(on: server, admin: alice, editor: bob, revoked: carol)
        let environment = isolatedEnvironment(home: sandbox)
        let root = try XCTUnwrap(ObjectID(hex: try ProcessRunner.runOK(gitPath, ["rev-list", "--max-parents=0", main.hex],
                                                                      environment: environment, in: URL(fileURLWithPath: server.repositoryPath("kid")))))
        let info = try JSONSerialization.jsonObject(with: Data(contentsOf: sandbox.appendingPathComponent("kid-admin/.concord/profile.json")))
        let profileID = try XCTUnwrap((info as? [String: Any])?["id"] as? String)
        let notice = DeletionNotice.sign(profileID: profileID, profileName: "kid", root: root, identity: alice, at: now)
        let (aliceKey, bobKey) = (alice.key.publicKey.fingerprint, bob.key.publicKey.fingerprint)

        XCTAssertEqual(try ServePlan.connection("concord-destroy 'kid'", key: aliceKey, server: server, now: now), .destroy(profile: "kid"))
        try server.destroy("kid", key: aliceKey, noticeBytes: notice.bytes)
        XCTAssertFalse(FileManager.default.fileExists(atPath: server.repositoryPath("kid")))

        // Every member's device may read the notice (a revoked one too); nothing else is served under the name.
        for key in [aliceKey, bobKey, carol.key.publicKey.fingerprint] {
            XCTAssertEqual(try ServePlan.connection("concord-notice 'kid'", key: key, server: server, now: now), .notice(notice.bytes))
        }
        let deleted = ServerRefusal("profile \"kid\" was deleted by alice@laptop at \(notice.deletedAt); "
                                    + "'concord sync' checks the signed deletion notice and removes this device's copy")
        for command in ["git-upload-pack 'kid'", "git-receive-pack 'kid'", "concord-wait 'kid' \(main.hex) 5"] {
            XCTAssertEqual(try ServePlan.connection(command, key: bobKey, server: server, now: now), .refuse(deleted), command)
        }
        // Not even the admin's key makes it again, and a stranger's learns nothing.
        XCTAssertEqual(try ServePlan.connection("git-receive-pack 'kid'", key: aliceKey, server: server, now: now), .refuse(deleted))
        let stranger = try identity("mallory").key.publicKey.fingerprint
        XCTAssertEqual(try ServePlan.connection("concord-notice 'kid'", key: stranger, server: server, now: now),
                       .refuse(ServerRefusal("no profile \"kid\" here that the key \(stranger) may read: ask the profile's admin to add this device")))
    }

    /// Profile "kid" made by the admin's concord (bob an editor, carol added and revoked), pushed
    /// into the server's repository as it is (no hook runs: the post-receive is the test's to run).
    private func publishKid(on server: ConcordServer, admin: Identity, editor: Identity, revoked: Identity) throws -> ObjectID {
        let concord = try ConcordBinary.required()
        let environment = isolatedEnvironment(home: sandbox, ["CONCORD_HOME": admin.home.path, "GIT_AUTHOR_NAME": "Tester",
                                                              "GIT_AUTHOR_EMAIL": "tester@example.com", "GIT_COMMITTER_NAME": "Tester",
                                                              "GIT_COMMITTER_EMAIL": "tester@example.com"])
        let profile = sandbox.appendingPathComponent("kid-admin")
        try ProcessRunner.runOK(concord, ["init", profile.path, "--name", "kid", "--template", "aac"], environment: environment, in: sandbox)
        for (member, role) in [(editor, "editor"), (revoked, "user")] {
            try ProcessRunner.runOK(concord, ["members", "add", member.member, "--role", role, "--key", member.publicKeyLine, "--device", member.device],
                                    environment: environment, in: profile)
        }
        try ProcessRunner.runOK(concord, ["revoke", revoked.member], environment: environment, in: profile)
        try ProcessRunner.runOK(gitPath, ["init", "--bare", "-q", server.repositoryPath("kid")], environment: environment)
        try ProcessRunner.runOK(gitPath, ["push", "-q", server.repositoryPath("kid"), "HEAD:refs/heads/main"], environment: environment, in: profile)
        return try XCTUnwrap(ObjectID(hex: try ProcessRunner.runOK(gitPath, ["rev-parse", "HEAD"], environment: environment, in: profile)))
    }
}
