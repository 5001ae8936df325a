import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Devices pushing at the same time through `concord serve`: each push is checked by the hook
/// against the main it finds, a push that lost the race is refused by git as stale (not by the
/// hook), the device fetches and pushes again, and no acknowledged write is lost.
final class ServeRaceTests: ConcordServeTestCase {
    func testFiveDevicesPushingAtOnceLoseNothing() throws {
        try race(devices: 5, until: .rounds(4))
    }

    /// The issue's scale: 20 devices, each writing and syncing as fast as it can for 30 s, every
    /// one on its own thread (not a pool the size of the machine's cores), through one sshd.
    func testTwentyDevicesForThirtySecondsLoseNothing() throws {
        try race(devices: 20, until: .seconds(30))
    }

    enum Stop {
        case rounds(Int)
        case seconds(TimeInterval)
    }

    /// `devices` editors clone the profile through the server, then each puts a record and syncs,
    /// over and over until `stop`; then every device syncs once more and Alice's copy must hold
    /// every record whose put was acknowledged, her main the server's, her history valid.
    private func race(devices: Int, until stop: Stop, file: StaticString = #filePath, line: UInt = #line) throws {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        let editors = try (1...devices).map { try makeDevice("e\($0)", device: "phone") }
        let aliceProfile = try publish("kid", on: host, members: editors.map { ($0, "editor") })
        let profiles = try editors.map { editor -> URL in
            let (cloned, profile) = try cloneThroughServer("kid", as: editor, host: host)
            XCTAssertEqual(cloned.status, 0, cloned.summary, file: file, line: line)
            return profile
        }
        let outcomes = Outcomes()
        let binary = try ConcordBinary.required()
        let environments = editors.map { concordEnvironment($0) }
        let started = Date()
        let finished = DispatchGroup()
        for index in editors.indices {
            finished.enter()
            let thread = Thread {
                defer { finished.leave() }
                var round = 0
                while true {
                    switch stop {
                    case .rounds(let rounds): if round >= rounds { return }
                    case .seconds(let seconds): if Date().timeIntervalSince(started) >= seconds { return }
                    }
                    let id = "\(editors[index].member)-\(round)"
                    round += 1
                    let put = try? ProcessRunner.run(binary, ["put", "vocabulary/\(id)", "--json", #"{"label":"\#(id)"}"#],
                                                     environment: environments[index], in: profiles[index], deadline: 60)
                    let sync = try? ProcessRunner.run(binary, ["sync"], environment: environments[index], in: profiles[index], deadline: 120)
                    outcomes.record { outcomes in
                        if put?.status == 0 { outcomes.acknowledged.append(id) } else { outcomes.failures.append("put \(id): \(put?.summary ?? "did not run")") }
                        if sync?.status == 0 { outcomes.syncs += 1 }
                        // After 10 lost races a sync gives up with nothing lost (documented); the next one sends it.
                        if sync == nil || (sync?.status != 0 && sync?.stderr.contains("kept changing") == false) {
                            outcomes.failures.append("sync \(id): \(sync?.summary ?? "did not run")")
                        }
                    }
                }
            }
            thread.start()
        }
        finished.wait()
        let seconds = Date().timeIntervalSince(started)
        let (acknowledged, failures, syncs) = (outcomes.acknowledged, outcomes.failures, outcomes.syncs)
        XCTAssertEqual(failures, [], "every put and sync succeeds (a refusal by the hook would show here)", file: file, line: line)
        for (editor, profile) in zip(editors, profiles) { try concordOK(["sync"], as: editor, in: profile, file: file, line: line) }
        try concordOK(["sync"], as: alice, in: aliceProfile, file: file, line: line)
        let listed = Set(try concordOK(["ls", "vocabulary"], as: alice, in: aliceProfile).split(separator: "\n").map(String.init))
        if case .rounds(let rounds) = stop { XCTAssertEqual(acknowledged.count, devices * rounds, file: file, line: line) }
        XCTAssertGreaterThanOrEqual(acknowledged.count, devices, "every device wrote at least once", file: file, line: line)
        let lost = acknowledged.filter { !listed.contains("vocabulary/\($0)") }
        XCTAssertEqual(lost, [], "acknowledged and lost", file: file, line: line)
        XCTAssertEqual(try serverMain("kid", host: host), try revParse("HEAD", in: aliceProfile), file: file, line: line)
        try concordOK(["verify"], as: alice, in: aliceProfile, file: file, line: line)
        print("\(devices) devices through concord serve for \(String(format: "%.1f", seconds)) s: \(acknowledged.count) acknowledged writes, "
              + "\(syncs) successful syncs, \(lost.count) lost")
    }
}

/// What the racing devices did, filled in from their threads.
private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    var acknowledged = [String]()
    var failures = [String]()
    var syncs = 0

    func record(_ body: (Outcomes) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        body(self)
    }
}
