import ConcordGit
import ConcordTestSupport
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// `ConcordStore`: opened once with an identity, its reads, writes, sharing and sync, its errors,
/// the cancellation of its `async` calls, and another process (the CLI) using the profile meanwhile.
final class StoreTests: KitTestCase {
    func testOpenWriteReadAndReopen() async throws {
        let alice = try makeIdentity()
        let directory = sandbox.appendingPathComponent("kitchen")
        let store = try ConcordStore.create(at: directory, name: "Kitchen", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let written = try await store.write { transaction in try transaction.put("vocabulary", "apple", data: ["label": "apple"]) }
        XCTAssertNotNil(written.commit)
        let asynchronous = try await store.write { transaction in try transaction.put("vocabulary", "pear", data: ["label": "pear"]) }
        XCTAssertEqual(asynchronous.changes.map(\.reference), ["vocabulary/pear"])
        let labels = try await store.read { reader in
            try ["apple", "pear"].map { try reader.get("vocabulary", $0).data?["label"]?.stringValue }
        }
        XCTAssertEqual(labels, ["apple", "pear"])

        let reopened = try ConcordStore.open(at: directory, identity: alice, environment: makeEnvironment(alice))
        XCTAssertEqual(reopened.info, store.info)
        XCTAssertEqual(reopened.directory, directory.standardizedFileURL)
        XCTAssertEqual(reopened.identity.member, "alice")
        let listed = try await reopened.read { reader in try reader.list(kind: "vocabulary").items.map(\.id).sorted() }
        XCTAssertEqual(listed, ["apple", "pear"])
        let history = try await reopened.read { reader in try reader.history().map(\.member) }
        XCTAssertEqual(history, ["alice", "alice", "alice"])
        let members = try await reopened.read { try $0.members().map(\.name) }
        XCTAssertEqual(members, ["alice"])

        let dump = Dump(records: [Dump.RecordItem(kind: "vocabulary", id: "plum", data: ["label": "plum"])], logs: [])
        let imported = try await reopened.importDump(dump)
        XCTAssertEqual(imported.value.records, 1)
        let plum = try await store.read { try $0.get("vocabulary", "plum").data?["label"]?.stringValue }
        XCTAssertEqual(plum, "plum", "a second store on one profile reads what the first wrote")
    }

    func testOpeningWhatIsNotAProfileOrIsNewer() throws {
        let alice = try makeIdentity()
        let empty = sandbox.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let notAProfile = concordError { try ConcordStore.open(at: empty, identity: alice, environment: makeEnvironment(alice)) }
        XCTAssertEqual(notAProfile, .notAProfile(empty.path))
        XCTAssertEqual(notAProfile?.localizedDescription.contains("\n"), false)

        let profile = try makeProfile(identity: alice)
        let file = profile.root.appendingPathComponent(".concord/profile.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        try Data(text.replacingOccurrences(of: #""formatVersion": \#(concordFormatVersion)"#, with: #""formatVersion": 99"#).utf8).write(to: file)
        XCTAssertEqual(concordError { try ConcordStore.open(at: profile.root, identity: alice, environment: makeEnvironment(alice)) },
                       .newerFormat(found: 99, supported: concordFormatVersion))
    }

    func testACallInsideAnotherCallsClosureIsRefused() throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let nested = concordError {
            try store.read { _ in try store.write { try $0.put("vocabulary", "x", data: ["label": "x"]) }.commit }
        }
        XCTAssertEqual(nested, ProfileQueue.nested)
        XCTAssertEqual(try store.read { try $0.list().items.count }, 0, "the nested write wrote nothing")
    }

    func testSharingThroughTheStore() async throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "phone")
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let remote = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: remote)
        try await store.addRemote("origin", url: remote.path)
        let before = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        try await store.addMember("bob", role: .editor, device: "phone", key: bob.key.publicKey)
        let invitation = try await store.share("carol", role: .viewer, expiresIn: 3600)
        XCTAssertEqual(invitation.invitation.member, "carol")
        try await store.setRole("bob", to: .viewer)
        try await store.revoke("bob")
        let members = try await store.read { reader in try reader.members().map { "\($0.name) \($0.role.rawValue) \($0.status.rawValue)" } }
        XCTAssertEqual(members, ["alice admin active", "bob viewer revoked", "carol viewer invited"])
        let report = try await store.sync()
        XCTAssertGreaterThan(report.sent, 0)
        let head = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        XCTAssertNotEqual(head, before)
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: remote), head)
    }

    /// A call whose task is cancelled while another holds the store ends at once, and never runs.
    func testCancelledWhileWaitingForTheStoreEndsAtOnce() async throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let holding = Thread.detachNewThreadWithResult {
            (try? store.write { transaction in
                try transaction.put("vocabulary", "slow", data: ["label": "slow"])
                Thread.sleep(forTimeInterval: 3)
            })?.commit
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        let waiting = Task { try await store.write { try $0.put("vocabulary", "never", data: ["label": "never"]) } }
        try await Task.sleep(nanoseconds: 200_000_000)
        let cancelled = Date()
        waiting.cancel()
        do {
            _ = try await waiting.value
            XCTFail("the cancelled write ran")
        } catch is CancellationError {}
        XCTAssertLessThan(Date().timeIntervalSince(cancelled), 1.0, "cancellation waited for the store")
        XCTAssertNotNil(holding.wait())
        let ids = try await store.read { try $0.list().items.map(\.id) }
        XCTAssertEqual(ids, ["slow"])
    }

    /// A sync cut at the transfer's next callback leaves a profile that verifies, and the next sync brings everything.
    func testACancelledTransferLeavesTheProfileConsistent() throws {
        let (remote, aliceStore, bobStore) = try twoStores()
        try bobStore.write { transaction in
            for index in 0..<300 { try transaction.put("vocabulary", "w\(index)", data: ["n": JSONValue(index)]) }
        }
        for index in 0..<5 { try bobStore.write { try $0.put("vocabulary", "b\(index)", data: ["n": JSONValue(index)]) } }
        _ = try bobStore.sync()
        let before = try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory)

        let cancellation = TransferCancellation()
        cancellation.cancel()
        let error = try aliceStore.withProfile { profile in
            cancellation.whileCurrent { thrownError(Error.self) { try profile.sync.run(as: aliceStore.identity) }.error }
        }
        XCTAssertTrue(error is TransferCancelled, "a cancelled transfer must not finish: \(String(describing: error))")
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory), before)
        XCTAssertEqual(try aliceStore.read { try $0.list().items.count }, 0)
        XCTAssertNoThrow(try aliceStore.withProfile { try $0.verification.run() })

        let report = try aliceStore.sync()
        XCTAssertEqual(report.received, 6)
        XCTAssertEqual(try aliceStore.read { try $0.list().items.count }, 305)
        XCTAssertNoThrow(try aliceStore.withProfile { try $0.verification.run() })
        fsckAtEnd(remote, aliceStore.directory, bobStore.directory)
    }

    /// The sync queue's second `Profile` is opened by the first sync, not by `open`: a store that
    /// never syncs never opens it, and a failure to open it is that sync's error (the next sync tries again).
    func testTheSyncEngineIsOpenedByTheFirstSync() throws {
        let (remote, aliceStore, bobStore) = try twoStores()
        let reopened = try ConcordStore.open(at: aliceStore.directory, identity: aliceStore.identity, environment: aliceStore.environment)
        XCTAssertFalse(reopened.isSyncEngineOpen)
        try bobStore.write { try $0.put("vocabulary", "lazy", data: ["label": "lazy"]) }
        _ = try bobStore.sync()
        XCTAssertEqual(try reopened.read { try $0.list().items.count }, 0)
        XCTAssertFalse(reopened.isSyncEngineOpen, "reads and other stores' syncs leave it closed")

        // The profile's description gone between `open` and the first sync: that sync says so.
        let description = reopened.directory.appendingPathComponent(".concord/profile.json")
        let aside = sandbox.appendingPathComponent("profile.json")
        try FileManager.default.moveItem(at: description, to: aside)
        let failed = concordError { try reopened.sync() }
        guard case .notAProfile = failed else { return XCTFail("expected notAProfile, got \(String(describing: failed))") }
        XCTAssertFalse(reopened.isSyncEngineOpen)

        try FileManager.default.moveItem(at: aside, to: description)
        XCTAssertEqual(try reopened.sync().received, 1)
        XCTAssertTrue(reopened.isSyncEngineOpen)
        XCTAssertEqual(try reopened.read { try $0.get("vocabulary", "lazy").data?["label"]?.stringValue }, "lazy")
        fsckAtEnd(remote, aliceStore.directory, bobStore.directory)
    }

    /// An `async` sync whose task is cancelled while it runs ends within a second, and leaves the profile consistent.
    func testCancellingAnAsyncSync() async throws {
        let (remote, aliceStore, bobStore) = try twoStores()
        for batch in 0..<20 {
            try await bobStore.write { transaction in
                for index in 0..<50 { try transaction.put("vocabulary", "w\(batch)-\(index)", data: ["n": JSONValue(index)]) }
            }
        }
        _ = try await bobStore.sync()
        // A sync fetches into a quarantine of its own (`quarantine-<pid>-…` under .git/concord, without
        // the profile lock): cancel once it is there, while the transfer runs.
        let concordDirectory = aliceStore.directory.appendingPathComponent(".git/concord").path
        let fetching = { ((try? FileManager.default.contentsOfDirectory(atPath: concordDirectory)) ?? []).contains { $0.hasPrefix("quarantine-") } }
        var outcomes = [String]()
        for _ in 0..<3 {
            let syncing = Task { try await aliceStore.sync() }
            let started = Date()
            while !fetching(), Date().timeIntervalSince(started) < 10 {
                try await Task.sleep(nanoseconds: 1_000_000)
            }
            let cancelled = Date()
            syncing.cancel()
            let outcome = await syncing.result
            let seconds = Date().timeIntervalSince(cancelled)
            XCTAssertLessThan(seconds, 5.0, "the cancelled sync kept running")
            switch outcome {
            case .success(let report): outcomes.append("finished (\(report.received) received)")
            case .failure(let error): XCTAssertTrue(error is CancellationError, "\(error)"); outcomes.append("cancelled")
            }
            outcomes[outcomes.count - 1] += String(format: " after %.3f s", seconds)
            try await aliceStore.withProfile { _ = try $0.verification.run() }
        }
        print("cancelled syncs: \(outcomes)")
        XCTAssertTrue(outcomes.contains { $0.hasPrefix("cancelled") }, "no sync was cut: \(outcomes)")
        _ = try await aliceStore.sync()
        let count = try await aliceStore.read { try $0.list().items.count }
        XCTAssertEqual(count, 1000)
        let status = try await aliceStore.read { try $0.syncStatus() }
        XCTAssertEqual(status.ahead, 0)
        fsckAtEnd(remote, aliceStore.directory, bobStore.directory)
    }
}

