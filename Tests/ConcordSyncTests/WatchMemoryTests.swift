import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A `watch` runs for weeks, so polling and syncing must not grow the process. These tests drive
/// the engine calls the watch loop makes (`needsSync` per remote check, `sync` when something
/// moved) a few hundred times in THIS process and compare its resident size after a warm-up with
/// the size at the end.
///
/// In-process rather than a `concord watch` child: the loop itself only sleeps and calls these two
/// functions, and in-process the polls run back to back (no 50 ms tick) with an exact count, so a
/// few hundred take seconds; a child would also need a way to tell how many polls it made.
/// `concord-bench --only B11` measures the real binary over thousands of polls.
///
/// The bound is generous (allocator noise, lazily grown runtime tables): the leaks this was written
/// for grew the process by 320 KB (path) and 560 KB (ssh) per poll, tens of MB over these runs;
/// after the fixes the path run grows by ~0.4 MB.
final class WatchMemoryTests: ConcordTestCase {
    /// Largest growth tolerated between the measurement after the warm-up and the last one.
    static let bound = 3 << 20

    func testPollingAndSyncingOverAPathRemoteKeepsMemoryFlat() throws {
        let bare = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: bare)
        fsckAtEnd.append(bare)
        try soak(url: bare.path, polls: 300, syncs: 20)
    }

    func testPollingAndSyncingOverSSHKeepsMemoryFlat() throws {
        let server = try startSSHServer()
        let bare = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: bare)
        fsckAtEnd.append(bare)
        // Each ssh poll is a handshake and each sync two more: fewer of them, the same bound.
        try soak(url: server.url(for: bare), polls: 60, syncs: 5, server: server)
    }

    /// Device A (polled, syncing) and device B (writing), both profiles open in this process for the
    /// whole run, as a watch keeps its profile; `url` is the remote.
    private func soak(url: String, polls: Int, syncs: Int, server: SSHServer? = nil) throws {
        let identity = try Identity.create(member: "alice", device: "laptop", in: sandbox.appendingPathComponent("home-alice"))
        if let server { try server.authorize(publicKeyLine: identity.publicKeyLine) }
        let environment = ConcordEnvironment(home: identity.home)
        let a = try Profile.create(at: sandbox.appendingPathComponent("a"), name: "Soak", template: .aac,
                                   identity: identity, environment: environment)
        try a.sync.addRemote("origin", url: url)
        if server != nil { _ = try a.sync.trustRemote("origin", identity: identity) }
        _ = try a.sync.run(as: identity)
        let b = try Sync.clone(url: url, into: sandbox.appendingPathComponent("b"), identity: identity,
                                  environment: environment)
        fsckAtEnd += [a.root, b.root]

        var rounds = 0
        // B writes and pushes, A writes too; A's next check sees both, and its sync fetches, merges and pushes.
        func round() throws {
            rounds += 1
            try b.records.write(as: identity) { try $0.put("vocabulary", "b-\(rounds)", data: ["term": .string("from b \(rounds)")]) }
            _ = try b.sync.run(as: identity)
            try a.records.write(as: identity) { try $0.put("vocabulary", "a-\(rounds)", data: ["term": .string("from a \(rounds)")]) }
            XCTAssertTrue(try a.sync.isNeeded(as: identity))
            let report = try a.sync.run(as: identity)
            XCTAssertGreaterThanOrEqual(report.sent, 1)
            XCTAssertGreaterThanOrEqual(report.received, 1)
            XCTAssertEqual(report.unresolved.count, 0)
        }
        // Warm-up (50 polls, 2 rounds): runtime tables, libgit2's one-time set-up and the allocator settle.
        for poll in 1...50 {
            if poll % 25 == 0 { try round() } else { XCTAssertFalse(try a.sync.isNeeded(as: identity)) }
        }
        let start = residentBytes()
        for poll in 1...polls {
            if poll % (polls / syncs) == 0 {
                try round()
            } else {
                XCTAssertFalse(try a.sync.isNeeded(as: identity), "poll \(poll): nothing moved, yet A wants to sync")
            }
        }
        let end = residentBytes()
        let growth = end - start
        print("watch memory [\(server == nil ? "path" : "ssh")]: resident \(start / 1024) KB after the warm-up, \(end / 1024) KB "
            + "after \(polls) more polls including \(rounds - 2) sync rounds (\(growth / 1024) KB)")
        XCTAssertLessThan(growth, Self.bound,
                          "resident memory grew by \(growth / 1024) KB over \(polls) polls and \(rounds - 2) sync rounds: a leak?")
    }

    /// This process's resident set size, from /proc/self/statm (its second field, in pages).
    private func residentBytes() -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
