import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// A `SyncEngine` bound to the store it syncs (`SyncEngine(for:)`), and the store's end: what the
/// store says after the engine synced (reproduction 1 of the engine issue), a revocation that ends
/// the store before its copy goes, `close()`, `removeLocalCopy()` after a sync threw `accessRemoved`.
/// Bare path remotes, stores opened as an app opens them.
final class StoreBoundEngineTests: ConcordTestCase {
    private let deadline: TimeInterval = 60

    private func careTeam() throws -> (remote: URL, alice: ConcordStore, bob: ConcordStore) {
        let (remote, alice, bob) = try sharedCareTeam()
        fsckAtEnd.removeAll { $0.standardizedFileURL == bob.directory.standardizedFileURL }
        return (remote, alice, bob)
    }

    private func remoteMain(_ bare: URL) throws -> String { try revParse("refs/heads/main", in: bare) }

    private func head(_ store: ConcordStore) throws -> String { try revParse("HEAD", in: store.directory) }

    /// The engine pushes the store's write and pulls Alice's: the store's status (pending 0, last
    /// sync set), its reads and its change feed see it as they see the store's own syncs.
    func testTheStoreSeesWhatItsBoundEngineSynced() async throws {
        let (remote, alice, bob) = try careTeam()
        XCTAssertEqual(bob.status.pendingCommits, 0)
        let clonedAt = bob.status.lastSync
        try await bob.write { try $0.put("vocabulary", "from-bob", data: ["label": "sent by the engine"]) }
        XCTAssertEqual(bob.status.pendingCommits, 1)
        let feed = bob.changes(since: nil)
        let (engine, recorder) = try startedEngine(for: bob, interval: 0.5)
        defer { engine.stop() }
        let bobHead = try head(bob)
        XCTAssertTrue(try waitUntil(deadline) { try remoteMain(remote) == bobHead }, "\(recorder.names(of: bob.directory))")
        XCTAssertTrue(waitUntil(deadline) { bob.status.pendingCommits == 0 && bob.status.lastSync != clonedAt },
                      "the store's status missed the engine's push: \(bob.status.snapshot)")
        XCTAssertNil(bob.status.lastError)

        try await alice.write { try $0.put("vocabulary", "from-alice", data: ["label": "pulled by the engine"]) }
        _ = try await alice.sync()
        XCTAssertTrue(waitUntil(deadline) { (try? bob.read { try $0.get("vocabulary", "from-alice").data?["label"] }) == .string("pulled by the engine") })
        var seen = Set<String>()
        for try await event in feed {
            for change in event.commit?.records ?? [] { seen.insert(change.reference) }
            if seen.contains("vocabulary/from-alice") { break }
        }
        XCTAssertTrue(seen.isSuperset(of: ["vocabulary/from-bob", "vocabulary/from-alice"]), "\(seen)")
        XCTAssertFalse(recorder.names(of: bob.directory).contains { $0.hasPrefix("failed") }, "\(recorder.names(of: bob.directory))")
    }

