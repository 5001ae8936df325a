import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// What an app needs beside records, on the store (reproductions 2 and 3 of the engine issue):
/// someone else's copy refused before anything is read, owner-only folders, an Editor adding her
/// own new device, switching who acts without writing into the app's log kind, and trusting a
/// server's host key by its fingerprint (a real sshd on loopback).
final class StoreDeviceTests: ConcordTestCase {
    private func identity(_ member: String, device: String) throws -> Identity { try storeIdentity(member, device: device) }

    private func environment(_ identity: Identity) -> ConcordEnvironment { storeEnvironment(identity) }

    private func head(_ directory: URL) throws -> String { try revParse("HEAD", in: directory) }

    /// Bob opens Alice's copy with his identity: `notAMember` before any record is read (the index
    /// is not even made); Alice's second device, whose key she never added: `keyNotRegistered`.
    /// The copy's folder is its owner's alone.
    func testAnotherIdentityCannotOpenSomeoneElsesCopy() throws {
        let alice = try identity("alice", device: "laptop"), bob = try identity("bob", device: "phone")
        let directory = sandbox.appendingPathComponent("alice")
        let store = try ConcordStore.create(at: directory, name: "Journal", template: .aac, identity: alice, environment: environment(alice))
        try store.write { try $0.put("vocabulary", "secret", data: ["label": "alice's alone"]) }
        store.close()
        let index = directory.appendingPathComponent(".git/concord/index.sqlite")
        try? FileManager.default.removeItem(at: index)
        let before = try head(directory)

        guard case .notAMember(let member, let profile)? = thrownConcordError({
            try ConcordStore.open(at: directory, identity: bob, environment: self.environment(bob))
        }) else { return XCTFail("bob opened alice's copy") }
        XCTAssertEqual(member, "bob")
        XCTAssertEqual(profile, "Journal")
        XCTAssertFalse(FileManager.default.fileExists(atPath: index.path), "the refused open read records into the index")
        let tablet = try identity("alice", device: "tablet")
        guard case .keyNotRegistered? = thrownConcordError({
            try ConcordStore.open(at: directory, identity: tablet, environment: self.environment(tablet))
        }) else { return XCTFail("a key alice never added opened her copy") }
        XCTAssertEqual(try head(directory), before)

        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int)
        XCTAssertEqual(mode & 0o077, 0, String(mode, radix: 8))
        let reopened = try ConcordStore.open(at: directory, identity: alice, environment: environment(alice))
        XCTAssertEqual(try reopened.read { try $0.get("vocabulary", "secret").data?["label"] }, .string("alice's alone"))
    }

    /// An Editor adds her own new phone through the store (no Admin needed), with the phone's proof;
    /// a proof made for another member is refused; the phone clones and writes as her.
    func testAnEditorAddsHerOwnNewDevice() throws {
        let (remote, aliceStore, bobStore) = try sharedCareTeam()

        let phone = try identity("bob", device: "phone")
        let before = try head(bobStore.directory)
        guard case .invalidInput? = thrownConcordError({
            try bobStore.addDevice("phone", key: phone.key.publicKey, proof: phone.keyProof(profileID: bobStore.info.id, member: "alice"))
        }) else { return XCTFail("a proof for another member was taken") }
        XCTAssertEqual(try head(bobStore.directory), before)
        let added = try bobStore.addDevice("phone", key: phone.key.publicKey, proof: phone.keyProof(profileID: bobStore.info.id))
        XCTAssertEqual(added.value.keys.map(\.device), ["phone", "tablet"])
        _ = try bobStore.sync()

        let phoneStore = try ConcordStore.clone(url: remote.path, into: sandbox.appendingPathComponent("bob-phone"), identity: phone,
                                                environment: environment(phone))
        try phoneStore.write { try $0.put("vocabulary", "from-phone", data: ["label": "bob's phone"]) }
        _ = try phoneStore.sync()
        _ = try aliceStore.sync()
        XCTAssertEqual(try aliceStore.read { try $0.get("vocabulary", "from-phone").data?["label"] }, .string("bob's phone"))
        let signer = try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Device,valueonly)", "refs/remotes/origin/main"],
                               in: aliceStore.directory)
        XCTAssertTrue(signer.contains("phone"), signer)
    }

    /// Switching who acts through the store writes nothing into the app's log kind (whose entries
    /// keep the app's shape) and makes no commit; the store's next write names the acting member.
    func testSwitchActingThroughTheStoreLeavesTheAppsLogAlone() throws {
        let parent = try identity("parent", device: "ipad"), grandma = try identity("grandma", device: "phone")
        let taps = Kind("taps", policy: .append, writers: .user)
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("board"), name: "Board", template: .blank,
                                            identity: parent, environment: environment(parent), kinds: [taps])
        try store.addMember("grandma", role: .user, device: "phone", key: grandma.key.publicKey)
        let before = try head(store.directory)
        let refused = try XCTUnwrap(thrownConcordError({ try store.switchActing(to: "nobody") }), "switched to a non-member")
        XCTAssertTrue(refused.localizedDescription.contains("nobody"), refused.localizedDescription)
        try store.switchActing(to: "grandma")
        XCTAssertEqual(try head(store.directory), before, "the switch made a commit")
        XCTAssertEqual(try store.actingMember(), "grandma")
        XCTAssertEqual(try store.read { try $0.logEntries("taps").count }, 0)
        try store.write { try $0.append("taps", data: ["symbol": "juice"]) }
        let entries = try store.read { try $0.logEntries("taps") }
        XCTAssertEqual(entries.map { $0.data["symbol"] }, [.string("juice")])
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Actor,valueonly,separator=)"], in: store.directory)
            .trimmingCharacters(in: .whitespacesAndNewlines), "grandma")
        try store.switchActing(to: "parent")
        XCTAssertNil(try store.actingMember())
    }

    /// A store made by the app, with an ssh remote: a wrong fingerprint is refused and nothing is
    /// trusted (the sync still refuses the host); the server's fingerprint is trusted and the sync goes.
    func testTrustHostAcceptsOnlyTheGivenFingerprint() throws {
        let server = try startSSHServer()
        let bare = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: bare)
        let alice = try identity("alice", device: "laptop")
        try server.authorize(publicKeyLine: alice.publicKeyLine)
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("alice"), name: "Care team", template: .aac,
                                            identity: alice, environment: environment(alice))
        try store.addRemote("origin", url: server.url(for: bare))
        let knownHosts = alice.home.appendingPathComponent("known_hosts")
        let wrong = "SHA256:" + String(repeating: "A", count: 43)
        guard case .hostKeyMismatch(_, _, let expected, let presented)? = thrownConcordError({ try store.trustHost(fingerprint: wrong) }) else {
            return XCTFail("a wrong fingerprint was trusted")
        }
        XCTAssertEqual(expected, wrong)
        XCTAssertEqual(presented, server.hostKeyFingerprint)
        XCTAssertFalse((try? String(contentsOf: knownHosts, encoding: .utf8))?.contains("ssh-") ?? false, "something was trusted")
        guard case .untrustedHost? = thrownConcordError({ try store.sync() }) else { return XCTFail("the sync went to an untrusted host") }

        try store.trustHost(fingerprint: server.hostKeyFingerprint)
        let report = try store.sync()
        XCTAssertGreaterThan(report.sent, 0)
        XCTAssertEqual(try gitOK(["rev-parse", "refs/heads/main"], in: bare), try gitOK(["rev-parse", "HEAD"], in: store.directory))
    }
}
