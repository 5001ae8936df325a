import ConcordModel
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Per-field last-writer-wins through real repositories (ISSUE 12 F1): four devices write one `lww`
/// kind offline and sync through one bare remote with concord's own sync (fetch and check every
/// commit, merge with the policies, compare-and-swap push) in a random order. Every device must end
/// with the same tree and the same record bytes, and they must be the rule applied to all writes at
/// once (`ConvergenceRule`, written apart from the merge code).
///
/// 1,500 seeded cases on every core (`FCT_SETS=100` runs 2,000, as it did until CI time grew past 25 minutes). A case writes records of its own (`c<seed>-r1`, `c<seed>-r2`)
/// starting from where the previous case of its set left the devices (all at one commit), so the
/// 75 sets of 20 cases each copy the template remote and devices once; `git fsck --full` checks
/// every set's remote and devices at the end of the set.
final class FieldConvergenceTests: KitTestCase {
    static let sets = Int(ProcessInfo.processInfo.environment["FCT_SETS"] ?? "75")!
    /// Few cases per set: every sync adds a pack to each repository it writes, and libgit2 looks
    /// an object up pack by pack.
    static let casesPerSet = 20
    static let keys = ["a", "b", "c"]

    typealias Event = ConvergenceRule.Event

    struct Device {
        let profile: Profile
        let identity: Identity
    }

    func testDevicesSyncingThroughOneRemoteEndWithTheRuleAppliedToAllWrites() throws {
        // One profile with four members' devices: the template every set copies.
        let wall = ManualClock("2026-01-01T10:00:00.000Z")
        let owner = try Identity.create(member: "alice", device: "origin", in: sandbox.appendingPathComponent("home-origin"))
        let origin = try Profile.create(at: sandbox.appendingPathComponent("origin"), name: "Fields", template: .aac, identity: owner,
                                        environment: ConcordEnvironment(home: owner.home, wallClock: { wall.now }))
        fsckAtEnd(origin.root)
        var identities = [Identity]()
        for (index, member) in ["ada", "bob", "ada", "Zed"].enumerated() {
            let identity = try Identity.create(member: member, device: "d\(index)", in: sandbox.appendingPathComponent("home\(index)"))
            try origin.members.add(member, role: .editor, device: identity.device, key: identity.key.publicKey, as: owner)
            identities.append(identity)
        }
        let template = sandbox.appendingPathComponent("template")
        try FileManager.default.createDirectory(at: template, withIntermediateDirectories: true)
        try gitOK(["clone", "-q", "--bare", origin.root.path, template.appendingPathComponent("remote.git").path], in: template)
        for index in identities.indices {
            try gitOK(["clone", "-q", template.appendingPathComponent("remote.git").path, template.appendingPathComponent("device\(index)").path],
                      in: template)
        }
        // The sets in memory when /dev/shm is there: the test is of convergence, and on this
        // machine's disk the file creation and fsyncs of 20,000 syncs took twice as long.
        let memory = URL(fileURLWithPath: "/dev/shm")
        let setsRoot = FileManager.default.isWritableFile(atPath: memory.path)
            ? memory.appendingPathComponent("concord-convergence-\(UUID().uuidString)") : sandbox.appendingPathComponent("sets")
        try FileManager.default.createDirectory(at: setsRoot, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: setsRoot) }

