import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// A sync holds the profile lock only for its local steps (check, admit, merge, ref updates):
/// while its fetch waits on the network, this device's writes and reads of the profile go ahead,
/// and the sync then merges what it fetched with them (docs/architecture.md, "The sync pipeline").
final class UnlockedTransportTests: ConcordTestCase {
    func testAWriteAndAReadCompleteWhileASyncsFetchIsHeldUpAtTheServer() throws {
        let scene = try makeTwoDevices(.ssh, other: ("bob", "tablet"), role: "editor")
        let server = try XCTUnwrap(scene.remote.server)
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)

        let gate = try holdFirstConnection(of: scene.other, at: server)
        defer { _ = FileManager.default.createFile(atPath: gate.open, contents: nil) }   // never leaves the sync waiting

        let (profileURL, home) = (scene.otherProfile, scene.other.home)
        let outcome = SyncOutcome.started(profileURL, home: home)
        XCTAssertTrue(waitUntil(30) { FileManager.default.fileExists(atPath: gate.arrived) }, "the sync never reached the server:\n\(server.log)")

        // The sync's fetch is held at the server: a write (which takes the profile lock) and a read go ahead.
        let started = Date()
        let profile = try Profile.open(at: profileURL, environment: ConcordEnvironment(home: home))
        try profile.records.write(as: try Identity.load(from: home)) { try $0.put("vocabulary", "dog", data: ["label": "dog"]) }
        XCTAssertEqual(try profile.records.get("vocabulary", "dog").data?["label"], "dog")
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "the write waited for the sync's fetch")
        XCTAssertNil(outcome.result, "the sync finished while its fetch was held")

        // Let the fetch through: the sync merges the remote's record with the write made meanwhile, and sends both.
        XCTAssertTrue(FileManager.default.createFile(atPath: gate.open, contents: nil))
        let result = try XCTUnwrap(outcome.wait(seconds: 60), "the sync did not finish once its fetch was let through")
        let report = try result.get()
        XCTAssertEqual(report.received, 1)
        XCTAssertGreaterThanOrEqual(report.sent, 1)
        XCTAssertEqual(try profile.records.get("vocabulary", "cat").data?["label"], "cat")
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/dog"], as: scene.owner, in: scene.ownerProfile).contains("dog"))
    }

    /// Two syncs of one profile at once: the first one's fetch is held at the server while the
    /// second fetches, merges and moves the tracking ref. When the first takes the lock, the
    /// tracking ref is no longer where its fetch found it: it fetches again (no false "rewound"
    /// warning, no failed compare-and-swap) and finds nothing more to do.
    func testASyncWhoseTrackingRefMovedDuringItsFetchFetchesAgain() throws {
        let scene = try makeTwoDevices(.ssh, other: ("bob", "tablet"), role: "editor")
        let server = try XCTUnwrap(scene.remote.server)
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        let gate = try holdFirstConnection(of: scene.other, at: server)
        defer { _ = FileManager.default.createFile(atPath: gate.open, contents: nil) }

        let outcome = SyncOutcome.started(scene.otherProfile, home: scene.other.home)
        XCTAssertTrue(waitUntil(30) { FileManager.default.fileExists(atPath: gate.arrived) }, "the sync never reached the server:\n\(server.log)")
        try concordOK(["sync"], as: scene.other, in: scene.otherProfile)   // the second sync, not held
        XCTAssertTrue(try concordOK(["get", "vocabulary/cat"], as: scene.other, in: scene.otherProfile).contains("cat"))
        XCTAssertNil(outcome.result, "the first sync finished while its fetch was held")

        XCTAssertTrue(FileManager.default.createFile(atPath: gate.open, contents: nil))
        let report = try XCTUnwrap(outcome.wait(seconds: 60), "the first sync did not finish once its fetch was let through").get()
        XCTAssertEqual(report.attempts, 2, "it fetched again")
        XCTAssertEqual(report.received, 0)
        XCTAssertEqual(report.warnings, [])
        let profile = try Profile.open(at: scene.otherProfile, environment: ConcordEnvironment(home: scene.other.home))
        XCTAssertEqual(try profile.records.get("vocabulary", "cat").data?["label"], "cat")
        XCTAssertEqual(try revParse("refs/remotes/origin/main", in: scene.otherProfile), try revParse("HEAD", in: scene.otherProfile))
    }

    /// Makes `device`'s first connection to `server` from now on wait at the server until `open`
    /// exists (`arrived` says it waits); later connections pass. Other keys pass as before.
    private func holdFirstConnection(of device: TestDevice, at server: SSHServer) throws -> (arrived: String, open: String) {
        let gate = sandbox.appendingPathComponent("gate")
        try FileManager.default.createDirectory(at: gate, withIntermediateDirectories: true)
        let arrived = gate.appendingPathComponent("arrived").path, open = gate.appendingPathComponent("open").path
        let script = gate.appendingPathComponent("held.sh")
        try Data("""
            #!/bin/sh
            if mkdir '\(gate.path)/first' 2>/dev/null; then
                touch '\(arrived)'
                while [ ! -e '\(open)' ]; do sleep 0.05; done
            fi
            exec sh -c "$SSH_ORIGINAL_COMMAND"

            """.utf8).write(to: script)
        XCTAssertEqual(chmod(script.path, 0o755), 0)
        let others = try String(contentsOf: server.authorizedKeysURL, encoding: .utf8).split(separator: "\n")
            .filter { !$0.contains(device.publicKeyLine) }
        try Data(others.map { $0 + "\n" }.joined().utf8).write(to: server.authorizedKeysURL)
        try server.authorize(publicKeyLine: "command=\"\(script.path)\",restrict " + device.publicKeyLine)
        return (arrived, open)
    }
}

/// What the background sync returned, once it has.
private final class SyncOutcome: @unchecked Sendable {   // every access holds `lock`
    private let lock = NSCondition()
    private var stored: Result<SyncReport, Error>?

    /// A sync of the profile at `root` as the identity in `home`, started on a thread of its own.
    static func started(_ root: URL, home: URL) -> SyncOutcome {
        let outcome = SyncOutcome()
        Thread.detachNewThread {
            outcome.set(Result {
                try Profile.open(at: root, environment: ConcordEnvironment(home: home)).sync.run(remote: "origin", as: try Identity.load(from: home))
            })
        }
        return outcome
    }

    var result: Result<SyncReport, Error>? { lock.withLock { stored } }

    func set(_ result: Result<SyncReport, Error>) {
        lock.withLock {
            stored = result
            lock.broadcast()
        }
    }

    /// The result, waiting up to `seconds` for it.
    func wait(seconds: TimeInterval) -> Result<SyncReport, Error>? {
        let deadline = Date().addingTimeInterval(seconds)
        return lock.withLock {
            while stored == nil, lock.wait(until: deadline) {}
            return stored
        }
    }
}
