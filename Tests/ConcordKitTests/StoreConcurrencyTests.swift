import ConcordTestSupport
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// One `ConcordStore` shared by 16 tasks (and, below, 16 threads) writing, reading and syncing to a
/// bare path remote at once, while a second device writes and syncs too: no write acknowledged
/// to a caller is lost, nothing deadlocks, and it ends within a generous bound. Run under
/// ThreadSanitizer for data races (`swift test --sanitize=thread --filter StoreConcurrency`).
final class StoreConcurrencyTests: KitTestCase {
    /// How long the whole run may take before the test fails as a deadlock (ThreadSanitizer is slow).
    private let bound: TimeInterval = 600

    func testSixteenTasksWritingReadingAndSyncingAtOnce() throws {
        let (remote, alice, bob) = try twoStores()
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
        let (remote, alice, bob) = try twoStores()
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

}

/// What the tasks and threads of `StoreConcurrencyTests` do: 0–9 write (on both devices), 10–12
/// read, 13–15 sync, four times each; each returns the records whose writes returned a commit.
private enum Workload {
    /// The device of task or thread `index`: bob for every third.
    static func store(_ index: Int, _ alice: ConcordStore, _ bob: ConcordStore) -> ConcordStore {
        index.isMultiple(of: 3) ? bob : alice
    }

    /// The record written by writer `index` in `round` ("t…" for tasks, "b…" for threads).
    static func record(_ prefix: String, _ index: Int, _ round: Int) -> String? { index < 10 ? "\(prefix)\(index)-\(round)" : nil }

    static func sixteenTasks(_ alice: ConcordStore, _ bob: ConcordStore) async throws -> [String] {
        try await withThrowingTaskGroup(of: [String].self) { group in
            for index in 0..<16 {
                group.addTask {
                    let store = store(index, alice, bob)
                    var written = [String]()
                    for round in 0..<4 {
                        if let id = record("t", index, round) {
                            let result = try await store.write { try $0.put("vocabulary", id, data: ["n": JSONValue(round)]) }
                            written += result.commit == nil ? [] : [id]
                        } else if index < 13 {
                            _ = try await store.read { reader in try reader.list(kind: "vocabulary").items.count }
                        } else {
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
        let store = store(index, alice, bob)
        return try (0..<4).compactMap { round in
            guard let id = record("b", index, round) else {
                _ = try index < 13 ? store.read { try $0.history(HistoryFilter(limit: 5)).count } : store.sync().received
                return nil
            }
            return try store.write { try $0.put("vocabulary", id, data: ["n": JSONValue(round)]) }.commit.map { _ in id }
        }
    }
}
