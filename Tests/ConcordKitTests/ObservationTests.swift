import ConcordTestSupport
import Foundation
import Observation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

@testable import ConcordEngine
@testable import ConcordKit

/// `ConcordStore.observe`: the current value first, then one after each change of the kinds it
/// reads, from this store or another process; coalescing under a burst; the end of the sequence
/// and of the store's watching thread when the consumer goes. And `status`, the UI's mirror.
final class ObservationTests: KitTestCase {
    func testTheCurrentValueFirstThenOneAfterEachChange() async throws {
        let store = try makeStore()
        try await store.write { try $0.put("vocabulary", "apple", data: ["label": "apple"]) }
        let values = Collector(store.observe(Self.vocabularyIDs))
        try await values.waitFor { $0.last == ["apple"] }
        try await store.write { try $0.put("vocabulary", "pear", data: ["label": "pear"]) }
        try await values.waitFor { $0.last == ["apple", "pear"] }
        try await store.importDump(Dump(records: [Dump.RecordItem(kind: "vocabulary", id: "plum", data: ["label": "plum"])], logs: []))
        try await values.waitFor { $0.last == ["apple", "pear", "plum"] }
        try await store.write { try $0.delete("vocabulary", "apple") }
        try await values.waitFor { $0.last == ["pear", "plum"] }
        XCTAssertEqual(values.values.first, ["apple"], "the first value is the current one")
        values.cancel()
    }

    func testASharingCallWakesAnObserverOfEverything() async throws {
        let store = try makeStore()
        let members = Collector(store.observe(ClosureRequest(kinds: nil) { try $0.members().map(\.name).sorted() }))
        try await members.waitFor { $0 == [["alice"]] }
        let bob = try makeIdentity("bob", device: "phone")
        try await store.addMember("bob", role: .editor, device: "phone", key: bob.key.publicKey)
        try await members.waitFor { $0.last == ["alice", "bob"] }
        members.cancel()
    }

    func testAWriteOfAnotherKindDoesNotReadAgain() async throws {
        let store = try makeStore()
        let reads = Counter()
        let request = ClosureRequest(kinds: ["vocabulary"]) { reader -> Int in
            reads.increment()
            return try reader.list(kind: "vocabulary").items.count
        }
        let values = Collector(store.observe(request))
        try await values.waitFor { $0 == [0] }
        try await store.write { try $0.put("settings", "theme", data: ["dark": true]) }
        try await store.write { _ = try $0.append("logs", data: ["text": "hello"]) }
        try await Task.sleep(nanoseconds: 150_000_000)   // several polls of the watcher
        XCTAssertEqual(reads.value, 1, "settings and logs do not concern a vocabulary observer")
        try await store.write { try $0.put("vocabulary", "apple", data: ["label": "apple"]) }
        try await values.waitFor { $0.last == 1 }
        XCTAssertEqual(reads.value, 2)
        XCTAssertEqual(values.values, [0, 1])

        // An observer of everything (nil kinds) is woken by any kind.
        let all = Collector(store.observe(ClosureRequest(kinds: nil) { try $0.list().items.count }))
        try await all.waitFor { $0 == [3] }   // theme, the log entry, apple
        try await store.write { try $0.put("settings", "font", data: ["size": 12]) }
        try await all.waitFor { $0.last == 4 }
        values.cancel()
        all.cancel()
    }

