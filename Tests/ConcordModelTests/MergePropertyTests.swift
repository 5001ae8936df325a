import XCTest

@testable import ConcordModel

/// Seeded property tests of the merge policies: every case derives its inputs from `seed + case number`
/// through ``SplitMix64`` (see TestSupport.swift), and a failure prints that seed so
/// `check(policy:seed:coverage:)` or `checkAppend(seed:coverage:)` can replay the one case.
final class MergePropertyTests: XCTestCase {
    static let baseSeed: UInt64 = 0xC0FFEE_2026
    static let casesPerPolicy = 2_000

    func testLWWProperties() { run(.lww) }
    func testDeleteWinsProperties() { run(.deleteWins) }
    func testAppendProperties() { run(.append) }
    func testDocumentProperties() { run(nil) }

    /// How many cases exercised the interesting paths, so a weakened generator cannot pass silently.
    struct Coverage: CustomStringConvertible {
        /// Cases where no byte-level shortcut applied.
        var realMerges = 0
        /// Real merges that reported a conflict (records) or had a same-id clash (logs).
        var collisions = 0
        /// Real merges whose sides had equal stamps.
        var equalStamps = 0
        /// Real merges with a tombstone on at least one side.
        var tombstones = 0

        var description: String {
            "\(realMerges) real merges, \(collisions) collisions, \(equalStamps) equal stamps, \(tombstones) with tombstones"
        }
    }

    /// Runs `casesPerPolicy` cases; `policy` nil means `mergeDocument`.
    func run(_ policy: MergePolicy?) {
        var failures = 0
        var coverage = Coverage()
        for n in 0..<UInt64(Self.casesPerPolicy) where failures < 5 {
            let seed = Self.baseSeed &+ n &* 7919
            let problems =
                policy == .append
                ? checkAppend(seed: seed, coverage: &coverage) : check(policy: policy, seed: seed, coverage: &coverage)
            for problem in problems {
                failures += 1
                XCTFail("\(policy?.rawValue ?? "document") seed \(seed): \(problem)")
            }
        }
        print("\(policy?.rawValue ?? "document"): \(Self.casesPerPolicy) cases, \(coverage)")
        let quarter = Self.casesPerPolicy / 4
        XCTAssertGreaterThan(coverage.realMerges, 2 * quarter, "\(coverage)")
        XCTAssertGreaterThan(coverage.collisions, quarter / 4, "\(coverage)")
        if policy != nil {
            XCTAssertGreaterThan(coverage.equalStamps, quarter / 4, "\(coverage)")
        }
        if policy != nil && policy != .append {
            XCTAssertGreaterThan(coverage.tombstones, quarter / 2, "\(coverage)")
        }
    }

    // MARK: Records and documents

