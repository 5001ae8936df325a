import ConcordTestSupport
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `kill -9` of a `concord sync` (or `put`) at any moment: the next command completes, nothing
/// acknowledged is lost, both repositories stay valid, and no lock is left that blocks the profile.
final class KillTests: ConcordTestCase {
    func testSyncKilledAtRandomMomentsOverAPathRemote() throws {
        try killSyncTrials(transport: .path, trials: 20, seed: RaceKill.seed(default: 0x4B11_0001))
    }

    func testSyncKilledAtRandomMomentsOverSSH() throws {
        let server = try startSSHServer()
        try killSyncTrials(transport: .ssh(server), trials: 5, seed: RaceKill.seed(default: 0x4B11_0002))
    }

    /// A `put` killed in flight leaves a profile that still takes writes and syncs.
    func testPutKilledInFlight() throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 1, transport: .path)
        let device = fleet.devices[0]
        var random = SeededGenerator(seed: RaceKill.seed(default: 0x4B11_0003))
        var durations = [Double]()
        for index in 0..<3 {
            durations.append(try fleet.concordOK(on: device, ["put", "vocabulary/warm-\(index)", "--json", #"{"term":"warm"}"#]).seconds)
        }
        let typical = RaceKill.quantile(durations, 0.5)
        var committed = 0
        var acknowledged = durations.count
        for trial in 1...8 {
            let id = "killed-\(trial)"
            let before = try fleet.head(device)
            let delay = Double.random(in: 0...(typical * 1.1), using: &random)
            let child = try fleet.spawn(on: device, ["put", "vocabulary/\(id)", "--json", #"{"term":"\#(id)"}"#],
                                        output: fleet.scratch.appendingPathComponent("put-\(trial).log"))
            usleep(useconds_t(delay * 1_000_000))
            child.signal(SIGKILL)
            child.wait()
            if child.exitStatus() == 0 { acknowledged += 1 }
            if try fleet.head(device) != before { committed += 1 }

            let next = try fleet.concord(on: device, ["put", "vocabulary/after-\(trial)", "--json", #"{"term":"after"}"#], timeout: 30)
            XCTAssertEqual(next.status, 0, "trial \(trial) (killed after \(RaceKill.format(delay))): the next put failed: \(next.trimmed)")
            acknowledged += 1
            XCTAssertEqual(try fleet.concord(on: device, ["sync"], timeout: 30).status, 0, "trial \(trial): sync after the killed put")
            XCTAssertNil(try fleet.fsckProblems(device.profile), "trial \(trial)")
            XCTAssertEqual(try trackedChanges(fleet, device), [], "trial \(trial): the working tree differs from the branch")
            XCTAssertEqual(Set(try fleet.listedIDs(device)), Set(try fleet.committedIDs(device)), "trial \(trial)")
        }
        XCTAssertGreaterThanOrEqual(try fleet.listedIDs(device).count, acknowledged)
        print("kill put: 8 trials, typical put \(RaceKill.format(typical)); \(committed) killed puts had already committed")
    }

    /// The window between a merge moving `main` and the working tree catching up, hit on purpose: the
    /// sync is killed the moment `.git/refs/heads/main` changes while 1500 received records are still
    /// being written out. The next sync must leave the working tree matching the branch (reads, like
    /// `concord ls` and `get`, come from the working tree).
    func testSyncKilledBetweenMovingMainAndUpdatingTheWorkingTree() throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 2, transport: .path)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        try fleet.concordOK(on: b, ["import", "--file", try writeDump(count: 1500, prefix: "bulk")])
        try fleet.concordOK(on: b, ["sync"])
        try fleet.concordOK(on: a, ["put", "vocabulary/local", "--json", #"{"term":"local"}"#])
        let before = try fleet.head(a)

        let child = try fleet.spawn(on: a, ["sync"], output: fleet.scratch.appendingPathComponent("sync.log"))
        try killWhenMainMoves(child, on: a, from: before)
        let listedAfterKill = try fleet.listedIDs(a).count

        let sync = try fleet.concord(on: a, ["sync", "--json"], timeout: 60)
        XCTAssertEqual(sync.status, 0, sync.trimmed)
        XCTAssertEqual(try fleet.bareMain(), try fleet.head(a))
        XCTAssertNil(try fleet.fsckProblems(a.profile))
        let committed = Set(try fleet.committedIDs(a))
        let listed = Set(try fleet.listedIDs(a))
        XCTAssertEqual(committed.count, 1501)
        XCTAssertEqual(listed.count, committed.count,
                       "after the kill (\(listedAfterKill) listed) and a successful sync, `concord ls` still lists \(listed.count) of the \(committed.count) records on the branch")
        let changes = try trackedChanges(fleet, a)
        XCTAssertEqual(changes.count, 0, "git status after the recovery sync: \(changes.count) tracked files differ, e.g. \(changes.prefix(3))")
        XCTAssertEqual(try fleet.concord(on: a, ["get", "vocabulary/bulk-0000"]).status, 0, "a received record cannot be read")
    }

    /// The same window in a local write: `concord import` of 1500 records killed the moment it moves
    /// `main`. The import was never acknowledged, but its commit is on the branch (and will be synced
    /// to every other device), so the next write must leave this device's working tree matching it too.
    func testImportKilledBetweenMovingMainAndUpdatingTheWorkingTree() throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 1, transport: .path)
        let device = fleet.devices[0]
        let before = try fleet.head(device)
        let child = try fleet.spawn(on: device, ["import", "--file", try writeDump(count: 1500, prefix: "bulk")],
                                    output: fleet.scratch.appendingPathComponent("import.log"))
        try killWhenMainMoves(child, on: device, from: before)

        try fleet.concordOK(on: device, ["put", "vocabulary/after", "--json", #"{"term":"after"}"#])
        XCTAssertEqual(try fleet.concord(on: device, ["sync"], timeout: 60).status, 0)
        XCTAssertNil(try fleet.fsckProblems(device.profile))
        let committed = Set(try fleet.committedIDs(device))
        let listed = Set(try fleet.listedIDs(device))
        XCTAssertEqual(committed.count, 1501)
        XCTAssertEqual(listed.count, committed.count, "`concord ls` lists \(listed.count) of the \(committed.count) records on the branch")
        let changes = try trackedChanges(fleet, device)
        XCTAssertEqual(changes.count, 0, "git status after the next put: \(changes.count) tracked files differ, e.g. \(changes.prefix(3))")
    }

    /// A bulk write creates its files while its commit is being made, after journaling their paths
    /// (`.git/concord/checkout-journal`). Killed in that window, before `main` moves, it leaves
    /// files the branch does not have: the next write must put them back as the branch has them,
    /// so the working tree matches the branch again, untracked files included. Killed a little
    /// later, the import has committed and the next write completes its files instead.
    func testImportKilledWhileItsFilesAreWrittenAheadOfItsCommit() throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 1, transport: .path)
        let device = fleet.devices[0]
        var random = SeededGenerator(seed: RaceKill.seed(default: 0x4B11_0005))
        let journal = device.profile.appendingPathComponent(".git/concord/checkout-journal").path
        var caughtBeforeCommit = 0
        for trial in 1...5 {
            let before = try fleet.head(device)
            let child = try fleet.spawn(on: device, ["import", "--file", try writeDump(count: 3000, prefix: "bulk\(trial)")],
                                        output: fleet.scratch.appendingPathComponent("import-\(trial).log"))
            while child.exitStatus() == nil && access(journal, F_OK) != 0 {}
            usleep(useconds_t(Double.random(in: 0...0.03, using: &random) * 1_000_000))
            child.signal(SIGKILL)
            child.wait()
            let committed = try fleet.head(device) != before
            if !committed { caughtBeforeCommit += 1 }

            try fleet.concordOK(on: device, ["put", "vocabulary/after-\(trial)", "--json", #"{"term":"after"}"#])
            XCTAssertFalse(FileManager.default.fileExists(atPath: journal), "trial \(trial): the journal is left")
            let status = try fleet.gitOK(["-C", device.profile.path, "status", "--porcelain", "--untracked-files=all"])
            XCTAssertEqual(status, "", "trial \(trial) (committed: \(committed)): the working tree differs from the branch")
            XCTAssertEqual(Set(try fleet.listedIDs(device)), Set(try fleet.committedIDs(device)), "trial \(trial)")
            XCTAssertNil(try fleet.fsckProblems(device.profile), "trial \(trial)")
        }
        print("kill import: 5 trials, \(caughtBeforeCommit) killed before main moved")
    }

    /// The path-remote push killed while it holds the bare repository's `refs/heads/main.lock`
    /// (libgit2 writes and fsyncs it, then renames it over the ref). The lock is left behind; a later
    /// sync, of this device or any other, must still complete (docs/sync.md: "killed at any point").
    func testPushKilledWhileHoldingTheRemoteRefLock() throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 2, transport: .path)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        let lock = fleet.bare.appendingPathComponent("refs/heads/main.lock").path
        var left = false
        for attempt in 1...10 where !left {
            try fleet.concordOK(on: a, ["put", "vocabulary/a-\(attempt)", "--json", #"{"term":"a"}"#])
            let child = try fleet.spawn(on: a, ["sync"], output: fleet.scratch.appendingPathComponent("sync-\(attempt).log"))
            while child.exitStatus() == nil {
                if access(lock, F_OK) == 0 { child.signal(SIGKILL); break }
            }
            child.wait()
            left = access(lock, F_OK) == 0
        }
        guard left else { throw XCTSkip("no kill landed while the remote's ref lock existed in 10 attempts") }
        // As if the next sync came two minutes later: a fresh lock could still belong to a live pusher.
        var times = [timespec(tv_sec: time(nil) - 120, tv_nsec: 0), timespec(tv_sec: time(nil) - 120, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, lock, &times, 0), 0)

        let retry = try fleet.concord(on: a, ["sync"], timeout: 60)
        XCTAssertEqual(retry.status, 0, "the device whose push was killed cannot sync again: \(retry.trimmed)")
        try fleet.concordOK(on: b, ["put", "vocabulary/b-1", "--json", #"{"term":"b"}"#])
        let other = try fleet.concord(on: b, ["sync"], timeout: 60)
        XCTAssertEqual(other.status, 0, "another device cannot sync either: \(other.trimmed)")
        XCTAssertNil(try fleet.fsckProblems(fleet.bare))
    }

    // MARK: - Random kills of a sync

    /// Device A's branch tip just before its sync was killed.
    private struct Prepared {
        let before: String
    }

    private func killSyncTrials(transport: RaceKill.Transport, trials: Int, seed: UInt64) throws {
        let fleet = try RaceKill.Fleet(in: self, devices: 2, transport: transport)
        let (a, b) = (fleet.devices[0], fleet.devices[1])
        var random = SeededGenerator(seed: seed)
        var acknowledged = [String]()
        var counter = 0

        /// B moves the remote on by one record; A makes 2–4 new local commits.
        func prepare() throws -> Prepared {
            counter += 1
            try fleet.concordOK(on: b, ["put", "vocabulary/b-\(counter)", "--json", #"{"term":"b"}"#])
            try fleet.concordOK(on: b, ["sync"])
            acknowledged.append("b-\(counter)")
            var local = [String]()
            for _ in 0..<Int.random(in: 2...4, using: &random) {
                counter += 1
                try fleet.concordOK(on: a, ["put", "vocabulary/a-\(counter)", "--json", #"{"term":"a"}"#])
                local.append("a-\(counter)")
            }
            acknowledged += local
            return Prepared(before: try fleet.head(a))
        }

        var durations = [Double]()
        for _ in 0..<3 {
            _ = try prepare()
            durations.append(try fleet.concordOK(on: a, ["sync"]).seconds)
        }
        let typical = RaceKill.quantile(durations, 0.5)

        var states = [String: Int]()
        var withLeftovers = 0
        var leftoverKinds = Set<String>()
        var finishedFirst = 0
        var firstFailure: Int?
        for trial in 1...trials {
            let failuresBefore = testRun?.totalFailureCount ?? 0
            defer { if firstFailure == nil, (testRun?.totalFailureCount ?? 0) > failuresBefore { firstFailure = trial } }
            if firstFailure != nil { break } // a broken profile would only repeat the first failure
            let prepared = try prepare()
            let delay = Double.random(in: 0...(typical * 1.1), using: &random)
            func leftoverFiles() -> Set<String> {
                Set(fleet.leftovers(gitDirectory: a.profile.appendingPathComponent(".git"), root: a.profile)
                    + fleet.leftovers(gitDirectory: fleet.bare))
            }
            let earlierLeftovers = leftoverFiles()
            let child = try fleet.spawn(on: a, ["sync"], output: fleet.scratch.appendingPathComponent("sync-\(trial).log"))
            usleep(useconds_t(delay * 1_000_000))
            child.signal(SIGKILL)
            child.wait()
            if child.exitStatus() == 0 { finishedFirst += 1 }

            // Where the kill landed, judged from the outside.
            let headAfterKill = try fleet.head(a)
            let mainAfterKill = try fleet.bareMain()
            let state = headAfterKill == prepared.before ? "before the merge"
                : mainAfterKill == headAfterKill ? "after the push" : "merged, not pushed"
            states[state, default: 0] += 1
            // Files the killed process left mid-write (new in this trial).
            let leftovers = leftoverFiles().subtracting(earlierLeftovers).sorted()
            if !leftovers.isEmpty {
                withLeftovers += 1
                leftoverKinds.formUnion(leftovers)
            }

            let context = "trial \(trial) (killed after \(RaceKill.format(delay)), \(state), leftovers \(leftovers))"
            let sync = try fleet.concord(on: a, ["sync"], timeout: 60)
            guard sync.status == 0 else {
                XCTFail("\(context): the next sync exited \(sync.status): \(sync.trimmed)")
                break
            }
            let head = try fleet.head(a)
            XCTAssertTrue(try fleet.isAncestor(prepared.before, of: head, in: a.profile), "\(context): A's commits were lost")
            XCTAssertEqual(try fleet.bareMain(), head, "\(context): the remote's main is not A's main")
            XCTAssertNil(try fleet.fsckProblems(a.profile), context)
            XCTAssertNil(try fleet.fsckProblems(fleet.bare), context)
            let listed = Set(try fleet.listedIDs(a))
            let missing = Set(acknowledged).subtracting(listed)
            XCTAssertTrue(missing.isEmpty, "\(context): acknowledged records missing on A: \(missing.sorted())")
            XCTAssertEqual(listed, Set(try fleet.committedIDs(a)), "\(context): `concord ls` differs from the branch")
            XCTAssertEqual(try trackedChanges(fleet, a), [], "\(context): the working tree differs from the branch")

            counter += 1
            let put = try fleet.concord(on: a, ["put", "vocabulary/a-\(counter)", "--json", #"{"term":"a"}"#], timeout: 30)
            XCTAssertEqual(put.status, 0, "\(context): put after the recovery: \(put.trimmed)")
            if put.status == 0 { acknowledged.append("a-\(counter)") }
        }
        let summary = states.keys.sorted().map { "\($0) \(states[$0]!)" }.joined(separator: ", ")
        let ran = firstFailure.map { "stopped after trial \($0) of \(trials) (it failed)" } ?? "\(trials) trials"
        print("""
            kill sync[\(fleet.label)]: \(ran), seed \(seed), delays 0…\(RaceKill.format(typical * 1.1)) \
            (typical sync \(RaceKill.format(typical))); killed: \(summary); \(finishedFirst) finished before the signal; \
            \(withLeftovers) caught mid-write, leaving files behind (\(leftoverKinds.sorted().joined(separator: ", ")))
            """)
    }

    // MARK: - Helpers

    /// Busy-polls the device's `.git/refs/heads/main` and SIGKILLs `child` the moment it no longer
    /// names `before`; skips the test if the child finished first.
    private func killWhenMainMoves(_ child: ChildProcess, on device: RaceKill.Device, from before: String) throws {
        let mainFile = device.profile.appendingPathComponent(".git/refs/heads/main").path
        var moved = false
        while child.exitStatus() == nil {
            if let text = try? String(contentsOfFile: mainFile, encoding: .utf8),
               text.trimmingCharacters(in: .whitespacesAndNewlines) != before {
                child.signal(SIGKILL)
                moved = true
                break
            }
        }
        child.wait()
        guard moved, child.exitStatus() != 0 else {
            throw XCTSkip("the child finished before it could be killed in the window (exit \(child.exitStatus() ?? -1))")
        }
    }

    /// `git status` lines for tracked files only (a killed write may leave an untracked temp file).
    private func trackedChanges(_ fleet: RaceKill.Fleet, _ device: RaceKill.Device) throws -> [String] {
        try fleet.gitOK(["-C", device.profile.path, "status", "--porcelain", "--untracked-files=no"])
            .split(separator: "\n").map(String.init)
    }

    /// A dump of `count` vocabulary records `<prefix>-0000`… for `concord import`; returns its path.
    private func writeDump(count: Int, prefix: String) throws -> String {
        let records = (0..<count).map { index -> [String: Any] in
            let id = "\(prefix)-" + String(format: "%04d", index)
            return ["kind": "vocabulary", "id": id, "data": ["term": id]]
        }
        let url = sandbox.appendingPathComponent("\(prefix).json")
        try JSONSerialization.data(withJSONObject: ["records": records]).write(to: url)
        return url.path
    }
}
