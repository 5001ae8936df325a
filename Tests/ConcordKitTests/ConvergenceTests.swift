import ConcordKit
import Foundation
import XCTest

/// Replicas of one profile doing random puts, deletes and appends offline and merging each other
/// in random orders must end with byte-identical trees, with every log entry kept.
final class ConvergenceTests: XCTestCase {
    /// A small, seedable generator so a failing seed can be replayed.
    final class Replica {
        let directory: URL
        let profile: Profile
        let identity: Identity
        init(directory: URL, profile: Profile, identity: Identity) {
            self.directory = directory
            self.profile = profile
            self.identity = identity
        }
    }

    private var sandbox: URL!

    override func setUpWithError() throws {
        sandbox = FileManager.default.temporaryDirectory.appendingPathComponent("concord-convergence-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: sandbox, withIntermediateDirectories: true)
        addTeardownBlock { [sandbox] in try? FileManager.default.removeItem(at: sandbox!) }
    }

    @discardableResult
    private func git(_ arguments: [String], in directory: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": sandbox.path, "GIT_CONFIG_NOSYSTEM": "1"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "git", code: Int(process.terminationStatus),
                          userInfo: [NSLocalizedDescriptionKey: "git \(arguments.joined(separator: " ")) failed"])
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A profile and `count` replicas cloned from it, each with its own device key and clock.
    private func makeReplicas(_ count: Int, seed: UInt64, clock: @escaping @Sendable () -> Int64) throws -> [Replica] {
        let root = sandbox.appendingPathComponent("seed\(seed)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let home = root.appendingPathComponent("home-origin")
        let owner = try Identity.create(member: "alice", device: "origin", in: home)
        let origin = root.appendingPathComponent("origin")
        let originProfile = try Profile.create(at: origin, name: "Converge", template: .screenplay, identity: owner,
                                               environment: ConcordEnvironment(home: home, wallClock: clock))
        let identities = try (0..<count).map { index in
            try Identity.create(member: "alice", device: "device\(index)", in: root.appendingPathComponent("home\(index)"))
        }
        for identity in identities {
            try originProfile.members.add("alice", role: .admin, device: identity.device, key: identity.key.publicKey,
                                          proof: KeyProof.sign(profileID: originProfile.info.id, member: "alice", with: identity.key), as: owner)
        }
        // The origin (every replica's first remote) and each replica must pass git fsck when the test ends.
        fsckAtEnd(origin)
        return try identities.enumerated().map { index, identity in
            let directory = root.appendingPathComponent("replica\(index)")
            try git(["clone", "-q", origin.path, directory.path], in: root)
            fsckAtEnd(directory)
            let replicaHome = identity.home
            let profile = try Profile.open(at: directory, environment: ConcordEnvironment(home: replicaHome, wallClock: clock))
            return Replica(directory: directory, profile: profile, identity: identity)
        }
    }

    private func randomOperation(on replica: Replica, using random: inout SplitMix64, appended: inout Set<String>) throws {
        let ids = ["a", "b", "c", "d"]
        let keys = ["x", "y", "z"]
        let roll = Int.random(in: 0..<10, using: &random)
        let kind = Bool.random(using: &random) ? "scenes" : "characters"
        let id = ids.randomElement(using: &random)!
        if roll < 6 {
            var data = [String: JSONValue]()
            for key in keys where Int.random(in: 0..<3, using: &random) > 0 {
                data[key] = .number(String(Int.random(in: 1...3, using: &random)))
            }
            try replica.profile.records.write(as: replica.identity) { try $0.put(kind, id, data: data) }
        } else if roll < 8 {
            try replica.profile.records.write(as: replica.identity) { transaction in
                if let record = try transaction.record(kind, id), !record.isDeleted { try transaction.delete(kind, id) }
            }
        } else {
            let result = try replica.profile.records.write(as: replica.identity) {
                try $0.append("comments", data: ["n": .number(String(Int.random(in: 0..<1000, using: &random)))])
            }
            appended.insert(result.value.rawValue)
        }
    }

    /// Replica `into` fetches `from`'s branch and merges it with the policies.
    private func merge(_ from: Replica, into: Replica) throws {
        try git(["fetch", "-q", from.directory.path, "+main:refs/peers/incoming"], in: into.directory)
        let report = try into.profile.sync.merge(revision: "refs/peers/incoming", as: into.identity)
        XCTAssertTrue(report.unresolved.isEmpty, "unresolved files: \(report.unresolved)")
    }

    private func tree(_ replica: Replica) throws -> String { try git(["rev-parse", "HEAD^{tree}"], in: replica.directory) }
    private func head(_ replica: Replica) throws -> String { try git(["rev-parse", "HEAD"], in: replica.directory) }

    func testRandomReplicasConverge() throws {
        for seed in UInt64(1)...6 {
            try runConvergence(seed: seed)
        }
    }

    private func runConvergence(seed: UInt64) throws {
        var random = SplitMix64(state: seed)
        let clockBase: Int64 = 1_767_261_600_000 // 2026-01-01T10:00:00Z
        final class Ticker: @unchecked Sendable {
            let lock = NSLock()
            var now: Int64
            init(_ now: Int64) { self.now = now }
            func read() -> Int64 { lock.lock(); defer { lock.unlock() }; return now }
            func advance(_ by: Int64) { lock.lock(); now += by; lock.unlock() }
        }
        let ticker = Ticker(clockBase)
        let count = Int.random(in: 3...5, using: &random)
        let replicas = try makeReplicas(count, seed: seed, clock: { ticker.read() })
        var appended = Set<String>()
        for _ in 0..<4 {
            for replica in replicas {
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    // Ties in wall time happen on purpose: the counter and member/device break them.
                    ticker.advance(Int64.random(in: 0...2, using: &random))
                    try randomOperation(on: replica, using: &random, appended: &appended)
                }
            }
            for _ in 0..<count {
                let from = replicas.randomElement(using: &random)!
                let into = replicas.randomElement(using: &random)!
                if from !== into { try merge(from, into: into) }
            }
        }
        // Merging in either direction gives the same tree.
        let (a, b) = (replicas[0], replicas[1])
        let copyA = sandbox.appendingPathComponent("copyA-\(seed)")
        try FileManager.default.copyItem(at: a.directory, to: copyA)
        fsckAtEnd(copyA)
        let copyAReplica = Replica(directory: copyA, profile: try Profile.open(at: copyA, environment: ConcordEnvironment(home: sandbox, wallClock: { ticker.read() })), identity: a.identity)
        try merge(b, into: copyAReplica)
        try merge(a, into: b)
        XCTAssertEqual(try tree(copyAReplica), try tree(b), "seed \(seed): merge is not commutative at repository level")
        // Gossip until every replica has the same head.
        for _ in 0..<10 {
            for into in replicas.shuffled(using: &random) {
                for from in replicas.shuffled(using: &random) where from !== into { try merge(from, into: into) }
            }
            if try Set(replicas.map(head)).count == 1 { break }
        }
        let trees = try Set(replicas.map(tree))
        XCTAssertEqual(trees.count, 1, "seed \(seed): replicas ended with different trees")
        for replica in replicas {
            let present = Set(try replica.profile.records.logEntries("comments").map(\.id.rawValue))
            XCTAssertTrue(appended.isSubset(of: present), "seed \(seed): log entries lost on \(replica.directory.lastPathComponent)")
            XCTAssertEqual(try git(["status", "--porcelain"], in: replica.directory), "", "seed \(seed): working tree out of sync")
        }
    }
}
