import ConcordTestSupport
import Foundation
import GRDB
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The store beside another process on the same folder: the `concord` binary (a process of its own,
/// as an app's user would run it, or killed midway) and plain git. The engine tests that need a second
/// process are here, so one class of this target starts the binary.
final class OtherProcessTests: KitTestCase {
    func testTheStatusSeesAnotherProcesssCommit() async throws {
        let (_, aliceStore, _) = try twoStores()
        let status = aliceStore.status
        XCTAssertEqual(status.pendingCommits, 0)
        let values = Collector(aliceStore.observe(ClosureRequest(kinds: nil) { try $0.list().items.count }))
        try await values.waitFor { $0.count == 1 }
        let concord = try ConcordBinary.required()
        let environment = isolatedEnvironment(home: sandbox, ["CONCORD_HOME": aliceStore.identity.home.path])
        let put = try ProcessRunner.run(concord, ["put", "vocabulary/cli", "--json", "{}", "-C", aliceStore.directory.path],
                                        environment: environment, deadline: 60)
        XCTAssertEqual(put.status, 0, put.stderr)
        try await eventually { status.pendingCommits == 1 }
        values.cancel()
    }

    func testACommitOfAnotherProcessIsSeen() async throws {
        let concord = try ConcordBinary.required()
        let store = try makeStore()
        let values = Collector(store.observe(Self.vocabularyIDs))
        try await values.waitFor { $0 == [[]] }
        let environment = isolatedEnvironment(home: sandbox, ["CONCORD_HOME": store.identity.home.path])
        let put = try ProcessRunner.run(concord, ["put", "vocabulary/cli", "--json", #"{"label":"cli"}"#, "-C", store.directory.path],
                                        environment: environment, deadline: 60)
        XCTAssertEqual(put.status, 0, put.stderr)
        try await values.waitFor { $0.last == ["cli"] }

        // A plain git commit (unsigned, by hand) moving main is seen the same way.
        let other = Collector(store.observe(ClosureRequest(kinds: ["settings"]) { try $0.list(kind: "settings").items.map(\.id) }))
        try await other.waitFor { $0 == [[]] }
        try await store.write { try $0.put("settings", "theme", data: ["dark": true]) }
        try await other.waitFor { $0.last == ["theme"] }
        try gitOK(["-c", "user.name=x", "-c", "user.email=x@y", "-c", "commit.gpgsign=false", "revert", "--no-edit", "HEAD"],
                  in: store.directory)
        try await other.waitFor { $0.last == [] }
        XCTAssertEqual(values.values.last, ["cli"], "the revert touched settings only")
        values.cancel()
        other.cancel()
    }

    /// `concord query` after the branch moved by 1,500 records, killed with SIGKILL at several moments
    /// of its run (a first run, not killed, says how long it takes): the index keeps either the old
    /// commit's rows or the new one's, and the next query answers as the scan.
    func testAnUpdateKilledMidwayLeavesAnIndexTheNextQueryCorrects() throws {
        let binary = try ConcordBinary.required()
        let store = try storeWithRecords()
        let query = IndexQuery(kind: "vocabulary", conditions: [.init("page", .equal(.number("2")))], ordering: [.init("label")])
        var whole = 0.0
        for (round, fraction) in [nil, 0.5, 0.85].enumerated() {
            let old = try store.read { reader in try reader.profile.index.catchUp() }
            _ = try store.write { transaction in
                try transaction.put((0..<1_500).map { index in
                    (kind: "vocabulary", id: "bulk\(round)-\(index)", data: ["page": .number(String(index % 4)), "label": .string("bulk \(index)")])
                })
            }
            let head = try gitOK(["rev-parse", "HEAD"], in: store.directory)
            let output = sandbox.appendingPathComponent("query-\(round).log")
            let started = Date()
            let child = try ChildProcess(path: binary, arguments: ["query", "vocabulary", "--where", "page=2", "--count", "-C", store.directory.path],
                                         environment: isolatedEnvironment(home: sandbox, ["CONCORD_HOME": store.identity.home.path]), output: output)
            if let fraction {
                usleep(useconds_t(whole * fraction * 1_000_000))
                child.signal(SIGKILL)
                _ = child.wait()
            } else {
                XCTAssertEqual(child.wait(), 0)
                whole = Date().timeIntervalSince(started)
            }
            // The stamp the killed process left, read with SQLite alone (the index's own reads catch up first).
            let left = try DatabaseQueue(path: indexPath(store))
            let leftStamp = try left.read { try String.fetchOne($0, sql: "SELECT value FROM meta WHERE key = 'commit'") }
            try left.close()
            XCTAssertTrue([old, head].contains(leftStamp), "round \(round): stamp \(leftStamp ?? "none")")
            print("round \(round): \(fraction.map { "killed at \(Int($0 * 100))% of \(Int(whole * 1000)) ms" } ?? "not killed"), "
                  + "the index was left at the \(leftStamp == head ? "new" : "old") commit")
            let profile = try Profile.open(at: store.directory, environment: store.environment)
            XCTAssertEqual(try profile.index.query(query), try profile.records.scan(query), "round \(round)")
            XCTAssertEqual(try profile.index.sql("SELECT value FROM meta WHERE key = 'commit'").first?["value"], .string(head))
        }
    }

    /// Two CLI processes and this one catch the index up to the same new commit at once: SQLite's
    /// locks serialize them, each answers right, and the index ends at HEAD.
    func testProcessesCatchingUpAtOnce() throws {
        let binary = try ConcordBinary.required()
        let store = try storeWithRecords()
        _ = try store.read { try $0.count(IndexQuery(kind: "vocabulary")) }
        _ = try store.write { transaction in
            try transaction.put((0..<1_000).map { index in (kind: "vocabulary", id: "more\(index)", data: ["page": .number(String(index % 4))]) })
        }
        let outputs = (0..<2).map { sandbox.appendingPathComponent("together-\($0).log") }
        let children = try outputs.map { output in
            try ChildProcess(path: binary, arguments: ["query", "vocabulary", "--where", "page=2", "--count", "-C", store.directory.path],
                             environment: isolatedEnvironment(home: sandbox, ["CONCORD_HOME": store.identity.home.path]), output: output)
        }
        let query = IndexQuery(kind: "vocabulary", conditions: [.init("page", .equal(.number("2")))])
        XCTAssertEqual(try store.read { try $0.count(query) }, 255)
        for (child, output) in zip(children, outputs) {
            XCTAssertEqual(child.wait(), 0)
            XCTAssertEqual(try String(contentsOf: output, encoding: .utf8), "255\n")
        }
        let head = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        XCTAssertEqual(try store.read { try $0.sql("SELECT value FROM meta WHERE key = 'commit'") }, [["value": .string(head)]])
    }


    /// The store writing in this process while the `concord` CLI writes in another: every write of both is kept.
    func testTheStoreAndTheCLIWritingOneProfileAtOnce() throws {
        let concord = try ConcordBinary.required()
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let environment = isolatedEnvironment(home: sandbox, ["CONCORD_HOME": alice.home.path])
        let cli = Thread.detachNewThreadWithResult {
            (0..<15).map { index in
                (try? ProcessRunner.run(concord, ["put", "vocabulary/cli\(index)", "--json", #"{"n":\#(index)}"#,
                                                  "-C", store.directory.path], environment: environment, deadline: 120))
                    .map { $0.status == 0 ? "" : $0.stderr } ?? "did not run"
            }
        }
        for index in 0..<30 {
            try store.write { try $0.put("vocabulary", "app\(index)", data: ["n": JSONValue(index)]) }
        }
        let failures = cli.wait().filter { !$0.isEmpty }
        XCTAssertEqual(failures, [])
        let ids = Set(try store.read { try $0.list(kind: "vocabulary").items.map(\.id) })
        XCTAssertEqual(ids, Set((0..<30).map { "app\($0)" } + (0..<15).map { "cli\($0)" }))
        XCTAssertNoThrow(try store.withProfile { try $0.verification.run() })
        let verified = try ProcessRunner.run(concord, ["verify", "-C", store.directory.path], environment: environment)
        XCTAssertEqual(verified.status, 0, verified.stderr)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: store.directory), "")
        fsckAtEnd(store.directory)
    }
}
