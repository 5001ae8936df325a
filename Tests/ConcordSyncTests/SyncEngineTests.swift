@testable import ConcordEngine
@testable import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `SyncEngine`, the library's `concord watch`: several profiles on threads of their own, a
/// progress and an event stream, and the removal policy applied as `watch` applies it.
final class SyncEngineTests: ConcordTestCase {
    /// Long enough for a loaded machine, ended as soon as what is waited for is seen.
    private let deadline: TimeInterval = 60

    private func engine(for device: TestDevice, networkTimeout: TimeInterval = 30) throws -> SyncEngine {
        var environment = ConcordEnvironment(home: device.home)
        environment.networkTimeout = networkTimeout
        return SyncEngine(identity: try Identity.load(from: device.home), environment: environment)
    }

    /// An engine of `device` syncing `profiles` every 0.5 s, started, with a recorder of what it tells.
    private func started(_ device: TestDevice, _ profiles: [URL], keepCopy: Bool = false,
                         networkTimeout: TimeInterval = 30) throws -> (SyncEngine, EngineRecorder) {
        let engine = try engine(for: device, networkTimeout: networkTimeout)
        for profile in profiles { try engine.add(SyncEngine.Target(directory: profile, interval: 0.5, keepCopy: keepCopy)) }
        let recorder = EngineRecorder(engine)
        engine.start()
        return (engine, recorder)
    }

    private func exists(_ reference: String, in profile: URL) -> Bool {
        let parts = reference.split(separator: "/").map(String.init)
        return FileManager.default.fileExists(atPath: profile.appendingPathComponent(RecordPaths.file(directory: parts[0], id: parts[1])).path)
    }