extension KitTestCase {
    /// A bare path remote, alice's store pushed to it, and bob (an editor) cloned from it as a store.
    func twoStores() throws -> (remote: URL, alice: ConcordStore, bob: ConcordStore) {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "phone")
        let remote = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: remote)
        let aliceStore = try ConcordStore.create(at: sandbox.appendingPathComponent("alice"), name: "Shared", template: .aac,
                                                 identity: alice, environment: makeEnvironment(alice))
        try aliceStore.addRemote("origin", url: remote.path)
        try aliceStore.addMember("bob", role: .editor, device: "phone", key: bob.key.publicKey)
        _ = try aliceStore.sync()
        let bobStore = try ConcordStore.clone(url: remote.path, into: sandbox.appendingPathComponent("bob"), identity: bob,
                                              environment: makeEnvironment(bob))
        return (remote, aliceStore, bobStore)
    }
}

/// A thread's result, for a test that runs something beside its own work.
final class ThreadResult<T: Sendable>: @unchecked Sendable {
    // Safe: `value` is written once, before `done` is signalled, and read only after waiting for that.
    private var value: T?
    private let done = DispatchSemaphore(value: 0)

    init() {}

    func set(_ result: T) {
        value = result
        done.signal()
    }

    /// Waits for the thread and returns what it gave.
    func wait() -> T {
        done.wait()
        return value!
    }

    /// `wait`, giving up after `seconds`: nil when the thread had not finished by then.
    func wait(seconds: TimeInterval) -> T? {
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return value
    }
}

extension Thread {
    /// Runs `body` on a new thread; `wait()` on the result gives its value.
    static func detachNewThreadWithResult<T: Sendable>(_ body: @escaping @Sendable () -> T) -> ThreadResult<T> {
        let result = ThreadResult<T>()
        Thread.detachNewThread { result.set(body()) }
        return result
    }
}