    /// The problems found with one random case of `policy` (nil: `mergeDocument`).
    func check(policy: MergePolicy?, seed: UInt64, coverage: inout Coverage) -> [String] {
        var rng = SplitMix64(seed: seed)
        let inputs = RandomRecords.triple(using: &rng, documents: policy == nil)
        func merge(_ b: [UInt8]?, _ x: [UInt8], _ y: [UInt8]) -> FileMergeOutcome {
            policy.map { RecordMerge.merge(policy: $0, base: b, ours: x, theirs: y) } ?? RecordMerge.mergeDocument(base: b, ours: x, theirs: y)
        }
        var problems: [String] = []
        let forward = merge(inputs.base, inputs.ours, inputs.theirs)
        let backward = merge(inputs.base, inputs.theirs, inputs.ours)
        guard case .merged(let bytes, let conflicts) = forward, case .merged(let bytes2, let conflicts2) = backward else {
            return ["unresolved: \(forward) / \(backward)"]
        }
        if bytes != bytes2 { problems.append("not commutative:\n\(text(bytes))\nvs\n\(text(bytes2))") }
        if conflicts.count != conflicts2.count || !conflicts.allSatisfy(conflicts2.contains) {
            func show(_ list: [ResolvedConflict]) -> String {
                list.map { "\($0.trailerValue)\n\(text($0.losingContent))" }.joined(separator: "\n")
            }
            problems.append("conflicts differ:\n\(show(conflicts))\nvs\n\(show(conflicts2))")
        }
        if conflicts.count > 1 { problems.append("\(conflicts.count) conflicts for one record") }
        let trivial = inputs.ours == inputs.theirs || inputs.base == inputs.ours || inputs.base == inputs.theirs
        if !trivial {
            coverage.realMerges += 1
            if policy == nil, bytes != inputs.ours, bytes != inputs.theirs { coverage.collisions += 1 }
            if !conflicts.isEmpty { coverage.collisions += 1 }
        }
        for x in [inputs.ours, inputs.theirs] where merge(inputs.base, x, x) != .merged(bytes: x, conflicts: []) {
            problems.append("not idempotent")
        }
        if merge(bytes, bytes, inputs.theirs) != .merged(bytes: inputs.theirs, conflicts: []) {
            problems.append("merging with an unchanged side did not take the other")
        }
        guard let policy else { return problems }
        // The result is a valid record, and follows the policy.
        guard let merged = try? Record.decode(bytes), let o = try? Record.decode(inputs.ours),
            let t = try? Record.decode(inputs.theirs)
        else { return problems + ["merged record does not decode"] }
        if !trivial {
            if o.stamp == t.stamp { coverage.equalStamps += 1 }
            if o.isDeleted || t.isDeleted { coverage.tombstones += 1 }
            if merged.encoded() != bytes { problems.append("output is not canonical") }
            if policy == .deleteWins, (o.isDeleted || t.isDeleted) != merged.isDeleted {
                problems.append("delete-wins lost a delete")
            }
            if !merged.isDeleted || policy == .lww, merged.stamp != max(o.stamp, t.stamp) {
                problems.append("stamp \(merged.stamp) is not the latest")
            }
            for conflict in conflicts {
                guard let loser = try? Record.decode(conflict.losingContent), MergeSide(loser) == conflict.loser,
                    [o, t].contains(loser), conflict.kind == o.kind, conflict.id == o.id.rawValue,
                    ResolvedConflict(trailerValue: conflict.trailerValue)?.trailerValue == conflict.trailerValue
                else {
                    problems.append("bad conflict \(conflict)")
                    continue
                }
            }
        }
        return problems
    }

    // MARK: Logs

    func checkAppend(seed: UInt64, coverage: inout Coverage) -> [String] {
        var rng = SplitMix64(seed: seed)
        let pool = RandomRecords.entries(using: &rng)
        // Sorted lines, or (1 in 8) shuffled with no final newline; an id may repeat within a side.
        func side() -> [UInt8] {
            let picked = pool.filter { _ in Bool.random(using: &rng) }
            if Int.random(in: 0..<8, using: &rng) == 0 {
                return Array(picked.shuffled(using: &rng).map { $0.encodedLine() }.joined(separator: [0x0A]))
            }
            return picked.sorted().flatMap { $0.encodedLine() + [0x0A] }
        }
        let base = Int.random(in: 0..<3, using: &rng) == 0 ? nil : side()
        let ours = side()
        let theirs = Int.random(in: 0..<10, using: &rng) == 0 ? ours : side()
        var problems: [String] = []
        let forward = RecordMerge.merge(policy: .append, base: base, ours: ours, theirs: theirs)
        guard case .merged(let bytes, let conflicts) = forward else { return ["unresolved: \(forward)"] }
        let backward = RecordMerge.merge(policy: .append, base: base, ours: theirs, theirs: ours)
        if !conflicts.isEmpty { problems.append("append reported conflicts") }
        if RecordMerge.merge(policy: .append, base: base, ours: ours, theirs: ours) != .merged(bytes: ours, conflicts: []) {
            problems.append("not idempotent")
        }
        guard let output = try? LogEntry.parseLogFile(bytes), let o = try? LogEntry.parseLogFile(ours),
            let t = try? LogEntry.parseLogFile(theirs)
        else { return problems + ["output does not parse"] }
        if ours == theirs || base == ours || base == theirs { return problems }  // byte-level cases, as git
        let inputs = o + t
        coverage.realMerges += 1
        // An entry is identified by its author and id: one output entry per (by, id) of the inputs, ours where both have it.
        let ids = Set(o.map(\.identity)).intersection(t.map(\.identity))
        let clash = ids.contains(where: { id in Set(inputs.filter { $0.identity == id }.map { $0.encodedLine() }).count > 1 })
        if clash { coverage.collisions += 1 }
        if ids.contains(where: { id in Set(inputs.filter { $0.identity == id }.map(\.at)).count == 1 }) { coverage.equalStamps += 1 }
        // Commutative unless the sides hold different entries of one identity: then ours (the main line's) is kept.
        if !clash, forward != backward { problems.append("not commutative") }
        for id in Set(inputs.map(\.identity)) {
            let kept = output.filter { $0.identity == id }
            let from = o.contains { $0.identity == id } ? o : t
            if kept.count != 1 || !from.contains(kept[0]) { problems.append("entry \(id.by)/\(id.id) lost, duplicated, changed or not ours") }
        }
        if output.count != Set(inputs.map(\.identity)).count { problems.append("entries appeared from nowhere") }
        if output != output.sorted() || zip(output, output.dropFirst()).contains(where: { !($0 < $1) }) {
            problems.append("output is not sorted by (at, id)")
        }
        if bytes != output.flatMap({ $0.encodedLine() + [0x0A] }) { problems.append("output is not canonical") }
        return problems
    }
}

