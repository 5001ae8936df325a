import ConcordGit
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The clock's bound on received stamps (`LocalClock.maxClockLead`): a stamp too far ahead does not
/// move it, and does not stop the other stamps received with it from moving it (ISSUE 12 C, F2).
final class ClockLeadTests: KitTestCase {
    /// The asker's question (10:05) and a record from a device whose clock is two days ahead come
    /// in one merge to a device at 10:00: the answer written next must sort after the question.
    func testAStampTooFarAheadDoesNotStopTheOthersMovingTheClock() throws {
        let alice = try makeIdentity()
        let asker = try makeProfile("asker", identity: alice, clock: ManualClock("2026-01-01T10:05:00.000Z"))
        let future = try clone(asker, "future", identity: alice, clock: ManualClock("2026-01-03T12:00:00.000Z"))
        let answerer = try clone(asker, "answerer", identity: alice, clock: ManualClock("2026-01-01T10:00:00.000Z"))
        let question = try asker.records.write(as: alice) { try $0.append("logs", data: ["q": "lunch?"]) }.value
        try future.records.write(as: alice) { try $0.put("vocabulary", "future", data: ["label": "f"]) }
        try pull(future, into: asker, as: alice)
        try pull(asker, into: answerer, as: alice)
        XCTAssertEqual(try answerer.records.get("vocabulary", "future").stamp.description.prefix(10), "2026-01-03")
        let answer = try answerer.records.write(as: alice) { try $0.append("logs", data: ["a": "yes"]) }.value
        let entries = try answerer.records.logEntries("logs")
        let asked = try XCTUnwrap(entries.first { $0.id == question }).at
        let answered = try XCTUnwrap(entries.first { $0.id == answer }).at
        XCTAssertLessThan(asked, answered, "the answer must sort after the question it read")
        XCTAssertLessThan(answered.description, "2026-01-02", "the record two days ahead moved the clock: \(answered)")
        for profile in [asker, future, answerer] { try gitOK(["fsck", "--full"], in: profile.root) }
    }

    /// A device whose clock runs 5 hours fast moves the stamps of the devices it syncs with (causality),
    /// never their commit dates: each commit is dated by its own device's wall clock (issue 32).
    func testACommitIsDatedByItsOwnDevicesWallClock() throws {
        let alice = try makeIdentity()
        let fast = try makeProfile("fast", identity: alice, clock: ManualClock("2026-01-01T15:00:00.000Z"))
        let clock = ManualClock("2026-01-01T10:00:00.000Z")
        let slow = try clone(fast, "slow", identity: alice, clock: clock)
        try fast.records.write(as: alice) { try $0.put("vocabulary", "ahead", data: ["label": "from 15:00"]) }
        try pull(fast, into: slow, as: alice)
        clock.advance(by: 1000)
        try slow.records.write(as: alice) { try $0.put("vocabulary", "mine", data: ["label": "at 10:00"]) }
        let mine = try slow.records.get("vocabulary", "mine")
        XCTAssertGreaterThan(mine.stamp.description, "2026-01-01T15", "the stamp follows the newest one received: \(mine.stamp)")
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%at"], in: slow.root), String(HLClock.parseInstant("2026-01-01T10:00:01.000Z")! / 1000),
                       "the commit date is the device's wall clock")
    }

    /// A membership commit made after a sync is stamped by the clock rule every write follows — after
    /// the newest stamp received and no earlier than the wall clock — not with the stamp received
    /// (issue 32: a departure at 10:05 was logged at 10:00, with `revokedAt` 10:05).
    func testAMembershipCommitAfterASyncIsStampedNow() throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "phone")
        let origin = try makeProfile("origin", identity: alice, clock: ManualClock("2026-01-01T10:00:00.000Z"))
        try origin.members.add("bob", role: .editor, device: bob.device, key: bob.key.publicKey, as: alice)
        let later = try clone(origin, "later", identity: alice, clock: ManualClock("2026-01-01T10:05:00.000Z"))
        try origin.records.write(as: alice) { try $0.put("vocabulary", "seen", data: ["label": "at 10:00"]) }
        try pull(origin, into: later, as: alice)
        try later.members.revoke("bob", as: alice)
        let stamp = try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Clock,valueonly)"], in: later.root)
        XCTAssertTrue(stamp.hasPrefix("2026-01-01T10:05:00"), "the revocation's stamp: \(stamp)")
    }

    private func clone(_ profile: Profile, _ name: String, identity: Identity, clock: ManualClock) throws -> Profile {
        let directory = sandbox.appendingPathComponent(name)
        try gitOK(["clone", "-q", profile.root.path, directory.path], in: sandbox)
        return try Profile.open(at: directory, environment: makeEnvironment(identity, clock: clock))
    }

    /// `log` lists newest first by the signers' clocks: a merge made at 10:02 on a device whose
    /// clock is behind comes below the 10:03 edit it merged (in history order it came first).
    func testTheLogIsOrderedByTheSignersClocks() throws {
        let alice = try makeIdentity()
        let behind = ManualClock("2026-01-01T10:00:00.000Z")
        let slow = try makeProfile("slow", identity: alice, clock: behind)
        let fast = try clone(slow, "fast", identity: alice, clock: ManualClock("2026-01-01T10:03:00.000Z"))
        try slow.records.write(as: alice) { try $0.put("vocabulary", "early", data: ["label": "10:00"]) }
        try fast.records.write(as: alice) { try $0.put("vocabulary", "late", data: ["label": "10:03"]) }
        behind.advance(by: 120_000)
        try pull(fast, into: slow, as: alice)
        let entries = try slow.history.entries(limit: 3)
        XCTAssertEqual(entries.map(\.time), ["2026-01-01T10:03:00.000Z", "2026-01-01T10:02:00.000Z", "2026-01-01T10:00:00.000Z"],
                       entries.map { "\($0.time) \($0.summary)" }.joined(separator: "\n"))
        XCTAssertEqual(entries[1].parents.count, 2, "the merge, second")
        // Plain git in history order puts the merge first.
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%p"], in: slow.root).split(separator: " ").count, 2)
    }
}