    /// An observed store that nothing writes to runs no timer: its thread sleeps until the kernel
    /// tells it main moved (Linux's inotify; elsewhere it still polls every 20 ms, 50 looks a second).
    /// A write through another store on the folder (as another process's would) is not a nudge
    /// from this store: what wakes the thread is the ref's file.
    func testAnIdleObservedStoreSleepsUntilMainMoves() async throws {
        let store = try makeStore()
        let values = Collector(store.observe(Self.vocabularyIDs))
        try await values.waitFor { $0 == [[]] }
        #if os(Linux) && !CONCORD_PORTABLE
        if !store.watcher.looked.watchesDirectories {
            // The user's inotify instances are few (128 by default) and shared by every process: with
            // none left the watcher polls, as it should, and this test has nothing to judge.
            let probe = inotify_init1(Int32(IN_CLOEXEC))
            guard probe >= 0 else { throw XCTSkip("no inotify instance left for this user (errno \(errno)): the watcher polls") }
            close(probe)
            XCTFail("inotify can watch, and the watcher polls")
        }
        try await Task.sleep(for: .milliseconds(300))
        let before = store.watcher.looked.count
        try await Task.sleep(for: .seconds(1))
        XCTAssertLessThanOrEqual(store.watcher.looked.count - before, 1, "looks in a quiet second (a 20 ms poll makes 50)")
        #endif
        let other = try ConcordStore.open(at: store.directory, identity: store.identity, environment: makeEnvironment(store.identity))
        try await other.write { try $0.put("vocabulary", "elsewhere", data: [:]) }
        try await values.waitFor(seconds: 10) { $0.last == ["elsewhere"] }
        other.close()
        values.cancel()
    }

    func testTheLastValueOfABurstIsItsEnd() async throws {
        // In memory where Linux has it (/dev/shm): the test is about the observer, and 1,000
        // commits' fsyncs on a busy disk took 90 s.
        let alice = try makeIdentity()
        var directory = sandbox.appendingPathComponent("burst")
        if FileManager.default.isWritableFile(atPath: "/dev/shm") {
            let memory = URL(fileURLWithPath: "/dev/shm").appendingPathComponent("concord-observe-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: memory, withIntermediateDirectories: true)
            addTeardownBlock { try? FileManager.default.removeItem(at: memory) }
            directory = memory.appendingPathComponent("burst")
        }
        let store = try ConcordStore.create(at: directory, name: "P", template: .aac, identity: alice, environment: makeEnvironment(alice))
        // The request reads one record that every write changes: the test times the writes, not scans.
        let counter = ClosureRequest(kinds: ["vocabulary"]) { reader in
            (try? reader.get("vocabulary", "counter"))?.data?["n"]?.intValue ?? -1
        }
        let values = Collector(store.observe(counter))
        try await values.waitFor { $0 == [-1] }
        for index in 0..<1_000 {
            try await store.write { try $0.put("vocabulary", "counter", data: ["n": JSONValue(index)]) }
        }
        try await values.waitFor(seconds: 20) { $0.last == 999 }
        let seen = values.values
        XCTAssertEqual(seen, seen.sorted(), "values come in the order of the writes: never an older one after a newer")
        XCTAssertLessThanOrEqual(seen.count, 1_001)
        values.cancel()
    }

    func testCancellingTheConsumerEndsTheSequenceAndTheWatchingThread() async throws {
        let store = try makeStore()
        XCTAssertFalse(store.isWatching)
        let first = Collector(store.observe(Self.vocabularyIDs)), second = Collector(store.observe(Self.vocabularyIDs))
        try await first.waitFor { $0 == [[]] }
        try await second.waitFor { $0 == [[]] }
        XCTAssertTrue(store.isWatching)
        // (The thread names itself once it runs: the first values may come before.)
        try await eventually { Self.watchingThreads() >= 1 }
        XCTAssertEqual(Self.watchingThreads(), 1, "one thread for every observer of a store")
        first.cancel()
        try await first.waitUntilFinished()
        try await store.write { try $0.put("vocabulary", "a", data: [:]) }
        try await second.waitFor { $0.last == ["a"] }
        XCTAssertTrue(store.isWatching, "one observer is left")
        second.cancel()
        try await second.waitUntilFinished()
        try await eventually { !store.isWatching && Self.watchingThreads() == 0 }
        XCTAssertEqual(first.values, [[]], "nothing reaches a consumer that went")

        // Observing again starts the thread again.
        let third = Collector(store.observe(Self.vocabularyIDs))
        try await third.waitFor { $0 == [["a"]] }
        try await store.write { try $0.put("vocabulary", "b", data: [:]) }
        try await third.waitFor { $0.last == ["a", "b"] }
        third.cancel()
        try await eventually { !store.isWatching }
    }

    func testAFetchThatThrowsEndsTheSequenceWithItsError() async throws {
        let store = try makeStore()
        let values = Collector(store.observe(ClosureRequest(kinds: ["vocabulary"]) { try $0.get("vocabulary", "missing").id }))
        try await values.waitUntilFinished()
        XCTAssertNotNil(values.error)
        try await eventually { !store.isWatching }
    }

    func testTheStatusFollowsWritesAndSyncs() async throws {
        let (_, aliceStore, bobStore) = try twoStores()
        let status = aliceStore.status
        XCTAssertEqual(status.pendingCommits, 0)
        XCTAssertNotNil(status.lastSync)
        let changed = Counter()
        withObservationTracking { _ = status.pendingCommits } onChange: { changed.increment() }
        try await aliceStore.write { try $0.put("vocabulary", "a", data: [:]) }
        XCTAssertEqual(status.pendingCommits, 1, "current when the write returns")
        XCTAssertEqual(changed.value, 1, "observers of the property were told")
        try await bobStore.write { try $0.put("vocabulary", "b", data: [:]) }
        _ = try await bobStore.sync()
        _ = try await aliceStore.sync()
        XCTAssertEqual(status.snapshot.pendingCommits, 0)
        XCTAssertEqual(status.snapshot.behind, 0)
        XCTAssertFalse(status.isSyncing)
        XCTAssertNil(status.lastError)
        XCTAssertFalse(status.isAccessRemoved)

        // Another process's commit moves the status too: OtherProcessTests.testTheStatusSeesAnotherProcesssCommit.
        try await aliceStore.addRemote("broken", url: sandbox.appendingPathComponent("nowhere.git").path)
        do {
            _ = try await aliceStore.sync(remote: "broken")
            XCTFail("a sync with no remote there succeeded")
        } catch {}
        XCTAssertNotNil(status.lastError)
        XCTAssertFalse(status.isSyncing)
    }

    /// The threads of this process named as the store's watcher names its thread.
    static func watchingThreads() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            let name = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
            return name.trimmingCharacters(in: .whitespacesAndNewlines) == StoreWatcher.threadName
        }.count
    }
}