    /// Alice revokes Bob while his app holds the store open, reads its change feed, and has an edit
    /// it never sent: the engine ends the store first (the feed ends with `accessRemoved`, the
    /// status says so, every call throws it), then saves the edit and deletes the copy; a read
    /// afterwards re-creates nothing in the deleted folder.
    func testARevocationEndsTheStoreThenItsEngineDeletesTheCopy() async throws {
        let (_, alice, bob) = try careTeam()
        try await alice.revoke("bob")
        _ = try await alice.sync()
        try await bob.write { try $0.put("vocabulary", "unsent", data: ["label": "written before the revocation arrived"]) }
        XCTAssertFalse(bob.status.isAccessRemoved)
        let feed = bob.changes(since: nil)
        let ended = Task { () -> Result<ChangeEvent?, Error> in
            var last: ChangeEvent?
            do { for try await event in feed { last = event } } catch { return .failure(error) }
            return .success(last)
        }
        let (engine, recorder) = try startedEngine(for: bob, interval: 0.5)
        defer { engine.stop() }
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: bob.directory).last == "accessRemoved" }, "\(recorder.names(of: bob.directory))")
        guard case .accessRemoved(let removal) = recorder.events(of: bob.directory).last else { return XCTFail("no removal") }
        let saved = try String(contentsOf: try XCTUnwrap(removal.savedUnsentEdits), encoding: .utf8)
        XCTAssertTrue(saved.contains("written before the revocation arrived"), saved)

        let feedEnd = await ended.value
        guard case .success(.accessRemoved(let member, _, _)?) = feedEnd else { return XCTFail("the feed did not end with the removal: \(feedEnd)") }
        XCTAssertEqual(member, "bob")
        XCTAssertTrue(bob.status.isAccessRemoved)
        XCTAssertFalse(bob.isOpen)
        guard case .accessRemoved(_, _, let profile)? = thrownConcordError({ try bob.read { try $0.list().items.count } }) else {
            return XCTFail("a read after the removal did not throw it")
        }
        XCTAssertTrue(profile.contains("copy was deleted"), profile)
        guard case .accessRemoved? = thrownConcordError({ try bob.write { try $0.put("vocabulary", "late", data: ["label": "x"]) } }) else {
            return XCTFail("a write after the removal did not throw it")
        }
        _ = bob.status.pendingCommits
        XCTAssertFalse(FileManager.default.fileExists(atPath: bob.directory.path), "something was re-created in the deleted copy")
        XCTAssertNil(try bob.removeLocalCopy(), "the copy is gone already")
    }

    /// A sync of the store itself learns of the revocation: the store ends (reads throw it, the
    /// copy stays as it was); `removeLocalCopy()` then saves the unsent edit and deletes the copy,
    /// and the registry lists it as removed.
    func testRemoveLocalCopyAfterASyncThrewAccessRemoved() throws {
        let (_, alice, bob) = try careTeam()
        try alice.revoke("bob")
        _ = try alice.sync()
        try bob.write { try $0.put("vocabulary", "unsent", data: ["label": "only on bob's tablet"]) }
        guard case .accessRemoved? = thrownConcordError({ try bob.sync() }) else { return XCTFail("the sync did not throw accessRemoved") }
        XCTAssertTrue(bob.status.isAccessRemoved)
        guard case .accessRemoved(let member, let by, _)? = bob.status.lastError else {
            return XCTFail("the status's typed failure: \(String(describing: bob.status.lastError))")
        }
        XCTAssertEqual([member, by], ["bob", "alice"])
        guard case .accessRemoved? = thrownConcordError({ try bob.read { try $0.list().items.count } }) else {
            return XCTFail("a read after the removal did not throw it")
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: bob.directory.appendingPathComponent("vocabulary").path))
        let saved = try XCTUnwrap(try bob.removeLocalCopy())
        XCTAssertTrue(try String(contentsOf: saved, encoding: .utf8).contains("only on bob's tablet"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: bob.directory.path))
        let registry = try String(contentsOf: bob.identity.home.appendingPathComponent("profiles.json"), encoding: .utf8)
        XCTAssertTrue(registry.contains(#""removed": "access removed: alice revoked bob's access"#), registry)
    }

    /// `close()`: feeds end, every call throws `storeClosed`, a bound engine stops syncing it, and
    /// what was written stays; the profile opens again.
    func testCloseEndsTheStoreAndItsEngineAndKeepsTheData() async throws {
        let (remote, _, bob) = try careTeam()
        let (engine, recorder) = try startedEngine(for: bob, interval: 0.5)
        defer { engine.stop() }
        try await bob.write { try $0.put("vocabulary", "kept", data: ["label": "written before closing"]) }
        let bobHead = try head(bob)
        XCTAssertTrue(try waitUntil(deadline) { try remoteMain(remote) == bobHead })
        let feed = bob.changes(since: nil)
        bob.close()
        bob.close()
        do {
            for try await _ in feed {}
            XCTFail("the feed ended without an error")
        } catch {
            guard case .storeClosed? = error as? ConcordError else { return XCTFail("not storeClosed: \(error)") }
        }
        guard case .storeClosed? = thrownConcordError({ try bob.read { try $0.list().items.count } }) else { return XCTFail("read after close") }
        guard case .storeClosed? = thrownConcordError({ try bob.sync() }) else { return XCTFail("sync after close") }
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: bob.directory).last == "stopped" }, "\(recorder.names(of: bob.directory))")
        let reopened = try ConcordStore.open(at: bob.directory, identity: bob.identity, environment: bob.environment)
        let label = try await reopened.read { try $0.get("vocabulary", "kept").data?["label"] }
        XCTAssertEqual(label, .string("written before closing"))
    }

    /// The store used from 16 tasks at once while its bound engine syncs and another process (the
    /// CLI, as the same member) writes in the same copy: every acknowledged write is in the copy
    /// and on the remote at the end, and each profile check (`git fsck`, `concord verify`) passes.
    func testSixteenTasksWriteWhileTheEngineSyncsAndTheCLIWrites() async throws {
        let (remote, _, bob) = try careTeam()
        fsckAtEnd.append(bob.directory)
        let (engine, recorder) = try startedEngine(for: bob, interval: 0.2)
        defer { engine.stop() }
        let device = TestDevice(member: "bob", device: "tablet", home: bob.identity.home, publicKeyLine: bob.identity.publicKeyLine)
        // The CLI's writes, each a process of its own (the binary, not the in-process runner), on a thread of their own.
        let (binary, environment, directory) = (try ConcordBinary.required(), concordEnvironment(device), bob.directory)
        nonisolated(unsafe) var cliFailure: String?
        let cliDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { cliDone.signal() }
            for index in 0..<5 {
                let put = try? ProcessRunner.run(binary, ["put", "vocabulary/cli-\(index)", "--json", #"{"label":"from the CLI"}"#],
                                                 environment: environment, in: directory, deadline: 120)
                guard let put, put.status == 0 else { cliFailure = put?.summary ?? "concord put did not run"; return }
            }
        }
        let started = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for write in 0..<4 {
                        try await bob.write { try $0.put("vocabulary", "t\(task)-\(write)", data: ["label": .string("task \(task)")]) }
                        _ = try await bob.read { try $0.list(kind: "vocabulary").items.count }
                    }
                }
            }
            try await group.waitForAll()
        }
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { cliDone.wait(); finished.resume() }
        }
        if let cliFailure { XCTFail("the CLI's put failed: \(cliFailure)") }
        XCTAssertLessThan(Date().timeIntervalSince(started), 120, "16 tasks beside a sync engine took too long")
        let expected = Set((0..<16).flatMap { task in (0..<4).map { "t\(task)-\($0)" } } + (0..<5).map { "cli-\($0)" })
        let ids = try await bob.read { Set(try $0.list(kind: "vocabulary").items.map(\.id)) }
        XCTAssertTrue(expected.isSubset(of: ids), "lost: \(expected.subtracting(ids).sorted())")
        let bobHead = try head(bob)
        XCTAssertTrue(try waitUntil(deadline) { try remoteMain(remote) == (try head(bob)) }, "the engine did not send everything: \(bobHead)")
        XCTAssertTrue(waitUntil(deadline) { bob.status.pendingCommits == 0 }, "\(bob.status.snapshot)")
        XCTAssertFalse(recorder.names(of: bob.directory).contains { $0.hasPrefix("failed") }, "\(recorder.names(of: bob.directory))")
        try concordOK(["verify"], as: device, in: bob.directory)
    }
}
