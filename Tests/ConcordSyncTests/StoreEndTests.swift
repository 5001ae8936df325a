import ConcordKit
import ConcordTestSupport
import Foundation
import Observation
import Synchronization
import XCTest

/// How a store ends beside the sync engine bound to it (a review of the engine issue's first step):
/// `destroy()` ends the store before its copy goes, a sync after a removal touches nothing, a
/// call inside a closure that would wait for the store's other queue is refused or returns, the
/// store's own sync learning a revocation first still has the engine remove the copy, and a
/// clone by someone the profile does not list leaves nothing. Every wait is bounded.
final class StoreEndTests: ConcordTestCase {
    private let deadline: TimeInterval = 60

    /// How a change feed ended, once it did (read on a task of its own, so a test waits for it with a deadline).
    private final class FeedEnd: Sendable {
        private let end = Mutex<Result<ChangeEvent?, Error>?>(nil)
        init(_ feed: AsyncThrowingStream<ChangeEvent, Error>) {
            Task { [self] in
                var last: ChangeEvent?
                do {
                    for try await event in feed { last = event }
                    self.end.withLock { $0 = .success(last) }
                } catch {
                    self.end.withLock { $0 = .failure(error) }
                }
            }
        }
        var result: Result<ChangeEvent?, Error>? { end.withLock { $0 } }
    }

    /// Lines a thread of the test writes and the test reads.
    private final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Every file under `directory/.git` with its size and modification time: what a sync would change.
    private func gitFiles(_ directory: URL) -> [String: String] {
        let root = directory.appendingPathComponent(".git").path
        var files = [String: String]()
        let walker = FileManager.default.enumerator(atPath: root)
        while let relative = walker?.nextObject() as? String {
            let attributes = try? FileManager.default.attributesOfItem(atPath: root + "/" + relative)
            files[relative] = "\(attributes?[.size] ?? "") \(attributes?[.modificationDate] ?? "")"
        }
        return files
    }

