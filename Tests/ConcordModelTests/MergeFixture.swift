import XCTest

@testable import ConcordModel

/// Builders and assertions shared by the merge tests.
enum MergeFixture {
    enum Unexpected: Error { case unresolved }

    /// `2026-01-01T<time>Z-<counter>`.
    static func hlc(_ time: String, counter: Int = 0) -> HLC {
        guard let ms = HLClock.parseInstant("2026-01-01T\(time)Z") else { preconditionFailure("bad test time \(time)") }
        return HLC(wallMillis: ms, counter: counter)
    }

    /// A live record holding `data`; with `base`, as the write of `data` over it (`Record.written`), so
    /// only the fields that differ take this stamp.
    static func live(
        _ data: [String: JSONValue], by member: String, on device: String, at time: String, counter: Int = 0,
        kind: String = "vocabulary", id: String = "biscuit", over base: [UInt8]? = nil
    ) -> [UInt8] {
        guard let base else { return record(.live(data: data), by: member, on: device, at: time, counter: counter, kind: kind, id: id) }
        guard let existing = try? Record.decode(base) else { preconditionFailure("bad test base") }
        return Record.written(data, over: existing, id: existing.id, kind: existing.kind,
                              by: WriteStamp(at: hlc(time, counter: counter), member: member, device: device)).encoded()
    }

    static func tombstone(
        by member: String, on device: String, at time: String, counter: Int = 0, kind: String = "vocabulary",
        id: String = "biscuit"
    ) -> [UInt8] {
        record(.deleted, by: member, on: device, at: time, counter: counter, kind: kind, id: id)
    }

    static func record(
        _ state: Record.State, by member: String, on device: String, at time: String, counter: Int, kind: String, id: String
    ) -> [UInt8] {
        guard let id = try? RecordID(id) else { preconditionFailure("bad test id \(id)") }
        return Record(id: id, kind: kind, device: device, member: member, stamp: hlc(time, counter: counter), state: state)
            .encoded()
    }

    /// Merges in both directions, asserts both give the same bytes and conflicts, and returns them.
    static func mergeBothWays(
        _ policy: MergePolicy, base: [UInt8]?, ours: [UInt8], theirs: [UInt8], file: StaticString = #filePath,
        line: UInt = #line
    ) throws -> (bytes: [UInt8], conflicts: [ResolvedConflict]) {
        let forward = RecordMerge.merge(policy: policy, base: base, ours: ours, theirs: theirs)
        let backward = RecordMerge.merge(policy: policy, base: base, ours: theirs, theirs: ours)
        XCTAssertEqual(forward, backward, "merge is not symmetric", file: file, line: line)
        guard case .merged(let bytes, let conflicts) = forward else {
            XCTFail("expected a merge, got \(forward)", file: file, line: line)
            throw Unexpected.unresolved
        }
        return (bytes, conflicts)
    }
}