/// Random inputs over small alphabets, so that equal stamps, names and values are common.
enum RandomRecords {
    static let keys = ["a", "b", "c", "é"]
    static let values: [JSONValue] = ["x", "y", 1, 2, true, .null, ["n": 1], ["n": 2], [1, 2], "cafe\u{301}", "caf\u{E9}"]
    static let members = ["ada", "bob", "Zed"]
    static let devices = ["phone", "tablet"]

    static func data(using rng: inout SplitMix64) -> [String: JSONValue] {
        var data: [String: JSONValue] = [:]
        for key in keys where Int.random(in: 0..<3, using: &rng) > 0 {
            data[key] = values.randomElement(using: &rng)
        }
        return data
    }

    static func stamp(using rng: inout SplitMix64) -> HLC {
        HLC(wallMillis: 1_767_261_600_000 + Int64.random(in: 0..<3, using: &rng), counter: Int.random(in: 0..<2, using: &rng))
    }

    static func record(using rng: inout SplitMix64, id: RecordID) -> Record {
        let deleted = Int.random(in: 0..<4, using: &rng) == 0
        return Record(
            id: id, kind: "k", device: devices.randomElement(using: &rng) ?? "phone",
            member: members.randomElement(using: &rng) ?? "ada", stamp: stamp(using: &rng),
            state: deleted ? .deleted : .live(data: data(using: &rng)))
    }

    /// A side derived from `base`: unchanged, a few fields changed, a new envelope, or entirely new.
    static func side(from base: Record, using rng: inout SplitMix64, id: RecordID) -> Record {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return base
        case 1, 2:
            var record = record(using: &rng, id: id)
            if case .live(var data) = base.state, !record.isDeleted {
                let key = keys.randomElement(using: &rng) ?? "a"
                data[key] = Bool.random(using: &rng) ? values.randomElement(using: &rng) : nil
                record.state = .live(data: data)
            }
            return record
        default: return record(using: &rng, id: id)
        }
    }

    /// Base (sometimes absent or unparseable), ours and theirs, as bytes: records, or plain objects for
    /// documents. Occasionally a side is re-encoded compactly so trivial byte checks do not always apply.
    static func triple(using rng: inout SplitMix64, documents: Bool) -> (base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) {
        guard let id = try? RecordID("r") else { preconditionFailure("test id") }
        let base = record(using: &rng, id: id)
        let ours = side(from: base, using: &rng, id: id)
        let theirs = Int.random(in: 0..<10, using: &rng) == 0 ? ours : side(from: base, using: &rng, id: id)
        func encode(_ record: Record) -> [UInt8] {
            let value = documents ? JSONValue.object(record.data ?? ["deleted": true]) : record.jsonValue
            return Int.random(in: 0..<8, using: &rng) == 0 ? value.canonicalLine() : value.canonicalBytes()
        }
        let baseBytes: [UInt8]?
        switch Int.random(in: 0..<8, using: &rng) {
        case 0: baseBytes = nil
        case 1: baseBytes = Array("not json".utf8)
        default: baseBytes = encode(base)
        }
        return (baseBytes, encode(ours), encode(theirs))
    }

    /// A pool of log entries with few ids and stamps, some sharing an id with different content.
    static func entries(using rng: inout SplitMix64) -> [LogEntry] {
        (0..<6).compactMap { _ in
            guard let id = try? RecordID("e\(Int.random(in: 0..<5, using: &rng))") else { return nil }
            return LogEntry(
                id: id, at: stamp(using: &rng), by: members.randomElement(using: &rng) ?? "ada",
                device: devices.randomElement(using: &rng) ?? "phone", data: data(using: &rng))
        }
    }
}
