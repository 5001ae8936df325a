import XCTest

@testable import ConcordModel

/// Per-field last-writer-wins converges (ISSUE 12 F1): replicas writing one `lww` kind offline and
/// syncing through one remote in a random order all end with the same bytes, and those bytes are the
/// rule applied to the set of all writes at once (``ConvergenceRule``), whatever the order.
///
/// Each case derives everything from `baseSeed + case number` (``SplitMix64``); a failure prints the
/// seed, and `runCase(seed:)` replays it.
final class ConvergencePropertyTests: XCTestCase {
    static let baseSeed: UInt64 = 0xF1E1_D5_2026
    static let cases = 2_000

    func testReplicasSyncingThroughOneRemoteEndWithTheRuleAppliedToAllWrites() {
        var failures = 0
        var coverage = ConvergenceSimulation.Coverage()
        for n in 0..<UInt64(Self.cases) where failures < 5 {
            let seed = Self.baseSeed &+ n &* 104_729
            for problem in runCase(seed: seed, coverage: &coverage) {
                failures += 1
                XCTFail("seed \(seed): \(problem)")
            }
        }
        print("convergence: \(Self.cases) cases, \(coverage)")
        // A weakened generator must not pass silently.
        XCTAssertGreaterThan(coverage.realMerges, Self.cases * 3, "\(coverage)")
        XCTAssertGreaterThan(coverage.olderWriteWouldHaveWon, Self.cases / 20, "\(coverage)")
        XCTAssertGreaterThan(coverage.revived, Self.cases / 20, "\(coverage)")
        XCTAssertGreaterThan(coverage.deletedAtEnd, Self.cases / 20, "\(coverage)")
        XCTAssertGreaterThan(coverage.equalWallTimes, Self.cases / 4, "\(coverage)")
    }

    /// The problems with one case.
    func runCase(seed: UInt64, coverage: inout ConvergenceSimulation.Coverage) -> [String] {
        var simulation = ConvergenceSimulation(seed: seed)
        simulation.run(coverage: &coverage)
        return simulation.problems()
    }

    /// The issue's own story, as docs/merging.md tells it: ada wrote the label "biscuit" and the color
    /// "tan" at 09:00; A (ada) renames it "cookie" at 10:01, B (bob) "cracker" at 10:02, C (cy) changes
    /// the color at 10:03. Syncing A, C, B used to leave "cookie": C's whole-record stamp beat B's.
    func testThreeDevicesTheLatestFieldWriteWins() throws {
        func stamp(_ time: String, _ member: String, _ device: String) -> WriteStamp {
            WriteStamp(at: MergeFixture.hlc(time), member: member, device: device)
        }
        let id = try RecordID("biscuit")
        func write(_ data: [String: JSONValue], over base: Record?, _ stamp: WriteStamp) -> Record {
            Record.written(data, over: base, id: id, kind: "vocabulary", by: stamp)
        }
        let base = write(["label": "biscuit", "color": "tan"], over: nil, stamp("09:00:00.000", "ada", "tablet"))
        let a = write(["label": "cookie", "color": "tan"], over: base, stamp("10:01:00.000", "ada", "tablet"))
        let b = write(["label": "cracker", "color": "tan"], over: base, stamp("10:02:00.000", "bob", "phone"))
        let c = write(["label": "biscuit", "color": "brown"], over: base, stamp("10:03:00.000", "cy", "laptop"))
        func merge(_ base: Record, _ ours: Record, _ theirs: Record) throws -> (Record, [ResolvedConflict]) {
            guard case .merged(let bytes, let conflicts) = RecordMerge.merge(
                policy: .lww, base: base.encoded(), ours: ours.encoded(), theirs: theirs.encoded())
            else { throw MergeFixture.Unexpected.unresolved }
            return (try Record.decode(bytes), conflicts)
        }
        // Remote: A pushes; C merges A and pushes; B merges that.
        let (afterC, quiet) = try merge(base, c, a)
        XCTAssertEqual(quiet, [])
        let (afterB, conflicts) = try merge(base, b, afterC)
        XCTAssertEqual(afterB.data, ["label": "cracker", "color": "brown"])
        XCTAssertEqual(afterB.stamp(ofField: "label"), stamp("10:02:00.000", "bob", "phone"))
        XCTAssertEqual(afterB.stamp(ofField: "color"), stamp("10:03:00.000", "cy", "laptop"))
        XCTAssertEqual(
            conflicts.map(\.trailerValue),
            ["vocabulary/biscuit lww winner=bob@phone loser=cy@laptop winner-change=edit loser-change=edit "
                + "winner-at=2026-01-01T10:02:00.000Z-0000 loser-at=2026-01-01T10:03:00.000Z-0000"])
        // Any other order gives the same bytes.
        XCTAssertEqual(try merge(base, a, try merge(base, b, c).0).0.encoded(), afterB.encoded())
        XCTAssertEqual(try merge(base, c, try merge(base, a, b).0).0.encoded(), afterB.encoded())
        XCTAssertEqual(
            text(a.encoded()),
            """
            {
              "data": {
                "color": "tan",
                "label": "cookie"
              },
              "device": "tablet",
              "fields": {
                "color": {
                  "at": "2026-01-01T09:00:00.000Z-0000",
                  "by": "ada",
                  "device": "tablet"
                }
              },
              "id": "biscuit",
              "kind": "vocabulary",
              "updatedAt": "2026-01-01T10:01:00.000Z-0000",
              "updatedBy": "ada"
            }

            """)
        XCTAssertEqual(
            text(afterB.encoded()),
            """
            {
              "data": {
                "color": "brown",
                "label": "cracker"
              },
              "device": "laptop",
              "fields": {
                "label": {
                  "at": "2026-01-01T10:02:00.000Z-0000",
                  "by": "bob",
                  "device": "phone"
                }
              },
              "id": "biscuit",
              "kind": "vocabulary",
              "updatedAt": "2026-01-01T10:03:00.000Z-0000",
              "updatedBy": "cy"
            }

            """)
    }
}

