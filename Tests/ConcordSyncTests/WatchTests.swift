import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `concord watch` on two devices: writes made by other processes reach the other device within
/// seconds, an outage is reported once and recovered from, and SIGTERM stops it cleanly.
final class WatchTests: ConcordTestCase {
    func testWatchPropagatesRecoversAndStopsOverAPathRemote() throws { try watchScenario(transport: .path) }

    func testWatchPropagatesRecoversAndStopsOverSSH() throws {
        let server = try startSSHServer()
        try watchScenario(transport: .ssh(server))
    }

    /// A running `concord watch --json` and the file its output goes to.
    private struct Watcher {
        let device: RaceKill.Device
        let child: ChildProcess
        let log: URL

        /// The JSON events printed so far.
        func events() -> [[String: Any]] { jsonObjectLines(of: log) }

        func names() -> [String] { events().compactMap { $0["event"] as? String } }

        /// How many times it has asked the remote (`CONCORD_TRACE_PERF=1` prints a line per check).
        func remoteChecks() -> Int { output.components(separatedBy: "watch: remote checked").count - 1 }

        var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
    }

    /// How long to wait for something a watcher must do: far more than it takes on an idle machine
    /// (about a second), so a loaded one (a full CI run on two cores) does not fail the test; each
    /// wait ends as soon as what it waits for is seen.
    private let deadline: TimeInterval = 60


