import ConcordKit
import Foundation
import XCTest

/// A sync holds the profile lock only for its local steps (check, admit, merge, ref updates):
/// while its fetch waits on the network, this device's writes and reads of the profile go ahead,
/// and the sync then merges what it fetched with them (docs/architecture.md, "The sync pipeline").
final class UnlockedTransportTests: SyncTestCase {
    func testAWriteAndAReadCompleteWhileASyncsFetchIsHeldUpAtTheServer() throws {
        let scene = try makeTwoDevices(.ssh, other: ("bob", "tablet"), role: "editor")
        let server = try XCTUnwrap(scene.remote.server)
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)

        // From now on Bob's connections wait at the server until `open` exists; `arrived` says one waits.
        let gate = sandbox.appendingPathComponent("gate")
        try FileManager.default.createDirectory(at: gate, withIntermediateDirectories: true)
        let arrived = gate.appendingPathComponent("arrived").path, open = gate.appendingPathComponent("open").path
        let script = gate.appendingPathComponent("held.sh")
        try Data("""
            #!/bin/sh
            touch '\(arrived)'
            while [ ! -e '\(open)' ]; do sleep 0.05; done
            exec sh -c "$SSH_ORIGINAL_COMMAND"

            """.utf8).write(to: script)
        XCTAssertEqual(chmod(script.path, 0o755), 0)
        try Data().write(to: server.authorizedKeysURL)
        try server.authorize(publicKeyLine: scene.owner.publicKeyLine)
        try server.authorize(publicKeyLine: "command=\"\(script.path)\",restrict " + scene.other.publicKeyLine)
        defer { _ = FileManager.default.createFile(atPath: open, contents: nil) }   // never leaves the sync waiting

        let (profileURL, home) = (scene.otherProfile, scene.other.home)
        let outcome = SyncOutcome()
        Thread.detachNewThread {
            outcome.set(Result {
                try Profile.open(at: profileURL, environment: ConcordEnvironment(home: home)).sync
                    .run(remote: "origin", as: try Identity.load(from: home))
            })
        }
        XCTAssertTrue(waitUntil(30) { FileManager.default.fileExists(atPath: arrived) }, "the sync never reached the server:\n\(server.log)")

        // The sync's fetch is held at the server: a write (which takes the profile lock) and a read go ahead.
        let started = Date()
        let profile = try Profile.open(at: profileURL, environment: ConcordEnvironment(home: home))
        try profile.records.write(as: try Identity.load(from: home)) { try $0.put("vocabulary", "dog", data: ["label": "dog"]) }
        XCTAssertEqual(try profile.records.get("vocabulary", "dog").data?["label"], "dog")
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "the write waited for the sync's fetch")
        XCTAssertNil(outcome.result, "the sync finished while its fetch was held")

        // Let the fetch through: the sync merges the remote's record with the write made meanwhile, and sends both.
        XCTAssertTrue(FileManager.default.createFile(atPath: open, contents: nil))
        let result = try XCTUnwrap(outcome.wait(seconds: 60), "the sync did not finish once its fetch was let through")
        let report = try result.get()
        XCTAssertEqual(report.received, 1)
        XCTAssertGreaterThanOrEqual(report.sent, 1)
        XCTAssertEqual(try profile.records.get("vocabulary", "cat").data?["label"], "cat")
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertTrue(try concordOK(["get", "vocabulary/dog"], as: scene.owner, in: scene.ownerProfile).contains("dog"))
    }
}

/// What the background sync returned, once it has.
private final class SyncOutcome: @unchecked Sendable {   // every access holds `lock`
    private let lock = NSCondition()
    private var stored: Result<SyncReport, Error>?

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
