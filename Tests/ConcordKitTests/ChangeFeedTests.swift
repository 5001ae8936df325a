import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// `ConcordStore.changes(since:)`: one event per commit of main's first-parent chain, with the
/// records, log entries and members it changed, its origin, and for a merge the writes it did not
/// keep; resumable from a token; a token no longer in the history is an error.
final class ChangeFeedTests: KitTestCase {
    /// The records of `event` as `kind/id change` lines.
    private func records(_ event: ChangeEvent) -> [String] {
        (event.commit?.records ?? []).map { "\($0.reference) \($0.change.rawValue)" }
    }

    func testOneEventPerLocalCommitThenLiveOnes() async throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        try await store.write { try $0.put("vocabulary", "apple", data: ["label": "apple"]) }
        try await store.write { try $0.put("vocabulary", "apple", data: ["label": "red apple"]); try $0.put("settings", "t", data: [:]) }
        let feed = Collector(store.changes(since: nil))
        try await feed.waitFor { $0.count == 3 }
        let events = feed.values
        XCTAssertEqual(events[0].commit?.membership, [MembershipEvent(member: "alice", change: .joined(.admin))], "the profile's creation")
        XCTAssertEqual(records(events[1]), ["vocabulary/apple added"])
        XCTAssertEqual(records(events[2]), ["settings/t added", "vocabulary/apple updated"].sorted())
        XCTAssertEqual(events.map { $0.commit?.origin }, [.thisDevice, .thisDevice, .thisDevice])
        XCTAssertEqual(events.last?.token?.commit, try gitOK(["rev-parse", "HEAD"], in: store.directory))

        // Live: a delete, a log append and a membership change, each one event.
        try await store.write { try $0.delete("vocabulary", "apple") }
        let entry = try await store.write { try $0.append("logs", data: ["text": "hi"]) }.value
        let bob = try makeIdentity("bob", device: "phone")
        try await store.addMember("bob", role: .editor, device: "phone", key: bob.key.publicKey)
        try await store.setRole("bob", to: .viewer)
        try await store.revoke("bob")
        try await feed.waitFor { $0.count == 8 }
        let live = Array(feed.values.dropFirst(3))
        XCTAssertEqual(records(live[0]), ["vocabulary/apple deleted"])
        XCTAssertEqual(live[1].commit?.logEntries, [AppendedEntries(kind: "logs", ids: [entry.rawValue])])
        XCTAssertEqual(live[2].commit?.membership, [MembershipEvent(member: "bob", change: .joined(.editor))])
        XCTAssertEqual(live[3].commit?.membership, [MembershipEvent(member: "bob", change: .roleChanged(from: .editor, to: .viewer))])
        XCTAssertEqual(live[4].commit?.membership, [MembershipEvent(member: "bob", change: .revoked(by: "alice"))])

