import ConcordTestSupport
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// An Admin's kind change travels: the other device's sync checks and admits it (the access rule
/// lets an Admin change `.concord/kinds.json` with `.gitattributes`), and that device's engine
/// writes under the new kinds at once, without being opened again. (A non-Admin's kinds change
/// refused by the other device: SyncAccessTests.testAnEditorEditingTheKindsIsRefused.)
final class KindSyncTests: KitTestCase {
    func testAnAdminsKindChangesReachAnotherDeviceThroughABareRemote() throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "phone")
        let remote = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: remote)
        let ours = try makeProfile("alice", identity: alice)
        try ours.sync.addRemote("origin", url: remote.path)
        try ours.members.add("bob", role: .editor, device: "phone", key: bob.key.publicKey, as: alice)
        _ = try ours.sync.run(as: alice)
        let theirs = try Sync.clone(url: remote.path, into: sandbox.appendingPathComponent("bob"), identity: bob,
                                    environment: makeEnvironment(bob))
        fsckAtEnd(remote, ours.root, theirs.root)

        // Alice adds a kind; bob's sync admits the commit and his engine knows the kind at once.
        try ours.records.addKinds([try RecordKind(name: "notes", policy: .lww, writers: .user)], as: alice)
        XCTAssertEqual(try ours.sync.run(as: alice).sent, 1)
        let received = try theirs.sync.run(as: bob)
        XCTAssertEqual(received.received, 1)
        XCTAssertEqual(received.unresolved.count, 0)
        XCTAssertEqual(Set(received.changedFiles), [KindsTable.path, ".gitattributes"])
        XCTAssertEqual(theirs.kinds.kind(named: "notes")?.writers, .user)
        XCTAssertEqual(Array(try Data(contentsOf: theirs.root.appendingPathComponent(".gitattributes"))), Array(ours.kinds.gitattributes().utf8))
        try theirs.records.write(as: bob) { try $0.put("notes", "n1", data: ["text": "from bob"]) }
        XCTAssertEqual(try theirs.sync.run(as: bob).sent, 1)
        XCTAssertEqual(try ours.sync.run(as: alice).received, 1)
        XCTAssertEqual(try ours.records.get("notes", "n1").data?["text"], "from bob")

        // Alice raises the kind's writers; bob's next write to it is refused on his device.
        try ours.records.setKind(name: "notes", writers: .admin, as: alice)
        _ = try ours.sync.run(as: alice)
        _ = try theirs.sync.run(as: bob)
        XCTAssertEqual(theirs.kinds.kind(named: "notes")?.writers, .admin)
        guard case .notAllowed(let member, _, _, let needs, _, _)? = concordError({
            try theirs.records.write(as: bob) { try $0.put("notes", "n2", data: ["text": "again"]) }
        }) else { return XCTFail("bob may no longer write notes") }
        XCTAssertEqual([member, needs.rawValue], ["bob", "admin"])

        // Both devices' whole histories pass the check every device makes.
        XCTAssertEqual(try ours.verification.run().head, try gitOK(["rev-parse", "HEAD"], in: ours.root))
        XCTAssertEqual(try theirs.verification.run().head, try gitOK(["rev-parse", "HEAD"], in: theirs.root))
    }

    /// A kind another engine (another process: `concord kinds add`) added is seen by an open store's
    /// engine at once: its reads list it and its writes use it, without opening the store again.
    func testAKindAddedByAnotherEngineIsSeenByAnOpenStore() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let store = try ConcordStore.open(at: profile.root, identity: alice, environment: makeEnvironment(alice))
        XCTAssertNil(try store.read { $0.kinds.kind(named: "notes") })
        let other = try Profile.open(at: profile.root, environment: makeEnvironment(alice))
        try other.records.addKinds([try RecordKind(name: "notes", policy: .lww, writers: .user)], as: alice)
        XCTAssertEqual(try store.read { $0.kinds.kind(named: "notes")?.writers }, .user)
        try store.write { try $0.put("notes", "n1", data: ["text": "seen"]) }
        try other.records.setKind(name: "notes", writers: .admin, as: alice)
        XCTAssertEqual(try store.read { $0.kinds.kind(named: "notes")?.writers }, .admin)
    }
}
