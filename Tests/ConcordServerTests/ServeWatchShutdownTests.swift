import ConcordTestSupport
import Foundation
import XCTest

/// A watch that learns through `concord serve` that its member was revoked stops its threads —
/// the live-update wait (`LiveUpdates`) is cut and joined — before it deletes its copy and exits:
/// exit 4 and "access removed", never a crash. Issue 31 saw one watch in about 20 die with SIGSEGV
/// (exit 139) after "access removed": its process exited while that thread was still inside libssh2.
final class ServeWatchShutdownTests: ConcordServeTestCase {
    /// Members are revoked 100 times in a row on one server, each time while a `concord watch` of a
    /// fresh copy runs (polling every 300 s, so the server's live update is what tells it); each
    /// watch exits 4 with "access removed" and leaves no copy. Two profiles on the server run side by
    /// side (the time is in the server's round trips, not in the cores); in each, two members take
    /// turns: in one push the Admin revokes the one whose watch runs and adds the other back, who
    /// clones again and starts the next watch while the revoked one's watch ends.
    func testAHundredRevokedWatchesEachExitFourWithoutACrash() throws {
        let admin = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: admin)
        var lanes = [Lane]()
        for (index, (first, second)) in [("bob", "carol"), ("dave", "erin")].enumerated() {
            let members = [try makeDevice(first, device: "phone"), try makeDevice(second, device: "tablet")]
            for member in members { try trust(host, by: member) }
            let name = "kid\(index + 1)"
            let profile = try publish(name, on: host, members: [(members[0], "editor")])
            lanes.append(Lane(name: name, admin: admin, adminProfile: profile, members: members, rounds: Self.rounds / 2))
        }
        let began = Date()
        let results = ResultBox(count: lanes.count)
        // Each lane runs only processes and reads files; the test case is shared read-only.
        let shared = Unchecked(value: (test: self, lanes: lanes, host: host))
        DispatchQueue.concurrentPerform(iterations: lanes.count) { index in
            results.set(index, shared.value.test.run(shared.value.lanes[index], host: shared.value.host))
        }
        let outcomes = results.values.compactMap { $0 }
        for failure in outcomes.flatMap(\.failures) { XCTFail(failure) }
        let exits = outcomes.reduce(into: [Int32: Int]()) { total, lane in total.merge(lane.exits, uniquingKeysWith: +) }
        XCTAssertEqual(exits, [4: Self.rounds / 2 * lanes.count], "every watch exits 4")
        let steps = outcomes.reduce(into: [String: TimeInterval]()) { total, lane in total.merge(lane.steps, uniquingKeysWith: +) }
        let times = steps.sorted { $0.key < $1.key }.map { "\($0.key) \(String(format: "%.1f", $0.value)) s" }.joined(separator: ", ")
        print("\(Self.rounds) revoked watches through concord serve: exits \(exits), \(String(format: "%.1f", Date().timeIntervalSince(began))) s "
              + "(summed over the lanes: \(times))")
    }

    /// How many revocations in all (half in each profile); CONCORD_TEST_ROUNDS sets fewer for a quick look.
    static let rounds = Int(ProcessInfo.processInfo.environment["CONCORD_TEST_ROUNDS"] ?? "") ?? 100

    /// One profile on the server and the two members who take turns being revoked in it.
    private struct Lane {
        let name: String
        let admin: TestDevice
        let adminProfile: URL
        let members: [TestDevice]
        let rounds: Int
    }

    /// What one lane saw: every failure as a line (reported on the test's thread), the watches' exit codes, time per step.
    private struct LaneOutcome {
        var failures = [String]()
        var exits = [Int32: Int]()
        var steps = [String: TimeInterval]()
    }

    /// The lanes' outcomes, each written once by its own thread.
    private final class ResultBox: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [LaneOutcome?]
        init(count: Int) { stored = Array(repeating: nil, count: count) }
        func set(_ index: Int, _ outcome: LaneOutcome) { lock.withLock { stored[index] = outcome } }
        var values: [LaneOutcome?] { lock.withLock { stored } }
    }

    /// Runs `lane`'s rounds; stops at its first failure. No XCTest assertion here: this runs off the test's thread.
    private func run(_ lane: Lane, host: ConcordServeHost) -> LaneOutcome {
        var outcome = LaneOutcome()
        func timed<T>(_ step: String, _ body: () throws -> T) rethrows -> T {
            let start = Date()
            defer { outcome.steps[step, default: 0] += Date().timeIntervalSince(start) }
            return try body()
        }
        func ok(_ arguments: [String], as device: TestDevice, in directory: URL? = nil) throws {
            let result = try concord(arguments, as: device, in: directory)
            if result.status != 0 { throw LaneFailure("concord \(arguments.joined(separator: " ")): \(result.summary)") }
        }
        var watcher: (process: ChildProcess, log: URL)?
        defer { if let process = watcher?.process, process.exitStatus() == nil { _ = process.stop(grace: 5) } }
        do {
            var (watched, next) = (lane.members[0], lane.members[1])
            var copy = sandbox.appendingPathComponent("\(lane.name)-\(watched.member)-1")
            try timed("clones") { try ok(["clone", host.url(lane.name), copy.path, "--trust-host", host.sshd.hostKeyFingerprint], as: watched) }
            watcher = try timed("watch starts") { try startWatch(watched, copy: copy, log: "\(lane.name)-watch-1.log") }
            for round in 1...lane.rounds {
                let last = round == lane.rounds
                try timed("admin revokes and syncs") {
                    try ok(["revoke", watched.member], as: lane.admin, in: lane.adminProfile)
                    if !last {
                        try ok(["members", "add", next.member, "--role", "editor", "--key", next.publicKeyLine, "--device", next.device],
                               as: lane.admin, in: lane.adminProfile)
                    }
                    try ok(["sync"], as: lane.admin, in: lane.adminProfile)
                }
                // The next member clones while the revoked one's watch ends.
                let nextCopy = sandbox.appendingPathComponent("\(lane.name)-\(next.member)-\(round + 1)")
                if !last {
                    try timed("clones") { try ok(["clone", host.url(lane.name), nextCopy.path, "--trust-host", host.sshd.hostKeyFingerprint], as: next) }
                }
                guard let current = watcher else { break }
                let ended = timed("watch ends") { waitUntil(30) { current.process.exitStatus() != nil } }
                let output = (try? String(contentsOf: current.log, encoding: .utf8)) ?? ""
                guard ended else { throw LaneFailure("\(lane.name) round \(round): watch still running 30 s after the revocation: \(output)") }
                let status = current.process.exitStatus() ?? -1
                outcome.exits[status, default: 0] += 1
                guard status == 4, output.contains("access removed: alice revoked your access"), !FileManager.default.fileExists(atPath: copy.path) else {
                    throw LaneFailure("\(lane.name) round \(round): exit \(status) (4 expected\(status > 128 ? "; killed by signal \(status - 128)" : "")), "
                                      + "copy \(FileManager.default.fileExists(atPath: copy.path) ? "kept" : "deleted"): \(output)")
                }
                watcher = nil
                guard !last else { break }
                (watched, next, copy) = (next, watched, nextCopy)
                watcher = try timed("watch starts") { try startWatch(watched, copy: copy, log: "\(lane.name)-watch-\(round + 1).log") }
            }
        } catch {
            outcome.failures.append("\(error)")
        }
        return outcome
    }

    private struct Unchecked<Value>: @unchecked Sendable {
        let value: Value
    }

    private struct LaneFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// `device`'s `concord watch` of `copy`, once it said it started (its output in `<sandbox>/<log>`).
    private func startWatch(_ device: TestDevice, copy: URL, log name: String) throws -> (process: ChildProcess, log: URL) {
        let log = sandbox.appendingPathComponent(name)
        let process = try ChildProcess(path: try ConcordBinary.required(), arguments: ["watch", "-C", copy.path, "--interval", "300", "--json"],
                                       environment: concordEnvironment(device), output: log)
        guard waitUntil(30, { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains(#""event":"started""#) }) else {
            _ = process.stop(grace: 5)
            throw LaneFailure("\(name): the watch did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        return (process, log)
    }
}
