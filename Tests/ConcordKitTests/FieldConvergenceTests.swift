import ConcordModel
import Foundation
import XCTest

@testable import ConcordKit

/// Per-field last-writer-wins through real repositories (ISSUE 12 F1): four devices write one `lww`
/// kind offline and sync through one bare remote (fetch, merge, push) in a random order. Every device
/// must end with the same record bytes, and they must be the rule applied to all writes at once. The
/// same property runs 2,000 times on the pure merge functions in ConcordModelTests
/// (`ConvergencePropertyTests`); this runs 12 cases (about 35 s on a loaded 2-core machine, most of it
/// waiting on git and the disk), with git, signing and the working tree.
final class FieldConvergenceTests: KitTestCase {
    static let cases: UInt64 = 12
    static let ids = ["r1", "r2"]
    static let keys = ["a", "b", "c"]

    typealias Event = ConvergenceRule.Event

    struct Device {
        let profile: Profile
        let identity: Identity
    }

    func testDevicesSyncingThroughOneRemoteEndWithTheRuleAppliedToAllWrites() throws {
        // One profile with four members' devices; each case starts from a fresh copy of it.
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
        for seed in 1...Self.cases {
            try runCase(seed: seed, origin: origin, identities: identities, wall: wall)
        }
    }

    private func runCase(seed: UInt64, origin: Profile, identities: [Identity], wall: ManualClock) throws {
        var random = SeededGenerator(state: seed &* 0x5DEECE66D)
        let root = sandbox.appendingPathComponent("case\(seed)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let remote = root.appendingPathComponent("remote.git")
        try gitOK(["clone", "-q", "--bare", origin.root.path, remote.path], in: root)
        fsckAtEnd(remote)
        let devices = try identities.enumerated().map { index, identity in
            let directory = root.appendingPathComponent("device\(index)")
            try gitOK(["clone", "-q", remote.path, directory.path], in: root)
            fsckAtEnd(directory)
            let skew = Int64.random(in: -2...2, using: &random)
            let environment = ConcordEnvironment(home: identity.home, wallClock: { wall.now + skew })
            return Device(profile: try Profile.open(at: directory, environment: environment), identity: identity)
        }
        var events: [String: [Event]] = [:]

        // git moves the objects, not Profile.sync: its path-remote push (ObjectTransfer) can leave the
        // remote without a tree when a merge commit's tree equals its first parent's (seen at seed 13).
        func sync(_ device: Device) throws {
            try gitOK(["fetch", "-q", "origin"], in: device.profile.root)
            let report = try device.profile.sync.merge(revision: "refs/remotes/origin/main", as: device.identity)
            XCTAssertEqual(report.unresolved, [], "seed \(seed)")
            try gitOK(["push", "-q", "origin", "HEAD:main"], in: device.profile.root)
        }

        for _ in 0..<Int.random(in: 8...14, using: &random) {
            wall.advance(by: Int64.random(in: 0...2, using: &random))
            let device = devices.randomElement(using: &random)!
            guard Int.random(in: 0..<10, using: &random) < 6 else {
                try sync(device)
                continue
            }
            let id = Self.ids.randomElement(using: &random)!
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
            let after = try XCTUnwrap(try device.profile.records.write(as: device.identity) { try $0.record("vocabulary", id) }.value)
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
        for _ in 0..<2 {
            for device in devices { try sync(device) }
        }
        let heads = try Set(devices.map { try gitOK(["rev-parse", "HEAD^{tree}"], in: $0.profile.root) })
        XCTAssertEqual(heads.count, 1, "seed \(seed): devices ended with different trees")
        for id in Self.ids {
            let expected = ConvergenceRule.apply(events[id] ?? [], id: try RecordID(id), kind: "vocabulary")
            for device in devices {
                let head = try gitOK(["rev-parse", "HEAD"], in: device.profile.root)
                let bytes = try device.profile.history.recordVersion("vocabulary/\(id)", atCommit: head)
                XCTAssertEqual(bytes.map { String(decoding: $0, as: UTF8.self) }, expected.map { String(decoding: $0, as: UTF8.self) },
                               "seed \(seed): \(id) on \(device.identity.device) is not the rule applied to all writes")
            }
        }
    }

    private func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        a?.canonicalBytes() == b?.canonicalBytes()
    }
}
