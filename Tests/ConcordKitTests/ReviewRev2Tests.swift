import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

@testable import ConcordKit

/// Reviewer's probes (h-rev2): each test states what the reviewed code does today.
final class ReviewRev2Tests: KitTestCase {
    private func makeStore(_ name: String = "p") throws -> ConcordStore {
        let alice = try makeIdentity()
        return try ConcordStore.create(at: sandbox.appendingPathComponent(name), name: "P", template: .aac, identity: alice,
                                       environment: makeEnvironment(alice))
    }

    private static let ids = ClosureRequest(kinds: ["vocabulary"]) { reader in
        try reader.list(kind: "vocabulary").items.map(\.id).sorted()
    }

    /// A: after an observer ends and the store is released, is the store's engine (Profile) released?
    func testR2ObserveKeepsEngineAlive() async throws {
        weak var weakStore: ConcordStore?
        weak var engine: ProfileQueue?
        weak var watcher: StoreWatcher?
        do {
            let store = try makeStore()
            weakStore = store; engine = store.engine; watcher = store.watcher
            for try await value in store.observe(Self.ids) { _ = value; break }
            try await eventually { !store.isWatching }
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        print("R2-A store released: \(weakStore == nil), engine released: \(engine == nil), watcher released: \(watcher == nil)")
        // Control: a store that never observed.
        weak var controlEngine: ProfileQueue?
        weak var controlStore: ConcordStore?
        weak var createdOnly: ProfileQueue?
        do {
            let dave = try makeIdentity("dave")
            let store = try ConcordStore.create(at: sandbox.appendingPathComponent("r"), name: "R", template: .aac, identity: dave,
                                                environment: makeEnvironment(dave))
            createdOnly = store.engine
        }
        do {
            let carol = try makeIdentity("carol")
            let store = try ConcordStore.create(at: sandbox.appendingPathComponent("q"), name: "Q", template: .aac, identity: carol,
                                                environment: makeEnvironment(carol))
            controlEngine = store.engine; controlStore = store
            _ = try await store.read { try $0.list().items.count }
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        print("R2-A control engine released: \(controlEngine == nil), control store released: \(controlStore == nil), created-only engine released: \(createdOnly == nil)")
        XCTAssertNil(controlEngine)
        XCTAssertNil(engine, "the engine outlives the store after one observe")
        XCTAssertNil(watcher, "the watcher outlives the store after one observe")
    }

    /// A': the same for changes(since:).
    func testR2FeedKeepsEngineAlive() async throws {
        weak var engine: ProfileQueue?
        do {
            let store = try makeStore()
            engine = store.engine
            for try await event in store.changes(since: nil) { _ = event; break }
            try await eventually { !store.isWatching }
        }
        try await Task.sleep(nanoseconds: 300_000_000)
        print("R2-A' engine released after a feed: \(engine == nil)")
        XCTAssertNil(engine)
    }

    /// B: a writer moved main (holding the profile lock) but has not written the files yet when
    /// an observer makes its first read; the writer then finishes. Does the observer read again?
    func testR2FirstReadWhileAWriterIsMidCommit() async throws {
        let store = try makeStore()
        try await store.write { try $0.put("vocabulary", "a", data: [:]) }
        try await store.write { try $0.put("vocabulary", "b", data: [:]) }
        let second = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        _ = try gitOK(["reset", "-q", "--hard", "HEAD~1"], in: store.directory)
        let fd = open(store.directory.path + "/.git/concord/lock", O_RDWR | O_CREAT, 0o644)
        XCTAssertEqual(flock(fd, LOCK_EX), 0)
        _ = try gitOK(["update-ref", "HEAD", second], in: store.directory)          // main moves first, as CommitWriter/SyncMerge do
        let values = Collector(store.observe(Self.ids))
        try await values.waitFor { $0.count == 1 }
        _ = try gitOK(["reset", "-q", "--hard", second], in: store.directory)      // then the files
        flock(fd, LOCK_UN); close(fd)
        try await Task.sleep(nanoseconds: 700_000_000)
        let now = try await store.read { try $0.list(kind: "vocabulary").items.map(\.id).sorted() }
        print("R2-B values: \(values.values), store reads now: \(now)")
        XCTAssertEqual(values.values.last, now, "the observer's last value is the store's state")
        values.cancel()
    }

    /// C: an older type removes the first element of an id-less array and appends one (same length).
    func testR2PositionalMergeMovesUnknownFieldsToOtherElements() throws {
        let store = try makeStore()
        try store.write { try $0.save(R2NoteV2(id: "n", lines: [R2LineV2(text: "first", color: "blue"), R2LineV2(text: "second", color: "green")])) }
        try store.write { transaction in
            var old = try XCTUnwrap(try transaction.fetch(R2NoteV1.self, id: "n"))
            old.lines.removeFirst()
            old.lines.append(R2LineV1(text: "third"))
            try transaction.save(old)
        }
        let read = try store.read { try $0.get("vocabulary", "n").data?["lines"] }
        print("R2-C lines after v1's edit: \(String(describing: read))")
        XCTAssertEqual(read, [["text": "second", "color": "green"], ["text": "third"]], "second keeps its own color; third has none")
    }


    /// C2: a Set of objects (no ids) read and saved unchanged by the older type.
    func testR2ASetOfObjectsSavedByTheOlderType() throws {
        let store = try makeStore()
        let names = ["a", "b", "c", "d", "e", "f"]
        try store.write { try $0.save(R2BagV2(id: "bag", tags: Set(names.map { R2TagV2(name: $0, color: "color-" + $0) }))) }
        let before = try store.read { try $0.get("vocabulary", "bag").data?["tags"] }
        try store.write { transaction in
            let old = try XCTUnwrap(try transaction.fetch(R2BagV1.self, id: "bag"))
            try transaction.save(old)
        }
        let after = try store.read { try $0.get("vocabulary", "bag").data?["tags"] }
        let wrong = (after?.arrayValue ?? []).filter { $0["color"] != .string("color-" + ($0["name"]?.stringValue ?? "")) }
        print("R2-C2 before: \(String(describing: before))\nR2-C2 after: \(String(describing: after))\nR2-C2 tags with another's color: \(wrong.count)")
        XCTAssertEqual(wrong.count, 0)
    }

    /// D: integers from lexemes with a fraction.
    func testR2IntegerFromAFraction() throws {
        for lexeme in ["1.0000000000000001", "0.99999999999999999", "9007199254740993.0", "9007199254740992.5"] {
            let result = Result { try JSONValueDecoder().decode(Int.self, from: .number(lexeme)) }
            print("R2-D Int from \(lexeme): \(result)")
        }
        print("R2-G UInt64.max == matches UInt64.max-1: \(String(describing: IndexQuery(kind: "k", conditions: [IndexQuery.Condition("f", .equal(.number(String(UInt64.max))))]).matches(["f": .number(String(UInt64.max - 1))])))")
        XCTAssertThrowsError(try JSONValueDecoder().decode(Int.self, from: .number("1.0000000000000001")))
    }

    /// D': Decimal and Double lexemes.
    func testR2DecimalLexemes() throws {
        for lexeme in ["1e-5", "1E+2", "-0", "123456789012345678901234567890123456789012", "1e200", "0.1"] {
            let result = Result { try JSONValueDecoder().decode(Decimal.self, from: .number(lexeme)) }
            let back = (try? result.get()).flatMap { try? JSONValueEncoder().encode($0) }
            print("R2-D' Decimal from \(lexeme): \(result) -> \(String(describing: back))")
        }
        for decimal in [Decimal(string: "1e-30")!, Decimal(sign: .plus, exponent: 40, significand: 1), Decimal(sign: .minus, exponent: -3, significand: 5)] {
            print("R2-D' Decimal \(decimal) encodes as \(String(describing: try? JSONValueEncoder().encode(decimal)))")
        }
    }

    /// E: a commit whose tree equals its parent's (plain git, --allow-empty) and the live feed.
    func testR2AnEmptyCommitIsToldOnlyWithTheNextChange() async throws {
        let store = try makeStore()
        let feed = Collector(store.changes(since: nil))
        try await feed.waitFor { $0.count == 1 }
        _ = try gitOK(["-c", "user.name=x", "-c", "user.email=x@y", "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "empty"],
                      in: store.directory)
        try await Task.sleep(nanoseconds: 700_000_000)
        let afterEmpty = feed.values.count
        try await store.write { try $0.put("vocabulary", "a", data: [:]) }
        try await feed.waitFor { $0.count == 3 }
        print("R2-E events 700 ms after the empty commit: \(afterEmpty); after the next write: \(feed.values.count)")
        XCTAssertEqual(afterEmpty, 2, "the empty commit's event")
        feed.cancel()
    }

    /// F: does a merge in which ours wins everything leave the tree of its first parent?
    func testR2LastWriterWinsMergeTree() async throws {
        let (_, aliceStore, bobStore) = try twoStores()
        try await aliceStore.write { try $0.put("vocabulary", "word", data: ["label": "first"]) }
        _ = try await aliceStore.sync()
        _ = try await bobStore.sync()
        let feed = Collector(aliceStore.changes(since: ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory))))
        try await bobStore.write { try $0.put("vocabulary", "word", data: ["label": "bob's"]) }
        try await aliceStore.write { try $0.put("vocabulary", "word", data: ["label": "alice's"]) }
        _ = try await bobStore.sync()
        _ = try await aliceStore.sync()
        let diff = try gitOK(["diff", "--stat", "HEAD^1", "HEAD"], in: aliceStore.directory)
        try await Task.sleep(nanoseconds: 700_000_000)
        print("R2-F merge vs first parent: [\(diff)], events: \(feed.values.count)")
        feed.cancel()
    }
}

struct R2NoteV2: ConcordRecord, Equatable {
    static let kind = SymbolRecord.kind
    var id: String
    var lines: [R2LineV2]
}
struct R2LineV2: Codable, Equatable { var text: String; var color: String }
struct R2NoteV1: ConcordRecord {
    static let kind = SymbolRecord.kind
    var id: String
    var lines: [R2LineV1]
}
struct R2LineV1: Codable { var text: String }
struct R2BagV2: ConcordRecord {
    static let kind = SymbolRecord.kind
    var id: String
    var tags: Set<R2TagV2>
}
struct R2TagV2: Codable, Hashable { var name: String; var color: String }
struct R2BagV1: ConcordRecord {
    static let kind = SymbolRecord.kind
    var id: String
    var tags: Set<R2TagV1>
}
struct R2TagV1: Codable, Hashable { var name: String }