/// One random case: 4–6 replicas of two `lww` records, random puts, field edits and deletes, and
/// random syncs through one remote (each sync merges the remote into the replica three ways, with the
/// replica's last synced version as the base, and the result becomes the remote).
struct ConvergenceSimulation {
    struct Coverage: CustomStringConvertible {
        var realMerges = 0
        /// Syncs where the whole-record stamp of a side would have won a field the per-field rule gave
        /// to the other side (the bug of ISSUE 12 F1).
        var olderWriteWouldHaveWon = 0
        var revived = 0
        var deletedAtEnd = 0
        var equalWallTimes = 0

        var description: String {
            "\(realMerges) real merges, \(olderWriteWouldHaveWon) where the record stamp would have picked an older field, "
                + "\(revived) revivals, \(deletedAtEnd) records deleted at the end, \(equalWallTimes) cases with equal wall times"
        }
    }

    struct Replica {
        let member: String
        let device: String
        let skew: Int64
        var clock: HLC?
        var local: [String: [UInt8]] = [:]
        var synced: [String: [UInt8]] = [:]
    }

    static let ids = ["r1", "r2"]
    static let keys = ["a", "b", "c", "d"]
    static let kind = "cards"

    var random: SplitMix64
    var replicas: [Replica]
    var remote: [String: [UInt8]] = [:]
    var events: [String: [ConvergenceRule.Event]] = [:]
    var wall: Int64 = 1_767_261_600_000  // 2026-01-01T10:00:00Z
    var merged: [String] = []
    var failures: [String] = []

    init(seed: UInt64) {
        random = SplitMix64(seed: seed)
        let count = Int.random(in: 4...6, using: &random)
        replicas = (0..<count).map { index in
            Replica(member: ["ada", "bob", "Zed"][index % 3], device: "d\(index)", skew: 0, clock: nil)
        }
        for index in replicas.indices {
            replicas[index] = Replica(member: replicas[index].member, device: replicas[index].device,
                                      skew: Int64.random(in: -2...2, using: &random), clock: nil)
        }
    }

    mutating func run(coverage: inout Coverage) {
        var walls = Set<Int64>()
        var equalWalls = false
        for _ in 0..<Int.random(in: 10...30, using: &random) {
            wall += Int64.random(in: 0...2, using: &random)
            let index = Int.random(in: 0..<replicas.count, using: &random)
            if Int.random(in: 0..<10, using: &random) < 6 {
                if !walls.insert(wall + replicas[index].skew).inserted { equalWalls = true }
                write(on: index)
            } else {
                sync(index, coverage: &coverage)
            }
        }
        // Everyone syncs twice, in turn: the second round brings the last pushes to all.
        for _ in 0..<2 {
            for index in replicas.indices { sync(index, coverage: &coverage) }
        }
        if equalWalls { coverage.equalWallTimes += 1 }
        for id in Self.ids where remote[id].flatMap({ try? Record.decode($0) })?.isDeleted == true { coverage.deletedAtEnd += 1 }
    }