    /// One engine, two profiles: one whose remote takes connections and never answers, one on a
    /// live ssh remote. The live one receives and sends while the dead one's check hangs; `stop()`
    /// cuts that check and returns at once, and leaves no thread of the engine behind.
    func testADeadRemoteDoesNotHoldUpALiveOneAndStopLeavesNoThread() throws {
        let scene = try makeTwoDevices(.ssh)
        let deadCopy = try cloneProfile(scene.other, from: scene.remote, into: "tablet-dead")
        let silent = try SilentListener()
        try gitOK(["config", "remote.origin.url", "ssh://\(scene.other.member)@127.0.0.1:\(silent.port)/dead.git"], in: deadCopy)
        fsckAtEnd.removeAll { $0 == deadCopy }
        // Each check of the dead remote hangs for 60 s: far longer than the live profile needs.
        let (engine, recorder) = try started(scene.other, [deadCopy, scene.otherProfile], networkTimeout: 60)
        let began = Date()
        defer { engine.stop() }

        try concordOK(["put", "vocabulary/from-laptop", "--json", #"{"label":"sent by the laptop"}"#], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertTrue(waitUntil(deadline) { exists("vocabulary/from-laptop", in: scene.otherProfile) },
                      "the live profile did not receive: \(recorder.names(of: scene.otherProfile))")
        try concordOK(["put", "vocabulary/from-tablet", "--json", #"{"label":"sent by the tablet"}"#], as: scene.other, in: scene.otherProfile)
        let head = try revParse("HEAD", in: scene.otherProfile)
        XCTAssertTrue(try waitUntil(deadline) { try remoteMain(scene.remote) == head }, "the live profile did not send")
        XCTAssertLessThan(Date().timeIntervalSince(began), 45, "the live profile waited for the dead one")
        XCTAssertTrue(waitUntil(deadline) { engine.progress(of: scene.otherProfile)?.isFullySynced == true })
        // The dead profile is still inside its first check: not yet told offline.
        XCTAssertFalse(recorder.names(of: deadCopy).contains("offline"), recorder.names(of: deadCopy).joined(separator: " "))
        XCTAssertEqual(engine.remoteChecks(of: deadCopy), 0)
        let running = threadNames()
        XCTAssertEqual(running.filter { $0 == "concord-sync" }.count, 2, "\(running)")
        XCTAssertTrue(running.contains("concord-live"), "\(running)")

        let stopping = Date()
        engine.stop()
        XCTAssertLessThan(Date().timeIntervalSince(stopping), 5, "stop() waited for the dead remote")
        // Each thread has done its last work when stop() returns; the system takes a moment to end it.
        let left = { threadNames().filter { $0 == "concord-sync" || $0 == "concord-live" } }
        XCTAssertTrue(waitUntil(2) { left().isEmpty }, "threads left running after stop(): \(left())")
        for profile in [deadCopy, scene.otherProfile] {
            XCTAssertTrue(waitUntil(5) { recorder.names(of: profile).last == "stopped" }, recorder.names(of: profile).joined(separator: " "))
            XCTAssertEqual(engine.progress(of: profile)?.phase, .stopped)
        }
        XCTAssertFalse(recorder.names(of: scene.otherProfile).contains { $0.hasPrefix("failed") }, recorder.names(of: scene.otherProfile).joined(separator: " "))
    }

    /// The remote is away when the engine starts and a local commit waits: the progress stream says
    /// offline, then (once the remote is back) idle with no error, then fully synced, in that order.
    func testProgressTellsOfflineThenOnlineThenFullySynced() throws {
        let scene = try makeTwoDevices(.path)
        let away = scene.remote.bare.deletingLastPathComponent().appendingPathComponent("remote-away.git")
        try FileManager.default.moveItem(at: scene.remote.bare, to: away)
        try concordOK(["put", "vocabulary/pending", "--json", #"{"label":"written offline"}"#], as: scene.other, in: scene.otherProfile)
        let (engine, recorder) = try started(scene.other, [scene.otherProfile])
        defer { engine.stop() }
        let profile = scene.otherProfile
        XCTAssertTrue(waitUntil(deadline) { recorder.progress(of: profile).contains { $0.phase == .offline } },
                      "never offline: \(recorder.names(of: profile))")
        let offline = try XCTUnwrap(recorder.progress(of: profile).last { $0.phase == .offline })
        XCTAssertFalse(offline.isFullySynced)
        XCTAssertEqual(offline.pendingCommits, 1)
        guard case .offline? = offline.lastError else { return XCTFail("typed: \(String(describing: offline.lastError))") }
        XCTAssertTrue(offline.lastErrorMessage?.contains("cannot reach") ?? false, "\(String(describing: offline.lastErrorMessage))")
        try FileManager.default.moveItem(at: away, to: scene.remote.bare)
        XCTAssertTrue(waitUntil(deadline) { recorder.progress(of: profile).contains { $0.isFullySynced } },
                      "never fully synced: \(recorder.names(of: profile))")
        engine.stop()

        let phases = recorder.progress(of: profile)
        let firstOffline = try XCTUnwrap(phases.firstIndex { $0.phase == .offline })
        let online = try XCTUnwrap(phases.indices.first { $0 > firstOffline && phases[$0].phase != .offline },
                                   "\(phases.map(\.phase))")
        let synced = try XCTUnwrap(phases.firstIndex { $0.isFullySynced })
        XCTAssertLessThan(online, synced)
        XCTAssertFalse(phases[..<firstOffline].contains { $0.isFullySynced }, "fully synced before the remote answered")
        let done = phases[synced]
        XCTAssertEqual(done.phase, .idle)
        XCTAssertEqual(done.pendingCommits, 0)
        XCTAssertNil(done.lastError)
        XCTAssertNil(done.lastErrorMessage)
        XCTAssertNotNil(done.lastSync)
        XCTAssertEqual(try remoteMain(scene.remote), try revParse("HEAD", in: profile))
        XCTAssertTrue(waitUntil(5) { recorder.names(of: profile).last == "stopped" }, "\(recorder.names(of: profile))")
        let names = recorder.names(of: profile)
        XCTAssertEqual(names.filter { $0 == "offline" }.count, 1, "\(names)")
        let order = ["started", "offline", "online", "synced", "stopped"].map { names.firstIndex(of: $0) ?? -1 }
        XCTAssertEqual(order, order.sorted(), "\(names)")
        XCTAssertFalse(order.contains(-1), "\(names)")
    }

    /// Bob's member is revoked while an app holds his copy open and he has an edit he never sent:
    /// the engine saves the edit, deletes the copy, says so (`accessRemoved`, no `stopped`), and
    /// the registry lists the copy as removed: what `concord watch` and `sync` do.
    func testARevocationRemovesTheCopyAsWatchDoesWhileAnAppHoldsItOpen() throws {
        let scene = try makeTwoDevices(.path, other: ("bob", "tablet"), role: "editor",
                                       records: [("vocabulary/puzzle", #"{"label":"everyone has this"}"#)])
        fsckAtEnd.removeAll { $0 == scene.otherProfile }
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        let published = try remoteMain(scene.remote)
        try concordOK(["put", "vocabulary/unsent", "--json", #"{"label":"written before the revocation arrived"}"#], as: scene.other,
                      in: scene.otherProfile)
        // The app's own handle on the copy, open the whole time.
        let app = try Profile.open(at: scene.otherProfile, environment: ConcordEnvironment(home: scene.other.home))
        XCTAssertEqual(try app.sync.status().ahead, 1)

        let (engine, recorder) = try started(scene.other, [scene.otherProfile])
        defer { engine.stop() }
        let profile = scene.otherProfile
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: profile).last == "accessRemoved" }, "\(recorder.names(of: profile))")
        XCTAssertTrue(waitUntil(5) { engine.progress(of: profile)?.phase == .stopped })
        XCTAssertEqual(recorder.names(of: profile), ["started", "accessRemoved"])
        guard case .accessRemoved(let removal) = recorder.events(of: profile).last else { return XCTFail("no removal") }
        XCTAssertTrue(removal.deleted)
        XCTAssertTrue(removal.cause.localizedDescription.contains("access removed: alice revoked your access to Shared"),
                      removal.cause.localizedDescription)
        let saved = try XCTUnwrap(removal.savedUnsentEdits)
        let dump = try String(contentsOf: saved, encoding: .utf8)
        XCTAssertTrue(dump.contains("written before the revocation arrived"), dump)
        XCTAssertFalse(dump.contains("everyone has this"), dump)
        XCTAssertEqual(saved.deletingLastPathComponent().standardizedFileURL,
                       scene.other.home.appendingPathComponent("saved").standardizedFileURL)
        let told = removal.error.localizedDescription
        XCTAssertTrue(told.contains("copy was deleted") && told.contains(saved.path), told)
        XCTAssertNotNil(engine.progress(of: profile)?.removal)
        XCTAssertFalse(FileManager.default.fileExists(atPath: profile.path), "the revoked device kept its copy")
        XCTAssertEqual(try remoteMain(scene.remote), published, "the revoked device pushed")
        let registry = (try? String(contentsOf: scene.other.home.appendingPathComponent("profiles.json"), encoding: .utf8)) ?? ""
        XCTAssertTrue(registry.contains(#""removed": "access removed: alice revoked bob's access"#), registry)
        // The app's handle outlived its copy: asking it gives an error or a stale answer, never a crash.
        _ = try? app.sync.status()
    }

    /// Bob's unsent edit cannot be saved (a file stands where `$CONCORD_HOME/saved` goes): the
    /// engine keeps the copy, tells the failure, and tries again; once the way is clear, the next
    /// attempt saves the edit and deletes the copy. An acknowledged write is never lost to a removal.
    func testAFailedSaveOfTheUnsentEditsKeepsTheCopyAndIsRetried() throws {
        let scene = try makeTwoDevices(.path, other: ("bob", "tablet"), role: "editor")
        fsckAtEnd.removeAll { $0 == scene.otherProfile }
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["put", "vocabulary/unsent", "--json", #"{"label":"only on bob's tablet"}"#], as: scene.other, in: scene.otherProfile)
        let blocker = scene.other.home.appendingPathComponent("saved")
        try Data("not a directory\n".utf8).write(to: blocker)

        let (engine, recorder) = try started(scene.other, [scene.otherProfile])
        defer { engine.stop() }
        let profile = scene.otherProfile
        let failures = { recorder.events(of: profile).compactMap { event -> String? in
            if case .failed(let message) = event { return message } else { return nil }
        } }
        XCTAssertTrue(waitUntil(deadline) { failures().contains { $0.contains("could not save the unsent edits") } },
                      "\(recorder.names(of: profile))")
        XCTAssertTrue(FileManager.default.fileExists(atPath: profile.appendingPathComponent("vocabulary").path), "the copy went unsaved")
        XCTAssertTrue(failures().allSatisfy { $0.contains("the copy was kept") }, "\(failures())")
        XCTAssertFalse(recorder.names(of: profile).contains("accessRemoved"))
        XCTAssertNil(engine.progress(of: profile)?.removal)

        try FileManager.default.removeItem(at: blocker)
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: profile).last == "accessRemoved" }, "\(recorder.names(of: profile))")
        guard case .accessRemoved(let removal) = recorder.events(of: profile).last else { return XCTFail("no removal") }
        XCTAssertTrue(removal.deleted)
        let saved = try String(contentsOf: try XCTUnwrap(removal.savedUnsentEdits), encoding: .utf8)
        XCTAssertTrue(saved.contains("only on bob's tablet"), saved)
        XCTAssertFalse(FileManager.default.fileExists(atPath: profile.path), "the revoked device kept its copy")
    }

    /// `keepCopy`: the engine tells the removal and leaves the copy as it was.
    func testKeepCopyLeavesTheRevokedCopyInPlace() throws {
        let scene = try makeTwoDevices(.path, other: ("bob", "tablet"), role: "editor")
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        let head = try revParse("HEAD", in: scene.otherProfile)
        let (engine, recorder) = try started(scene.other, [scene.otherProfile], keepCopy: true)
        defer { engine.stop() }
        XCTAssertTrue(waitUntil(deadline) { engine.progress(of: scene.otherProfile)?.removal != nil }, "\(recorder.names(of: scene.otherProfile))")
        let removal = try XCTUnwrap(engine.progress(of: scene.otherProfile)?.removal)
        XCTAssertFalse(removal.deleted)
        XCTAssertTrue(removal.error.localizedDescription.contains("kept (--keep)"), removal.error.localizedDescription)
        XCTAssertEqual(try revParse("HEAD", in: scene.otherProfile), head, "nothing of the revocation was merged")
    }

    /// Alice's write that Bob's later one overwrote while she was away: the engine's sync tells
    /// it twice, in the report of `synced` and on its own as `lostWrites`, naming her as the loser.
    func testALostWriteOfThisMemberIsToldAfterTheSync() throws {
        let remote = try makeRemote(.path)
        let (alice, bob) = (try makeDevice("alice", device: "laptop"), try makeDevice("bob", device: "phone"))
        let alices = try publishProfile(owner: alice, remote: remote, directory: "alice", template: "screenplay", members: [(bob, "editor")],
                                        records: [("scenes/y", #"{"a":"base","b":"base"}"#)])
        let bobs = try cloneProfile(bob, from: remote, into: "bob")
        try concordOK(["put", "scenes/y", "--json", #"{"a":"alice","b":"base"}"#], as: alice, in: alices)
        try concordOK(["put", "scenes/y", "--json", #"{"a":"bob","b":"base"}"#], as: bob, in: bobs)
        try concordOK(["sync"], as: bob, in: bobs)

        let (engine, recorder) = try started(alice, [alices])
        defer { engine.stop() }
        XCTAssertTrue(waitUntil(deadline) { recorder.names(of: alices).contains("lostWrites") }, "\(recorder.names(of: alices))")
        let names = recorder.names(of: alices)
        XCTAssertEqual(Array(names.prefix(3)), ["started", "synced", "lostWrites"])
        guard case .lostWrites(let lost) = recorder.events(of: alices)[2], case .synced(let report) = recorder.events(of: alices)[1] else {
            return XCTFail("\(names)")
        }
        XCTAssertEqual(lost, report.yours)
        XCTAssertEqual(lost.map(\.record), ["scenes/y"])
        XCTAssertEqual(lost.map(\.field), ["a"])
        XCTAssertEqual(lost.map(\.loser.member), ["alice"])
    }

    /// `await stop()` from a task: the threads are joined off Swift's pool, and the task resumes
    /// once every profile told `stopped`.
    func testStopFromATaskJoinsEveryThread() throws {
        let scene = try makeTwoDevices(.path)
        let engine = try engine(for: scene.other)
        try engine.add(SyncEngine.Target(directory: scene.otherProfile, interval: 0.5))
        try engine.add(SyncEngine.Target(directory: scene.ownerProfile, interval: 0.5))
        engine.start()
        XCTAssertTrue(waitUntil(deadline) { threadNames().filter { $0 == "concord-sync" }.count == 2 }, "\(threadNames())")
        let stopped = expectation(description: "stop() returned")
        Task.detached {
            await engine.stop()
            stopped.fulfill()
        }
        wait(for: [stopped], timeout: 10)
        XCTAssertTrue(waitUntil(2) { !threadNames().contains("concord-sync") }, "\(threadNames())")
        XCTAssertEqual(engine.progress(of: scene.otherProfile)?.phase, .stopped)
        XCTAssertEqual(engine.progress(of: scene.ownerProfile)?.phase, .stopped)
    }

    /// An engine the app lets go of while it runs stops its threads as it goes.
    func testAnEngineLetGoStopsItsThreads() throws {
        let scene = try makeTwoDevices(.path)
        var engine: SyncEngine? = try engine(for: scene.other)
        try engine?.add(SyncEngine.Target(directory: scene.otherProfile, interval: 0.5))
        engine?.start()
        XCTAssertTrue(waitUntil(deadline) { threadNames().contains("concord-sync") }, "\(threadNames())")
        engine = nil
        XCTAssertTrue(waitUntil(2) { !threadNames().contains("concord-sync") }, "\(threadNames())")
    }

    /// Each bad input to `add` is refused with one line saying what to give instead.
    func testBadTargetsAreRefusedClearly() throws {
        let scene = try makeTwoDevices(.path)
        let engine = try engine(for: scene.other)
        func refusal(_ target: SyncEngine.Target) -> String {
            do {
                try engine.add(target)
                return "accepted"
            } catch {
                return (error as? LocalizedError)?.errorDescription ?? "\(error)"
            }
        }
        let refusals = [
            (refusal(SyncEngine.Target(directory: scene.otherProfile, interval: 0)), "the interval must be between 0 and 3600 seconds"),
            (refusal(SyncEngine.Target(directory: scene.otherProfile, interval: 7200)), "the interval must be between 0 and 3600 seconds"),
            (refusal(SyncEngine.Target(directory: sandbox)), "is not a Concord profile"),
            (refusal(SyncEngine.Target(directory: scene.otherProfile, remote: "backup")), "no remote named \"backup\""),
            (refusal(SyncEngine.Target(directory: scene.otherProfile)), "accepted"),
            (refusal(SyncEngine.Target(directory: scene.otherProfile)), "is in this sync engine already"),
        ]
        engine.stop()
        for (line, expected) in refusals + [(refusal(SyncEngine.Target(directory: scene.ownerProfile)), "this sync engine was stopped")] {
            XCTAssertTrue(line.contains(expected), "\(line) does not say \(expected)")
            XCTAssertFalse(line.contains("\n"), line)
        }
    }

    /// A consumer of `progress()` that does not keep up gets the newest progress, never a backlog:
    /// while it is away only the newest `progressBuffer` values are kept, the last of them the
    /// current one. `events()` likewise keeps the newest `eventBuffer` events, in order.
    func testASlowConsumerGetsTheNewestProgressNotABacklog() async {
        let hub = SyncEngineHub()
        let profile = URL(fileURLWithPath: "/nowhere/profile")
        let progress = hub.subscribeProgress(), events = hub.subscribeEvents()
        var told = SyncProgress(profile: profile, remote: "origin")
        for count in 1...1_000 {
            told.pendingCommits = count
            hub.publish(told)
            hub.publish(.failed("failure \(count)"), for: profile)
        }
        XCTAssertEqual(hub.progress(of: profile)?.pendingCommits, 1_000)
        hub.stop()
        var pending = [Int]()
        for await update in progress { pending.append(update.pendingCommits) }
        XCTAssertEqual(pending, Array((1_000 - SyncEngine.progressBuffer + 1)...1_000))
        var failures = [String]()
        for await event in events {
            if case .failed(let message) = event.kind { failures.append(message) }
        }
        XCTAssertEqual(failures, ((1_000 - SyncEngine.eventBuffer + 1)...1_000).map { "failure \($0)" })
    }
}
