import ConcordTestSupport
import XCTest

@testable import ConcordKit

/// One `ConcordStore` shared by 16 tasks (and, below, 16 threads) writing, reading and syncing to a
/// bare path remote at once, while a second device writes and syncs too: no write acknowledged
/// to a caller is lost, nothing deadlocks, and it ends within a generous bound. Run under
/// ThreadSanitizer for data races (`swift test --sanitize=thread --filter StoreConcurrency`).
final class StoreConcurrencyTests: KitTestCase {
    /// How long the whole run may take before the test fails as a deadlock (ThreadSanitizer is slow).
    private let bound: TimeInterval = 600

    func testSixteenTasksWritingReadingAndSyncingAtOnce() throws {
        let (remote, alice, bob) = try twoDevices()
        let outcome = ThreadResult<Result<[String], Error>>()
        Task.detached {
            let result: Result<[String], Error>
            do { result = .success(try await Workload.sixteenTasks(alice, bob)) } catch { result = .failure(error) }
            outcome.set(result)
        }
        guard let finished = outcome.wait(seconds: bound) else { return XCTFail("the 16 tasks did not finish in \(Int(bound)) s") }
        try assertEverythingKept(try finished.get(), remote: remote, alice, bob)
    }

    func testSixteenThreadsCallingTheBlockingAPIAtOnce() throws {
        let (remote, alice, bob) = try twoDevices()
        let threads = (0..<16).map { index in
            Thread.detachNewThreadWithResult { Result { try Workload.blockingWork(index, alice, bob) } }
        }
        let deadline = Date().addingTimeInterval(bound)
        var acknowledged = [String]()
        for (index, thread) in threads.enumerated() {
            guard let result = thread.wait(seconds: max(0, deadline.timeIntervalSinceNow)) else {
                return XCTFail("thread \(index) did not finish in \(Int(bound)) s")
            }
            acknowledged += try result.get()
        }
        try assertEverythingKept(acknowledged, remote: remote, alice, bob)
    }

    /// After a last round of syncs, both devices and the remote hold every acknowledged write, and verify.
    private func assertEverythingKept(_ acknowledged: [String], remote: URL, _ alice: ConcordStore, _ bob: ConcordStore,
                                      file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(acknowledged.count, 40, "every write wrote", file: file, line: line)
        _ = try alice.sync()
        _ = try bob.sync()
        _ = try alice.sync()
        for store in [alice, bob] {
            let ids = Set(try store.read { try $0.list(kind: "vocabulary").items.map(\.id) })
            XCTAssertEqual(ids, Set(acknowledged), "\(store.identity.member) lost a write", file: file, line: line)
            XCTAssertNoThrow(try store.withProfile { try $0.verification.run() }, file: file, line: line)
        }
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: alice.directory), try gitOK(["rev-parse", "HEAD"], in: bob.directory),
                       file: file, line: line)
        fsckAtEnd(remote, alice.directory, bob.directory)
    }

    /// A bare path remote, alice's store pushed to it, and bob (an editor) cloned from it as a store.
    private func twoDevices() throws -> (URL, ConcordStore, ConcordStore) {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "phone")
        let remote = sandbox.appendingPathComponent("remote.git")
        try Profile.createBareRemote(at: remote)
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

/// What the tasks and threads of `StoreConcurrencyTests` do.
private enum Workload {
    /// Tasks 0–9 write (on both devices), 10–12 read, 13–15 sync; each returns the records whose
    /// writes returned a commit.
    static func sixteenTasks(_ alice: ConcordStore, _ bob: ConcordStore) async throws -> [String] {
        try await withThrowingTaskGroup(of: [String].self) { group in
            for index in 0..<16 {
                group.addTask {
                    let store = index.isMultiple(of: 3) ? bob : alice
                    var written = [String]()
                    for round in 0..<4 {
                        switch index {
                        case 0..<10:
                            let id = "t\(index)-\(round)"
                            let result = try await store.write { try $0.put("vocabulary", id, data: ["n": JSONValue(round)]) }
                            if result.commit != nil { written.append(id) }
                        case 10..<13:
                            let count = try await store.read { reader in try reader.list(kind: "vocabulary").items.count }
                            precondition(count >= 0)
                        default:
                            _ = try await store.sync()
                        }
                    }
                    return written
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    /// `sixteenTasks` with the blocking calls, for thread `index`.
    static func blockingWork(_ index: Int, _ alice: ConcordStore, _ bob: ConcordStore) throws -> [String] {
        let store = index.isMultiple(of: 3) ? bob : alice
        var written = [String]()
        for round in 0..<4 {
            switch index {
            case 0..<10:
                let id = "b\(index)-\(round)"
                if try store.write({ try $0.put("vocabulary", id, data: ["n": JSONValue(round)]) }).commit != nil { written.append(id) }
            case 10..<13:
                _ = try store.read { reader in try reader.history(HistoryFilter(limit: 5)).count }
            default:
                _ = try store.sync()
            }
        }
        return written
    }
}