    /// One random put, field edit or delete on replica `index`.
    mutating func write(on index: Int) {
        let id = Self.ids.randomElement(using: &random)!
        let recordID = try! RecordID(id)
        let existing = replicas[index].local[id].map { try! Record.decode($0) }
        let roll = Int.random(in: 0..<10, using: &random)
        var replica = replicas[index]
        func nextStamp() -> WriteStamp {
            let last = [replica.clock, existing?.stamp].compactMap { $0 }.max()
            let at = HLClock.fixed(wall + replica.skew).next(after: last)
            replica.clock = at
            return WriteStamp(at: at, member: replica.member, device: replica.device)
        }
        if roll < 2 {
            guard let existing, !existing.isDeleted else { return }
            let stamp = nextStamp()
            let tombstone = Record(id: recordID, kind: Self.kind, device: stamp.device, member: stamp.member, stamp: stamp.at, state: .deleted)
            replica.local[id] = tombstone.encoded()
            events[id, default: []].append(.delete(stamp))
        } else {
            let visible = existing?.data ?? [:]
            var data = visible
            if roll < 5 || existing?.data == nil {
                // A put of a whole new version.
                data = [:]
                for key in Self.keys where Bool.random(using: &random) { data[key] = value() }
            } else {
                // A field edit: set or remove one field.
                let key = Self.keys.randomElement(using: &random)!
                data[key] = Int.random(in: 0..<4, using: &random) == 0 ? nil : value()
            }
            if existing?.isDeleted == false, MergeSupport.same(.object(data), .object(visible)) { return }
            let stamp = nextStamp()
            var assignments = [String: JSONValue?]()
            for key in Set(data.keys).union(visible.keys) where existing?.isDeleted != false || !MergeSupport.same(data[key], visible[key]) {
                assignments[key] = .some(data[key])
            }
            replica.local[id] = Record.written(data, over: existing, id: recordID, kind: Self.kind, by: stamp).encoded()
            events[id, default: []].append(.write(stamp, assignments: assignments))
        }
        replicas[index] = replica
    }

    /// A small random value, so different writes often write the same one.
    mutating func value() -> JSONValue { .number(String(Int.random(in: 1...3, using: &random))) }

    /// Replica `index` merges the remote into its copy; the result becomes the remote.
    mutating func sync(_ index: Int, coverage: inout Coverage) {
        var replica = replicas[index]
        for id in Self.ids {
            let ours = replica.local[id], theirs = remote[id]
            let result: [UInt8]?
            switch (ours, theirs) {
            case (nil, nil): result = nil
            case (let one?, nil), (nil, let one?): result = one
            case (let ours?, let theirs?):
                guard case .merged(let bytes, _) = RecordMerge.merge(policy: .lww, base: replica.synced[id], ours: ours, theirs: theirs) else {
                    failures.append("\(id): unresolved merge of\n\(text(ours))\nand\n\(text(theirs))")
                    return
                }
                if ours != theirs && replica.synced[id] != ours && replica.synced[id] != theirs {
                    coverage.realMerges += 1
                    if Self.recordStampWouldPickOlderField(base: replica.synced[id], ours, theirs, merged: bytes) {
                        coverage.olderWriteWouldHaveWon += 1
                    }
                    if let o = try? Record.decode(ours), let t = try? Record.decode(theirs), o.isDeleted != t.isDeleted,
                       (try? Record.decode(bytes))?.isDeleted == false {
                        coverage.revived += 1
                    }
                }
                result = bytes
            }
            replica.local[id] = result
            replica.synced[id] = result
            remote[id] = result
            // Receiving is an HLC event: the replica's next stamp sorts after what it received.
            if let stamp = result.flatMap({ try? Record.decode($0) })?.stamp {
                replica.clock = [replica.clock, stamp].compactMap { $0 }.max()
            }
        }
        replicas[index] = replica
    }

    /// Whether the old rule (every collided field from the side with the later record stamp) would have
    /// given some field a different value than the per-field rule did.
    static func recordStampWouldPickOlderField(base: [UInt8]?, _ ours: [UInt8], _ theirs: [UInt8], merged: [UInt8]) -> Bool {
        guard let o = try? Record.decode(ours), let t = try? Record.decode(theirs), let m = try? Record.decode(merged),
              let od = o.data, let td = t.data, let md = m.data else { return false }
        let b = base.flatMap { try? Record.decode($0) }?.data ?? [:]
        let later = o.envelope < t.envelope ? td : od
        for key in Set(od.keys).union(td.keys) {
            let collided = !MergeSupport.same(od[key], td[key]) && !MergeSupport.same(od[key], b[key]) && !MergeSupport.same(td[key], b[key])
            if collided && !MergeSupport.same(later[key], md[key]) { return true }
        }
        return false
    }

    /// What is wrong at the end: replicas that differ from the remote, or a remote that is not the rule.
    func problems() -> [String] {
        var out = failures
        for id in Self.ids {
            let expected = ConvergenceRule.apply(events[id] ?? [], id: try! RecordID(id), kind: Self.kind)
            for replica in replicas where replica.local[id] != remote[id] {
                out.append("\(id): \(replica.device) ended with\n\(replica.local[id].map(text) ?? "nothing")\nbut the remote has\n\(remote[id].map(text) ?? "nothing")")
            }
            if remote[id] != expected {
                out.append("\(id): replicas ended with\n\(remote[id].map(text) ?? "nothing")\nbut the rule gives\n\(expected.map(text) ?? "nothing")")
            }
        }
        return out
    }
}
