import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Four devices writing and syncing at the same time against one bare remote: nothing acknowledged
/// is lost, the remote's `main` only ever moves forward, and everyone converges.
final class RaceTests: ConcordTestCase {
    func testFourDevicesRaceOverAPathRemote() throws {
        try race(transport: .path, seconds: 30, seed: RaceKill.seed(default: 0x5EED_0001))
    }

    func testFourDevicesRaceOverSSH() throws {
        let server = try startSSHServer()
        try race(transport: .ssh(server), seconds: 20, seed: RaceKill.seed(default: 0x5EED_0002))
    }

    /// What the racing devices did, filled in from their threads.
    private final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var acknowledged = [String]()
        private(set) var failedPuts = [String]()
        private(set) var syncs = 0
        private(set) var pushes = 0
        private(set) var keptMoving = 0
        private(set) var syncFailures = [String]()
        private(set) var attempts = [Int: Int]()
        private(set) var syncSeconds = [Double]()

        func record(_ body: (Tally) -> Void) {
            lock.lock()
            defer { lock.unlock() }
            body(self)
        }

        func acknowledge(_ id: String) { record { $0.acknowledged.append(id) } }
        func failPut(_ message: String) { record { $0.failedPuts.append(message) } }

        func sync(_ outcome: RaceKill.Outcome, device: String) {
            record { tally in
                if outcome.status == 0, let report = RaceKill.jsonObject(outcome) {
                    tally.syncs += 1
                    tally.syncSeconds.append(outcome.seconds)
                    if (report["sent"] as? Int ?? 0) > 0 { tally.pushes += 1 }
                    tally.attempts[report["attempts"] as? Int ?? 0, default: 0] += 1
                } else if outcome.status == 1, outcome.output.contains("kept changing") {
                    // Documented: after 10 lost races the sync gives up, nothing lost; the next one retries.
                    tally.keptMoving += 1
                } else {
                    tally.syncFailures.append("\(device): exit \(outcome.status): \(outcome.trimmed)")
                }
            }
        }
    }

    private func race(transport: RaceKill.Transport, seconds: TimeInterval, seed: UInt64) throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 4, transport: transport)
        let reflogBefore = try fleet.bareReflog().count
        let tally = Tally()
        let group = DispatchGroup()
        let started = Date()
        let deadline = started.addingTimeInterval(seconds)
        for (index, device) in fleet.devices.enumerated() {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                var random = SeededGenerator(seed: seed &+ UInt64(index))
                var next = 0
                while Date() < deadline {
                    next += 1
                    let id = "\(device.name)-\(next)"
                    do {
                        let put = try fleet.concord(on: device, ["put", "vocabulary/\(id)", "--json", #"{"term":"\#(id)"}"#])
                        if put.status == 0 { tally.acknowledge(id) } else { tally.failPut("\(id): exit \(put.status): \(put.trimmed)") }
                        usleep(useconds_t.random(in: 0...40_000, using: &random))
                        tally.sync(try fleet.concord(on: device, ["sync", "--json"]), device: device.name)
                        usleep(useconds_t.random(in: 0...40_000, using: &random))
                    } catch {
                        tally.failPut("\(id): \(error)")
                    }
                }
            }
            thread.start()
        }
        group.wait()
        let raced = Date().timeIntervalSince(started)

        XCTAssertEqual(tally.failedPuts, [], "a put is local and must always succeed")
        XCTAssertEqual(tally.syncFailures, [], "syncs failed for a reason other than losing 10 races in a row")
        XCTAssertGreaterThan(tally.acknowledged.count, 8, "the race wrote almost nothing")

        // A final quiet round: first everyone sends what is left, then everyone receives the result.
        var quietPushes = 0
        for _ in 0..<2 {
            for device in fleet.devices {
                let sync = try fleet.concord(on: device, ["sync", "--json"])
                XCTAssertEqual(sync.status, 0, "quiet sync on \(device.name): \(sync.trimmed)")
                if (RaceKill.jsonObject(sync)?["sent"] as? Int ?? 0) > 0 { quietPushes += 1 }
            }
        }

        // Every acknowledged write is on every device, and nothing else is.
        let expected = Set(tally.acknowledged)
        let main = try fleet.bareMain()
        for device in fleet.devices {
            let listed = try fleet.listedIDs(device)
            XCTAssertEqual(listed.count, tally.acknowledged.count, "\(device.name) lists a different number of records")
            let missing = expected.subtracting(listed)
            XCTAssertTrue(missing.isEmpty, "\(device.name) lacks acknowledged records: \(missing.sorted().prefix(20))")
            XCTAssertEqual(try fleet.head(device), main, "\(device.name) did not converge on the remote's main")
            XCTAssertEqual(try fleet.workingTreeChanges(device), [], "\(device.name)'s working tree differs from its branch")
            XCTAssertNil(try fleet.fsckProblems(device.profile), "git fsck on \(device.name)")
        }
        let trees = try fleet.devices.map { try fleet.gitOK(["-C", $0.profile.path, "rev-parse", "HEAD^{tree}"]) }
        XCTAssertEqual(Set(trees).count, 1, "the devices' trees differ")
        XCTAssertEqual(trees.first, try fleet.gitOK(["--git-dir", fleet.bare.path, "rev-parse", "refs/heads/main^{tree}"]))
        XCTAssertNil(try fleet.fsckProblems(fleet.bare), "git fsck on the bare remote")

        // No force push, ever: the reflog of the remote's main is one unbroken chain of fast-forwards,
        // one entry per push the devices reported.
        let reflog = try fleet.bareReflog()
        let zero = String(repeating: "0", count: 40)
        var forced = [String]()
        for (index, entry) in reflog.enumerated() {
            if index > 0, entry.old != reflog[index - 1].new {
                forced.append("entry \(index): starts at \(entry.old.prefix(8)), the previous one ended at \(reflog[index - 1].new.prefix(8))")
            }
            if entry.old != zero, !(try fleet.isAncestor(entry.old, of: entry.new, in: fleet.bare)) {
                forced.append("entry \(index): \(entry.old.prefix(8)) → \(entry.new.prefix(8)) is not a fast-forward")
            }
        }
        XCTAssertEqual(forced, [], "the remote's main did not only move forward")
        XCTAssertEqual(reflog.last?.new, main)
        if tally.syncFailures.isEmpty {
            XCTAssertEqual(reflog.count - reflogBefore, tally.pushes + quietPushes,
                           "the remote's main moved a different number of times than the devices reported pushing")
        }
        let distinct = Set(reflog.map(\.new)).count

        let attempts = tally.attempts.keys.sorted().map { "\($0)×\(tally.attempts[$0]!)" }.joined(separator: " ")
        print("""
            race[\(fleet.label)]: \(fleet.devices.count) devices for \(RaceKill.format(raced)), seed \(seed): \
            \(tally.acknowledged.count) acknowledged puts, \(tally.syncs) syncs (\(tally.pushes) pushed; attempts \(attempts)), \
            \(tally.keptMoving) gave up after 10 lost races; sync p50 \(RaceKill.format(RaceKill.quantile(tally.syncSeconds, 0.5))), \
            max \(RaceKill.format(tally.syncSeconds.max() ?? 0)); remote main moved \(reflog.count - reflogBefore) times \
            (\(distinct) distinct values), all fast-forwards
            """)
    }
}