/// Waits until `condition` holds, checking every 5 ms for at most `seconds`.
func eventually(seconds: Double = 5, file: StaticString = #filePath, line: UInt = #line,
                _ condition: () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else { return XCTFail("not so after \(seconds) s", file: file, line: line) }
        try await Task.sleep(nanoseconds: 5_000_000)
    }
}

/// A counter several threads may bump.
final class Counter: @unchecked Sendable {
    // Safe: `count` is read and written only while holding `lock`.
    private let lock = NSLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Iterates an `AsyncThrowingStream` in a task of its own and keeps what it yields, for a test to wait on.
final class Collector<Value: Sendable>: @unchecked Sendable {
    // Safe: `kept`, `failure` and `done` are read and written only while holding `lock`.
    private let lock = NSLock()
    private var kept = [Value]()
    private var failure: Error?
    private var done = false
    private var task: Task<Void, Never>?

    init(_ stream: AsyncThrowingStream<Value, Error>) {
        let task = Task { [self] in
            do {
                for try await value in stream { lock.withLock { kept.append(value) } }
            } catch {
                lock.withLock { failure = error }
            }
            lock.withLock { done = true }
        }
        lock.withLock { self.task = task }
    }

    var values: [Value] { lock.withLock { kept } }
    var error: Error? { lock.withLock { failure } }
    var isFinished: Bool { lock.withLock { done } }

    func cancel() { lock.withLock { task }?.cancel() }

    /// Waits until the values so far satisfy `condition`.
    func waitFor(seconds: Double = 5, file: StaticString = #filePath, line: UInt = #line,
                 _ condition: ([Value]) -> Bool) async throws {
        try await eventually(seconds: seconds, file: file, line: line) { condition(values) }
        if !condition(values) { XCTFail("values so far: \(values), error: \(String(describing: error))", file: file, line: line) }
    }

    /// Waits until the stream ended.
    func waitUntilFinished(file: StaticString = #filePath, line: UInt = #line) async throws {
        try await eventually(file: file, line: line) { isFinished }
    }
}