    /// The Admin deletes the profile while her app has a change feed open and a sync engine bound:
    /// the feed ends with `profileDeleted`, every call throws it, the engine tells the deletion and
    /// stops, and nothing comes back in the deleted folder.
    func testDestroyEndsTheStoreAndItsEngineBeforeTheCopyGoes() async throws {
        let (remote, alice, bob) = try sharedCareTeam()
        fsckAtEnd.removeAll { [alice.directory, bob.directory, remote].map(\.standardizedFileURL).contains($0.standardizedFileURL) }
        let (engine, recorder) = try startedEngine(for: alice, interval: 0.1)
        defer { engine.stop() }
        let feed = FeedEnd(alice.changes(since: nil))
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: alice.directory).contains("started") }, "the engine did not start")
        let report = try await alice.destroy()
        XCTAssertTrue(report.copyDeleted, "\(report.failed)")
        XCTAssertTrue(waitUntil(deadline) { feed.result != nil }, "the change feed did not end")
        guard case .success(.profileDeleted(_, let by, _)?)? = feed.result else {
            return XCTFail("the feed did not end with profileDeleted: \(String(describing: feed.result))")
        }
        XCTAssertEqual(by, "alice")
        XCTAssertFalse(alice.isOpen)
        guard case .profileDeleted? = thrownConcordError({ try alice.read { try $0.list().items.count } }) else {
            return XCTFail("a read after destroy did not throw profileDeleted")
        }
        guard case .profileDeleted? = thrownConcordError({ try alice.sync() }) else { return XCTFail("a sync after destroy") }
        // The engine tells the deletion as one (not as a failure of its sync) and syncs no more.
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: alice.directory).last == "profileDeleted" }, "\(recorder.names(of: alice.directory))")
        guard case .profileDeleted(let removal) = recorder.events(of: alice.directory).last else { return XCTFail("no deletion told") }
        XCTAssertTrue(removal.deleted)
        XCTAssertFalse(recorder.names(of: alice.directory).contains { $0.hasPrefix("failed") }, "\(recorder.names(of: alice.directory))")
        try await Task.sleep(for: .milliseconds(500))   // five of the engine's ticks
        XCTAssertFalse(FileManager.default.fileExists(atPath: alice.directory.path), "something was re-created in the deleted copy")
    }

    /// After a sync threw `accessRemoved`, another sync throws it again at once and changes nothing
    /// under `.git` (what Alice pushed since is not fetched into the revoked copy, no lock taken).
    func testASyncAfterTheRemovalTouchesNothing() throws {
        let (_, alice, bob) = try sharedCareTeam()
        try alice.revoke("bob")
        _ = try alice.sync()
        guard case .accessRemoved? = thrownConcordError({ try bob.sync() }) else { return XCTFail("the first sync did not throw accessRemoved") }
        try alice.write { try $0.put("vocabulary", "after", data: ["label": "for a sync that should not fetch it"]) }
        _ = try alice.sync()
        let before = gitFiles(bob.directory)
        XCTAssertFalse(before.isEmpty)
        guard case .accessRemoved? = thrownConcordError({ try bob.sync() }) else { return XCTFail("the second sync did not throw accessRemoved") }
        XCTAssertEqual(gitFiles(bob.directory), before, "the second sync changed the revoked copy")
        _ = try bob.removeLocalCopy()
        XCTAssertFalse(FileManager.default.fileExists(atPath: bob.directory.path))
    }

    /// Inside a read's closure: `sync()` and `removeLocalCopy()` are refused (they would wait for a
    /// queue that may wait for this one), and `close()` returns while the bound engine syncs; the
    /// store is closed once the read returned, and the engine stops.
    func testCallsInsideAClosureDoNotWaitForTheOtherQueue() throws {
        let (_, _, bob) = try sharedCareTeam()
        fsckAtEnd.append(bob.directory)
        let (engine, recorder) = try startedEngine(for: bob, interval: 0.1)
        defer { engine.stop() }
        try bob.write { try $0.put("vocabulary", "busy", data: ["label": "for the engine to send"]) }
        let finished = DispatchSemaphore(value: 0)
        let outcome = Lines()
        Thread.detachNewThread {
            defer { finished.signal() }
            do {
                try bob.read { _ in
                    let sync = (try? bob.sync()) == nil ? "sync refused" : "sync ran"
                    let removal = (try? bob.removeLocalCopy()) == nil ? "removal refused" : "removal ran"
                    bob.close()
                    for line in [sync, removal, "closed"] { outcome.append(line) }
                }
            } catch {
                outcome.append("read threw \(error)")
            }
        }
        XCTAssertEqual(finished.wait(timeout: .now() + deadline), .success, "close() inside a read waited for the sync queue")
        XCTAssertEqual(outcome.all, ["sync refused", "removal refused", "closed"])
        guard case .storeClosed? = thrownConcordError({ try bob.read { try $0.list().items.count } }) else { return XCTFail("read after close") }
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: bob.directory).last == "stopped" }, "\(recorder.names(of: bob.directory))")
        let reopened = try ConcordStore.open(at: bob.directory, identity: bob.identity, environment: bob.environment)
        XCTAssertEqual(try reopened.read { try $0.get("vocabulary", "busy").data?["label"] }, .string("for the engine to send"))
    }

    /// An app stops the engine from a handler of the store's status (`withObservationTracking`),
    /// which runs on the thread of the engine's sync that changed it: `stop()` returns (it would
    /// wait for that very thread otherwise), and the engine stops once its sync is done.
    func testStoppingTheEngineFromAStatusHandlerDuringItsSyncReturns() throws {
        let (_, _, bob) = try sharedCareTeam()
        fsckAtEnd.append(bob.directory)
        let engine = try SyncEngine(for: bob, interval: 0.1)
        let outcome = Lines()
        withObservationTracking {
            _ = bob.status.isSyncing
        } onChange: {
            engine.stop()
            outcome.append("stop returned")
        }
        engine.start()
        defer {
            // Bounded: without the rule, the engine's thread waits for itself and a stop never returns.
            let stopped = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                engine.stop()
                stopped.signal()
            }
            XCTAssertEqual(stopped.wait(timeout: .now() + deadline), .success, "the engine did not stop")
        }
        try bob.write { try $0.put("vocabulary", "handled", data: ["label": "for the engine to send"]) }
        XCTAssertTrue(waitUntil(deadline) { outcome.all == ["stop returned"] }, "stop() inside the handler did not return: \(outcome.all)")
        XCTAssertTrue(waitUntil(deadline) { engine.progress(of: bob.directory)?.phase == .stopped },
                      "\(String(describing: engine.progress(of: bob.directory)))")
    }

    /// The store's own sync learns of the revocation before its bound engine does: the engine's
    /// next sync learns it too, tells `accessRemoved` with what it did, and deletes the copy.
    func testTheEngineRemovesTheCopyAfterTheStoresOwnSyncLearnedTheRevocation() throws {
        let (_, alice, bob) = try sharedCareTeam()
        try alice.revoke("bob")
        _ = try alice.sync()
        let engine = try SyncEngine(for: bob, interval: 0.2)
        let recorder = EngineRecorder(engine)
        guard case .accessRemoved? = thrownConcordError({ try bob.sync() }) else { return XCTFail("the store's sync did not throw accessRemoved") }
        engine.start()
        defer { engine.stop() }
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: bob.directory).last == "accessRemoved" }, "\(recorder.names(of: bob.directory))")
        XCTAssertFalse(FileManager.default.fileExists(atPath: bob.directory.path))
        guard case .accessRemoved? = thrownConcordError({ try bob.read { try $0.list().items.count } }) else { return XCTFail("read after removal") }
    }

    /// Carol is not a member: cloning the profile as her refuses with `notAMember` and leaves
    /// neither the copy nor an entry in her registry.
    func testACloneBySomeoneTheProfileDoesNotListLeavesNothing() throws {
        let (remote, _, _) = try sharedCareTeam()
        let carol = try storeIdentity("carol", device: "phone")
        let target = sandbox.appendingPathComponent("carol")
        let refused = thrownConcordError {
            try ConcordStore.clone(url: remote.path, into: target, identity: carol, environment: storeEnvironment(carol))
        }
        guard case .notAMember(let member, _)? = refused else { return XCTFail("not notAMember: \(String(describing: refused))") }
        XCTAssertEqual(member, "carol")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.appendingPathComponent(".git").path), "the clone was left")
        let registry = (try? String(contentsOf: carol.home.appendingPathComponent("profiles.json"), encoding: .utf8)) ?? ""
        XCTAssertFalse(registry.contains(target.lastPathComponent + "\""), registry)
    }
}