    private func watchScenario(transport: RaceKill.Transport) throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 2, transport: transport)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let watchers = try [a, b].map { device in
            let log = fleet.scratch.appendingPathComponent("watch-\(device.name).log")
            return Watcher(device: device, child: try fleet.spawn(on: device, ["watch", "--interval", "1", "--json"], output: log,
                                                          environment: ["CONCORD_TRACE_PERF": "1"]), log: log)
        }
        defer { for watcher in watchers where watcher.child.exitStatus() == nil { watcher.child.signal(SIGKILL) } }
        for watcher in watchers {
            XCTAssertTrue(waitUntil(deadline) { watcher.names().first == "started" }, "\(watcher.device.name): no started event: \(watcher.output)")
        }

        // A writes five records 0.5 s apart; each must show up on B.
        let count = 5
        var written = [String: Date]()
        var seen = [String: Date]()
        let start = Date()
        while seen.count < count {
            let now = Date()
            if written.count < count, now >= start.addingTimeInterval(0.5 * Double(written.count)) {
                let id = "w-\(written.count + 1)"
                try fleet.concordOK(on: a, ["put", "vocabulary/\(id)", "--json", #"{"term":"\#(id)"}"#])
                written[id] = Date()
            }
            for (id, time) in written where seen[id] == nil {
                if FileManager.default.fileExists(atPath: b.profile.appendingPathComponent(RecordPaths.file(directory: "vocabulary", id: id)).path) {
                    seen[id] = Date()
                } else if now.timeIntervalSince(time) > deadline {
                    XCTFail("\(id) did not reach B within \(Int(deadline)) s\nA: \(watchers[0].output)\nB: \(watchers[1].output)")
                    seen[id] = .distantFuture
                }
            }
            usleep(20_000)
        }
        let propagation = written.compactMap { id, time in seen[id].map { $0.timeIntervalSince(time) } }.filter { $0 < 60 }
        for id in written.keys.sorted() where seen[id] != .distantFuture {
            let get = try fleet.concord(on: b, ["get", "vocabulary/\(id)"])
            XCTAssertEqual(get.status, 0, "B has the file of \(id) but `concord get` fails: \(get.trimmed)")
        }

        // An outage: the remote disappears while both watch, and A writes meanwhile.
        let hidden = fleet.bare.deletingLastPathComponent().appendingPathComponent("remote-away.git")
        switch transport {
        case .path: try FileManager.default.moveItem(at: fleet.bare, to: hidden)
        case .ssh(let server): server.stop()
        }
        try fleet.concordOK(on: a, ["put", "vocabulary/during-outage", "--json", #"{"term":"offline"}"#])
        var checksWhenOffline = [Int]()
        for watcher in watchers {
            XCTAssertTrue(waitUntil(deadline) { watcher.names().contains("offline") }, "\(watcher.device.name): no offline event: \(watcher.output)")
            checksWhenOffline.append(watcher.remoteChecks())
        }
        // Two more checks each while the remote is away (the line of the check that reported the
        // outage may come after the count was read): the outage must not be reported again.
        for (watcher, checks) in zip(watchers, checksWhenOffline) {
            XCTAssertTrue(waitUntil(deadline) { watcher.remoteChecks() >= checks + 3 },
                          "\(watcher.device.name): fewer than two remote checks after going offline: \(watcher.output)")
        }
        switch transport {
        case .path: try FileManager.default.moveItem(at: hidden, to: fleet.bare)
        case .ssh(let server): try server.start()
        }
        let back = Date()
        for watcher in watchers {
            XCTAssertTrue(waitUntil(deadline) { watcher.names().contains("online") }, "\(watcher.device.name): no online event: \(watcher.output)")
        }
        let arrived = waitUntil(deadline) {
            FileManager.default.fileExists(atPath: b.profile.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "during-outage"))").path)
        }
        XCTAssertTrue(arrived, "the record written during the outage did not reach B within \(Int(deadline)) s of the remote's return")
        let recovery = Date().timeIntervalSince(back)

        // SIGTERM: each finishes what it is doing and exits 0, saying so last.
        for watcher in watchers { watcher.child.signal(SIGTERM) }
        var stopTimes = [Double]()
        let terminated = Date()
        for watcher in watchers {
            let exited = waitUntil(deadline) { watcher.child.exitStatus() != nil }
            XCTAssertTrue(exited, "\(watcher.device.name): still running \(Int(deadline)) s after SIGTERM")
            stopTimes.append(Date().timeIntervalSince(terminated))
            if !exited { continue }
            XCTAssertEqual(watcher.child.exitStatus(), 0, "\(watcher.device.name): \(watcher.output)")
            XCTAssertEqual(watcher.events().last?["event"] as? String, "stopped", "\(watcher.device.name): \(watcher.output)")
        }

        for watcher in watchers {
            let names = watcher.names()
            let name = watcher.device.name
            let offlines = watcher.events().filter { $0["event"] as? String == "offline" }.map { "\($0)" }
            XCTAssertEqual(offlines.count, 1, "\(name): the outage must be reported exactly once: \(names) \(offlines)")
            XCTAssertEqual(names.filter { $0 == "online" }.count, 1, "\(name): \(names)")
            XCTAssertEqual(names.filter { $0 == "started" }.count, 1, "\(name): \(names)")
            let errors = watcher.events().filter { $0["event"] as? String == "error" }.compactMap { $0["message"] as? String }
            XCTAssertEqual(errors, [], "\(name) reported errors")
            if let online = names.firstIndex(of: "online"), let offline = names.firstIndex(of: "offline") {
                XCTAssertLessThan(offline, online, "\(name): \(names)")
            }
        }
        let aNames = watchers[0].names()
        if let online = aNames.firstIndex(of: "online") {
            XCTAssertTrue(aNames[online...].contains("synced"), "A did not sync after the remote came back: \(aNames)")
        }
        XCTAssertEqual(try fleet.head(a), try fleet.head(b))
        XCTAssertEqual(try fleet.bareMain(), try fleet.head(a))

        print("""
            watch[\(fleet.label)]: \(propagation.count) records A → B, propagation p50 \
            \(RaceKill.format(RaceKill.quantile(propagation, 0.5))), max \(RaceKill.format(propagation.max() ?? 0)) \
            (\(propagation.sorted().map { String(format: "%.2f", $0) }.joined(separator: " "))); after the outage the \
            pending record arrived \(RaceKill.format(recovery)) after the remote returned; stopped \
            \(stopTimes.map { String(format: "%.2f s", $0) }.joined(separator: ", ")) after SIGTERM
            """)
    }

    /// `watch` tells the loser too: alice's watch, started after carol's merge left her write out,
    /// reports it in its first sync, in the text and in `--json` (`lost`, with `yours`).
    func testAWatchTellsTheLoser() throws {
        let team = try makeLostWriteTeam()
        let (copies, _) = try carolsMergeLeavesOutAlicesEdit(team, tag: "watch")
        for json in [true, false] {
            let log = sandbox.appendingPathComponent("watch-alice-\(json).log")
            try concordOK(["put", "scenes/z\(json)", "--json", #"{"a":"x"}"#], as: team.alice, in: copies[0])   // something to sync
            let watcher = try ChildProcess(path: try ConcordBinary.required(),
                                           arguments: ["watch", "-C", copies[0].path, "--interval", "1"] + (json ? ["--json"] : []),
                                           environment: concordEnvironment(team.alice), output: log)
            defer { if watcher.exitStatus() == nil { watcher.signal(SIGKILL) } }
            let output = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
            let told = json ? #""yours":true"# : "your edit of scenes/y (a) lost to carol's edit at "
            if json {
                XCTAssertTrue(waitUntil(60) { output().contains(told) }, output())
                XCTAssertTrue(output().contains(#""told":"your edit of scenes/y (a) lost to carol's edit at "#), output())
            } else {
                // The second watch's sync brings nothing new: nothing to tell again.
                XCTAssertTrue(waitUntil(60) { output().contains("synced") }, output())
                XCTAssertFalse(output().contains(told), output())
            }
            watcher.signal(SIGTERM)
            XCTAssertTrue(waitUntil(30) { watcher.exitStatus() != nil }, output())
        }
    }

}

/// `watch` where its process is the point: an outage told once, a revoked device's watch stopping
/// (moved here from NewUserTests and RevocationTests, so that the classes starting the binary are
/// the end-to-end ones).
extension WatchTests {
    /// `watch` says once that the remote is away, in one `offline:` and with no count of local
    /// commits (the count was the one at the outage's start, 0 while commits were waiting).
    func testWatchReportsAnOutageOnce() throws {
        let alice = try makeDevice("alice")
        let profile = sandbox.appendingPathComponent("profile")
        try concordOK(["init", profile.path, "--name", "Test profile", "--template", "aac"], as: alice)
        try concordOK(["remote", "add", "origin", sandbox.appendingPathComponent("away.git").path], as: alice, in: profile)
        let output = sandbox.appendingPathComponent("watch.log")
        var environment = concordEnvironment(alice)
        environment["PWD"] = profile.path
        let watch = try ChildProcess(path: try ConcordBinary.required(), arguments: ["watch", "-C", profile.path, "--interval", "0.2"],
                                     environment: environment, output: output)
        defer { if watch.exitStatus() == nil { watch.signal(SIGKILL); watch.wait() } }
        try concordOK(["put", "vocabulary/juice", "--json", #"{"label":"juice"}"#], as: alice, in: profile)
        let deadline = Date().addingTimeInterval(30)
        func text() -> String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        while !text().contains(" offline: "), Date() < deadline { usleep(50_000) }
        usleep(500_000)
        watch.signal(SIGTERM)
        XCTAssertEqual(watch.wait(), 0, text())
        let lines = text().split(separator: "\n").filter { $0.contains(" offline: ") }
        XCTAssertEqual(lines.count, 1, text())
        let line = String(lines.first ?? "")
        XCTAssertFalse(line.contains("offline: offline"), line)
        XCTAssertTrue(line.contains("offline: cannot reach origin"), line)
        XCTAssertTrue(line.hasSuffix("local commits are kept and sent once it answers"), line)
    }


    /// A revoked device running `watch --interval 2` reports "access removed" and exits 4, its copy gone.
    func testAWatchingRevokedDeviceStopsAndDeletesItsCopy() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        fsckAtEnd.removeAll { $0 == scene.otherProfile }
        let log = sandbox.appendingPathComponent("watch-bob.log")
        let watcher = try ChildProcess(path: try ConcordBinary.required(), arguments: ["watch", "-C", scene.otherProfile.path, "--interval", "2", "--json"],
                                       environment: concordEnvironment(scene.other), output: log)
        defer { if watcher.exitStatus() == nil { watcher.signal(SIGKILL) } }
        let output = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        XCTAssertTrue(waitUntil(60) { output().contains(#""event":"started""#) }, output())
        try concordOK(["revoke", "bob"], as: scene.owner, in: scene.ownerProfile)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile)
        XCTAssertTrue(waitUntil(60) { watcher.exitStatus() != nil }, "watch still running 60 s after the revocation: \(output())")
        XCTAssertEqual(watcher.exitStatus(), 4, output())
        XCTAssertTrue(output().contains("access removed: alice revoked your access"), output())
        XCTAssertFalse(FileManager.default.fileExists(atPath: scene.otherProfile.path), "the revoked device kept its copy")
    }
}