        // Resuming from a saved token (encoded and decoded as an app keeps it) gives only the later commits.
        let saved = try JSONEncoder().encode(events[2].token)
        let token = try JSONDecoder().decode(ChangeToken.self, from: saved)
        let resumed = Collector(store.changes(since: token))
        try await resumed.waitFor { $0.count == 5 }
        XCTAssertEqual(resumed.values.map(\.token), live.map(\.token))
        try await Task.sleep(nanoseconds: 100_000_000)
        XCTAssertEqual(resumed.values.count, 5, "nothing more, nothing twice")
        feed.cancel()
        resumed.cancel()
        try await eventually { !store.isWatching }
    }

    func testALongHistoryIsToldInTurnsEachCommitOnce() async throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let commits = ChangeFeed.batch + 50
        let script = "for i in $(seq \(commits)); do git -c user.name=x -c user.email=x@y -c commit.gpgsign=false "
            + "commit -q --allow-empty -m \"empty $i\" || exit 1; done"
        let made = try ProcessRunner.run("/bin/sh", ["-c", script], environment: isolatedEnvironment(home: sandbox), in: store.directory)
        XCTAssertEqual(made.status, 0, made.stderr)
        let feed = Collector(store.changes(since: nil))
        try await feed.waitFor(seconds: 20) { $0.count == commits + 1 }
        let summaries = feed.values.dropFirst().map { $0.commit?.summary ?? "" }
        XCTAssertEqual(summaries, (1...commits).map { "empty \($0)" })
        XCTAssertEqual(feed.values.last?.commit?.origin, .sync, "a commit with no trailers is not this device's")
        feed.cancel()
    }

    func testATokenNoLongerInTheHistoryIsAnError() async throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        try await store.write { try $0.put("vocabulary", "a", data: [:]) }
        let rewound = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        try gitOK(["reset", "-q", "--hard", "HEAD~1"], in: store.directory)
        for token in [rewound, String(repeating: "ab", count: 20), "not a commit"] {
            let feed = Collector(store.changes(since: ChangeToken(commit: token)))
            try await feed.waitUntilFinished()
            XCTAssertEqual(feed.values.count, 0)
            XCTAssertEqual(feed.error as? ConcordError, .changeTokenNotInHistory(token: token))
        }

        // A feed whose last commit is rewound under it (another process) ends the same way.
        try await store.write { try $0.put("vocabulary", "b", data: [:]) }
        let head = try gitOK(["rev-parse", "HEAD"], in: store.directory)
        let feed = Collector(store.changes(since: ChangeToken(commit: head)))
        try await Task.sleep(nanoseconds: 100_000_000)
        try gitOK(["reset", "-q", "--hard", "HEAD~1"], in: store.directory)
        try gitOK(["-c", "user.name=x", "-c", "user.email=x@y", "-c", "commit.gpgsign=false",
                   "commit", "-q", "--allow-empty", "-m", "other"], in: store.directory)
        try await feed.waitUntilFinished()
        XCTAssertEqual(feed.error as? ConcordError, .changeTokenNotInHistory(token: head))
        try await eventually { !store.isWatching }
    }

    func testSyncsAreTold() async throws {
        let (remote, aliceStore, bobStore) = try twoStores()
        let start = ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory))
        let feed = Collector(aliceStore.changes(since: start))
        /// Bob syncs, then alice, and her feed has told `count` changes.
        func syncBoth(untilTold count: Int) async throws {
            _ = try await bobStore.sync()
            _ = try await aliceStore.sync()
            try await feed.waitFor { $0.count == count }
        }
        try await bobStore.write { try $0.put("vocabulary", "fromBob", data: ["label": "b"]) }
        try await syncBoth(untilTold: 1)
        XCTAssertEqual(records(feed.values[0]), ["vocabulary/fromBob added"])
        XCTAssertEqual(feed.values[0].commit?.origin, .sync)
        XCTAssertEqual(feed.values[0].commit?.member, "bob")

        // Both write before syncing: alice's own commit, then her merge bringing bob's.
        try await aliceStore.write { try $0.put("vocabulary", "fromAlice", data: ["label": "a"]) }
        try await bobStore.write { try $0.put("vocabulary", "again", data: ["label": "b"]) }
        try await syncBoth(untilTold: 3)
        XCTAssertEqual(records(feed.values[1]), ["vocabulary/fromAlice added"])
        XCTAssertEqual(feed.values[1].commit?.origin, .thisDevice)
        XCTAssertEqual(feed.values[2].commit?.isMerge, true)
        XCTAssertEqual(records(feed.values[2]), ["vocabulary/again added"])
        XCTAssertEqual(feed.values[2].commit?.origin, .sync)
        XCTAssertEqual(feed.values[2].commit?.conflicts, [])

        // A member who leaves, told to the others by the sync that brings it.
        _ = try await bobStore.sync()   // up to date first: a merge he signed after leaving would be refused
        try await bobStore.leave()
        try await syncBoth(untilTold: 4)
        XCTAssertEqual(feed.values[3].commit?.membership, [MembershipEvent(member: "bob", change: .left)])
        XCTAssertEqual(feed.values[3].commit?.origin, .sync)
        feed.cancel()
        fsckAtEnd(remote, aliceStore.directory, bobStore.directory)
    }

    func testAMergesConflictsAreToldForPeople() async throws {
        let (remote, aliceStore, bobStore) = try twoStores()
        try await aliceStore.write { try $0.put("vocabulary", "word", data: ["label": "first"]) }
        _ = try await aliceStore.sync()
        _ = try await bobStore.sync()
        let start = ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory))
        let feed = Collector(aliceStore.changes(since: start))
        try await bobStore.write { try $0.put("vocabulary", "word", data: ["label": "bob's"]) }
        try await aliceStore.write { try $0.put("vocabulary", "word", data: ["label": "alice's"]) }
        _ = try await bobStore.sync()
        _ = try await aliceStore.sync()
        try await feed.waitFor { $0.count == 2 }
        guard let merge = feed.values[1].commit else { return XCTFail("no merge event") }
        XCTAssertTrue(merge.isMerge)
        XCTAssertEqual(merge.conflicts.count, 1, "\(merge.conflicts)")
        let expected = try await aliceStore.read { try $0.lostEdits() }
        XCTAssertEqual(merge.conflicts.map(\.lostEdit), expected, "the same lost writes `concord conflicts` reports")
        let text = merge.conflicts.first?.description ?? ""
        XCTAssertTrue(text.hasPrefix("vocabulary/word (label): "), text)
        XCTAssertTrue(text.contains(" lost to "), text)
        feed.cancel()
        fsckAtEnd(remote, aliceStore.directory, bobStore.directory)
    }

    func testAnotherDevicesMergeThatFastForwardsMainRepeatsNothingLost() async throws {
        let (remote, aliceStore, bobStore) = try twoStores()
        let start = ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory))
        let feed = Collector(aliceStore.changes(since: start))
        try await aliceStore.write { try $0.put("vocabulary", "mine", data: [:]) }
        try await feed.waitFor { $0.count == 1 }
        _ = try await aliceStore.sync()
        try await bobStore.write { try $0.put("vocabulary", "theirs", data: [:]) }
        _ = try await bobStore.sync()   // bob merges alice's commit and pushes the merge
        _ = try await aliceStore.sync() // alice fast-forwards to it
        try await feed.waitFor { events in events.contains { $0.commit?.isMerge == true } }
        let told = Set(feed.values.flatMap(records))
        XCTAssertTrue(told.isSuperset(of: ["vocabulary/mine added", "vocabulary/theirs added"]), "\(told)")
        XCTAssertEqual(feed.values.last?.token?.commit, try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory))
        feed.cancel()
        fsckAtEnd(remote, aliceStore.directory, bobStore.directory)
    }

    func testAccessRemovedEndsTheFeedWithThatEvent() async throws {
        let (remote, aliceStore, bobStore) = try twoStores()
        let feed = Collector(bobStore.changes(since: ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: bobStore.directory))))
        let values = Collector(bobStore.observe(ClosureRequest(kinds: nil) { try $0.list().items.count }))
        try await values.waitFor { $0.count == 1 }
        try await aliceStore.revoke("bob")
        _ = try await aliceStore.sync()
        do {
            _ = try await bobStore.sync()
            XCTFail("bob's sync after his revocation succeeded")
        } catch {}
        try await feed.waitUntilFinished()
        guard case .accessRemoved(let member, let by, _)? = feed.values.last else {
            return XCTFail("last event: \(String(describing: feed.values.last)), error: \(String(describing: feed.error))")
        }
        XCTAssertEqual(member, "bob")
        XCTAssertTrue(by.contains("alice"), by)
        XCTAssertNil(feed.error)
        try await values.waitUntilFinished()
        XCTAssertTrue(bobStore.status.isAccessRemoved)
        fsckAtEnd(remote, aliceStore.directory)
    }
}