        let failures = Slots(count: Self.sets)
        let people = identities
        DispatchQueue.concurrentPerform(iterations: 2) { thread in
            for set in stride(from: thread, to: Self.sets, by: 2) {
                do {
                    failures[set] = try Self.runSet(set, in: setsRoot, template: template, identities: people)
                } catch {
                    failures[set] = ["set \(set): \(error)"]
                }
            }
        }
        let failed = failures.all.flatMap { $0 }
        XCTAssertEqual(failed.count, 0, "\(failed.count) failures, the first:\n" + failed.prefix(10).joined(separator: "\n"))
    }

    /// The cases of one set, in its own copy of the template, then `git fsck --full` on its remote
    /// and every device; returns what went wrong (nothing: every case converged, every fsck passed).
    private static func runSet(_ set: Int, in directory: URL, template: URL, identities: [Identity]) throws -> [String] {
        let root = directory.appendingPathComponent("set\(set)")
        try FileManager.default.copyItem(at: template, to: root)
        let remote = root.appendingPathComponent("remote.git")
        let wall = ManualClock("2026-01-01T10:00:00.000Z")
        var random = SeededGenerator(state: UInt64(set + 1) &* 0x5DEECE66D)
        let devices = try identities.enumerated().map { index, identity in
            let skew = Int64.random(in: -2...2, using: &random)
            let environment = ConcordEnvironment(home: identity.home, wallClock: { wall.now + skew })
            let profile = try Profile.open(at: root.appendingPathComponent("device\(index)"), environment: environment)
            try profile.sync.removeRemote("origin")
            try profile.sync.addRemote("origin", url: remote.path)
            return Device(profile: profile, identity: identity)
        }
        var failures = [String]()
        for number in 1...casesPerSet {
            let seed = UInt64(set * casesPerSet + number)
            failures += try runCase(seed: seed, devices: devices, wall: wall)
            if failures.count > 10 { break }
        }
        for repository in [remote] + devices.map(\.profile.root) {
            let fsck = try ProcessRunner.run(gitPath, ["fsck", "--full", "--no-progress", "--no-dangling"],
                                             environment: isolatedEnvironment(home: root), in: repository)
            if fsck.status != 0 { failures.append("set \(set): git fsck --full in \(repository.lastPathComponent): \(fsck.stdout)\(fsck.stderr)") }
        }
        if failures.isEmpty { try? FileManager.default.removeItem(at: root) }
        return failures
    }

    /// One case: random writes of records of its own and syncs on random devices, then every
    /// device syncs in a random order twice around (the last of the first round has every write,
    /// the second brings it to the others). Returns what went wrong.
    private static func runCase(seed: UInt64, devices: [Device], wall: ManualClock) throws -> [String] {
        var random = SeededGenerator(state: seed &* 0x5DEECE66D)
        var failures = [String]()
        let ids = ["c\(seed)-r1", "c\(seed)-r2"]
        var events: [String: [Event]] = [:]

        func sync(_ device: Device) throws {
            let report = try device.profile.sync.run(remote: "origin", as: device.identity)
            if !report.unresolved.isEmpty { failures.append("seed \(seed): unresolved \(report.unresolved)") }
        }

        for _ in 0..<Int.random(in: 4...10, using: &random) {
            wall.advance(by: Int64.random(in: 0...2, using: &random))
            let device = devices.randomElement(using: &random)!
            guard Int.random(in: 0..<10, using: &random) < 6 else {
                try sync(device)
                continue
            }
            let id = ids.randomElement(using: &random)!
            let before = try device.profile.records.write(as: device.identity) { try $0.record("vocabulary", id) }.value
            let visible = before?.data ?? [:]
            let roll = Int.random(in: 0..<10, using: &random)
            if roll < 2 {
                guard before?.isDeleted == false else { continue }
                try device.profile.records.write(as: device.identity) { try $0.delete("vocabulary", id) }
            } else {
                var data = visible
                if roll < 5 || before?.data == nil {
                    data = [:]
                    for key in Self.keys where Bool.random(using: &random) { data[key] = .number(String(Int.random(in: 1...3, using: &random))) }
                } else {
                    let key = Self.keys.randomElement(using: &random)!
                    data[key] = Bool.random(using: &random) ? nil : .number(String(Int.random(in: 1...3, using: &random)))
                }
                guard try device.profile.records.write(as: device.identity, { try $0.put("vocabulary", id, data: data) }).commit != nil
                else { continue }
            }
            guard let after = try device.profile.records.write(as: device.identity, { try $0.record("vocabulary", id) }).value else {
                return failures + ["seed \(seed): \(id) is gone after a write"]
            }
            if after.isDeleted {
                events[id, default: []].append(.delete(after.envelope))
            } else {
                var assignments = [String: JSONValue?]()
                let data = after.data ?? [:]
                for key in Set(data.keys).union(visible.keys) where before?.data == nil || !same(data[key], visible[key]) {
                    assignments[key] = .some(data[key])
                }
                events[id, default: []].append(.write(after.envelope, assignments: assignments))
            }
        }
        let order = devices.shuffled(using: &random)
        for device in order + order.dropLast() { try sync(device) }
        let trees = try Set(devices.map { device -> String in
            guard let head = try device.profile.repository.resolveReference("HEAD") else { return "no HEAD" }
            return try device.profile.repository.commit(head).tree.hex
        })
        if trees.count != 1 { failures.append("seed \(seed): devices ended with \(trees.count) different trees") }
        for id in ids {
            let expected = ConvergenceRule.apply(events[id] ?? [], id: try RecordID(id), kind: "vocabulary")
            for device in devices {
                let file = device.profile.root.appendingPathComponent(RecordPaths.file(directory: "vocabulary", id: id))
                let bytes = FileManager.default.contents(atPath: file.path).map(Array.init)
                if bytes != expected {
                    failures.append("seed \(seed): \(id) on \(device.identity.device) is "
                        + "\(bytes.map { String(decoding: $0, as: UTF8.self) } ?? "missing"), the rule applied to all writes gives "
                        + "\(expected.map { String(decoding: $0, as: UTF8.self) } ?? "no record")")
                }
            }
        }
        return failures
    }

    private static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        a?.canonicalBytes() == b?.canonicalBytes()
    }

    /// One result per set, written from either thread.
    final class Slots: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [[String]]

        init(count: Int) { values = Array(repeating: [], count: count) }

        subscript(index: Int) -> [String] {
            get { lock.lock(); defer { lock.unlock() }; return values[index] }
            set { lock.lock(); values[index] = newValue; lock.unlock() }
        }

        var all: [[String]] { lock.lock(); defer { lock.unlock() }; return values }
    }
}
