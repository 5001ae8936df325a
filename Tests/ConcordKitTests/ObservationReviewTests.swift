import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

@testable import ConcordEngine
@testable import ConcordKit

/// Review findings on observation and the change feed (h-rev2): an ended observer or feed lets
/// the store go, a first read waits for a writer mid-commit, an empty commit wakes a feed, and a
/// commit's origin is decided by the key that signed it.
final class ObservationReviewTests: KitTestCase {
    private func head(_ store: ConcordStore) throws -> ChangeToken {
        ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: store.directory).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Once an observer ended and the store is released, its queue and watcher are released too.
    func testAnEndedObserverLetsTheStoreGo() async throws {
        try await assertTheStoreGoes { store in
            for try await value in store.observe(Self.vocabularyIDs) { _ = value; break }
        }
    }

    /// The same for a change feed.
    func testAnEndedFeedLetsTheStoreGo() async throws {
        try await assertTheStoreGoes { store in
            for try await event in store.changes(since: nil) { _ = event; break }
        }
    }

    /// A new store, watched by `watch` until that ends and its watching stops; once the store is
    /// released, its queue and watcher are released too.
    private func assertTheStoreGoes(watchedBy watch: (ConcordStore) async throws -> Void) async throws {
        weak var engine: ProfileQueue?
        weak var watcher: StoreWatcher?
        do {
            let store = try makeStore()
            (engine, watcher) = (store.engine, store.watcher)
            try await watch(store)
            try await eventually { !store.isWatching }
        }
        try await eventually { engine == nil && watcher == nil }
    }

    /// A writer moved main (holding the profile's lock) and has not written the files yet when an
    /// observer starts: its first read waits for the writer, and reads the new commit's files.
    func testTheFirstReadWaitsForAWriterMidCommit() async throws {
        let store = try makeStore()
        try await store.write { try $0.put("vocabulary", "a", data: [:]) }
        try await store.write { try $0.put("vocabulary", "b", data: [:]) }
        let second = try head(store).commit
        _ = try gitOK(["reset", "-q", "--hard", "HEAD~1"], in: store.directory)
        let fd = open(store.directory.path + "/.git/concord/lock", O_RDWR | O_CREAT, 0o644)
        XCTAssertEqual(flock(fd, LOCK_EX), 0)
        _ = try gitOK(["update-ref", "HEAD", second], in: store.directory)          // main moves first, as writers do
        let values = Collector(store.observe(Self.vocabularyIDs))
        try await Task.sleep(nanoseconds: 200_000_000)
        XCTAssertEqual(values.values, [], "no value while a writer holds the lock")
        _ = try gitOK(["reset", "-q", "--hard", second], in: store.directory)      // then the files
        flock(fd, LOCK_UN); close(fd)
        try await values.waitFor { $0.count == 1 }
        XCTAssertEqual(values.values.first, ["a", "b"])
        values.cancel()
    }

    /// A commit whose tree is its parent's (`git commit --allow-empty`) is told by a live feed at
    /// once; an observer, which reads no commit, is not woken by it.
    func testAnEmptyCommitWakesTheFeedNotTheObserver() async throws {
        let store = try makeStore()
        let feed = Collector(store.changes(since: nil))
        let values = Collector(store.observe(Self.vocabularyIDs))
        try await feed.waitFor { $0.count == 1 }
        try await values.waitFor { $0.count == 1 }
        _ = try gitOK(["-c", "user.name=x", "-c", "user.email=x@y", "-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "empty"],
                      in: store.directory)
        try await feed.waitFor { $0.count == 2 }
        XCTAssertEqual(feed.values.last?.commit?.summary, "empty")
        XCTAssertNil(feed.values.last?.commit?.signer, "unsigned")
        try await Task.sleep(nanoseconds: 100_000_000)
        XCTAssertEqual(values.values.count, 1)
        feed.cancel()
        values.cancel()
    }

    /// Bob signs a commit acting as alice on a device named like alice's: alice's feed tells it as
    /// a sync, with alice as the member it claims and bob as its signer.
    func testOriginIsDecidedByTheSigningKeyNotTheTrailers() async throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: alice.device)
        let remote = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: remote)
        let aliceStore = try ConcordStore.create(at: sandbox.appendingPathComponent("alice"), name: "Shared", template: .aac,
                                                 identity: alice, environment: makeEnvironment(alice))
        try await aliceStore.addRemote("origin", url: remote.path)
        try await aliceStore.addMember("bob", role: .editor, device: alice.device, key: bob.key.publicKey)
        _ = try await aliceStore.sync()
        let bobStore = try await ConcordStore.clone(url: remote.path, into: sandbox.appendingPathComponent("bob"), identity: bob,
                                                    environment: makeEnvironment(bob))
        let feed = Collector(aliceStore.changes(since: try head(aliceStore)))
        let bobProfile = try Profile.open(at: bobStore.directory, environment: makeEnvironment(bob))
        _ = try bobProfile.records.write(as: bob.acting(as: "alice")) { try $0.put("vocabulary", "planted", data: ["label": .string("x")]) }
        _ = try await bobStore.sync()
        _ = try await aliceStore.sync()
        try await aliceStore.write { try $0.put("vocabulary", "own", data: [:]) }
        try await feed.waitFor { $0.count == 2 }
        let (planted, own) = (feed.values[0].commit, feed.values[1].commit)
        XCTAssertEqual(planted?.records.map(\.id), ["planted"])
        XCTAssertEqual(planted?.origin, .sync)
        XCTAssertEqual(planted?.member, "alice")
        XCTAssertEqual(planted?.device, alice.device)
        XCTAssertEqual(planted?.signer, "bob")
        XCTAssertEqual(own?.origin, .thisDevice)
        XCTAssertEqual(own?.signer, "alice")
        feed.cancel()
    }

    /// A write of this store while it acts for another member (`switchActing`) is this device's.
    func testOwnWritesWhileSwitchedAreThisDevices() async throws {
        let (_, aliceStore, _) = try twoStores()
        let feed = Collector(aliceStore.changes(since: try head(aliceStore)))
        let alice = aliceStore.identity
        let aliceProfile = try Profile.open(at: aliceStore.directory, environment: makeEnvironment(alice))
        _ = try aliceProfile.members.switchActing(to: "bob", as: alice)
        try await aliceStore.write { try $0.put("vocabulary", "mine", data: ["label": .string("x")]) }
        try await feed.waitFor { $0.contains { $0.commit?.records.contains { $0.id == "mine" } == true } }
        XCTAssertEqual(feed.values.last?.commit?.origin, .thisDevice)
        XCTAssertEqual(feed.values.last?.commit?.signer, "alice")
        feed.cancel()
    }
}
