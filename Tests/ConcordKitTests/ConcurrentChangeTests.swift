import ConcordGit
import Foundation
import XCTest

@testable import ConcordKit

/// Two devices changing a profile at once, then merging: what the merge reports, what the clock
/// learns, and how member files combine (ISSUE 12 F2–F4).
final class ConcurrentChangeTests: KitTestCase {
    /// A second working copy of `profile`, for `identity` with its own clock.
    private func clone(_ profile: Profile, _ name: String, identity: Identity, clock: ManualClock) throws -> Profile {
        let directory = sandbox.appendingPathComponent(name)
        try gitOK(["clone", "-q", profile.root.path, directory.path], in: sandbox)
        return try Profile.open(at: directory, environment: makeEnvironment(identity, clock: clock))
    }

    /// Fetches `from`'s branch into `into` and merges it.
    @discardableResult
    private func pull(_ from: Profile, into: Profile, as identity: Identity) throws -> MergeReport {
        try gitOK(["fetch", "-q", from.root.path, "+main:refs/peers/incoming"], in: into.root)
        return try into.sync.merge(revision: "refs/peers/incoming", as: identity)
    }

    /// F1: the three devices. A writes f at 10:01, B writes f at 10:02, C writes g at 10:03;
    /// syncing A, then C, then B must leave B's f, the latest write of that field, on every device.
    func testTheLatestWriteOfAFieldWinsWhateverTheSyncOrder() throws {
        let alice = try makeIdentity()
        let clock = ManualClock("2026-01-01T10:00:00.000Z")
        let origin = try makeProfile("origin", identity: alice, clock: clock)
        try origin.records.write(as: alice) { try $0.put("vocabulary", "r", data: ["f": "base", "g": "base"]) }
        let a = try clone(origin, "a", identity: alice, clock: clock)
        let b = try clone(origin, "b", identity: alice, clock: clock)
        let c = try clone(origin, "c", identity: alice, clock: clock)
        clock.set(HLClock.parseInstant("2026-01-01T10:01:00.000Z")!)
        try a.records.write(as: alice) { try $0.put("vocabulary", "r", data: ["f": "A", "g": "base"]) }
        clock.set(HLClock.parseInstant("2026-01-01T10:02:00.000Z")!)
        try b.records.write(as: alice) { try $0.put("vocabulary", "r", data: ["f": "B", "g": "base"]) }
        clock.set(HLClock.parseInstant("2026-01-01T10:03:00.000Z")!)
        try c.records.write(as: alice) { try $0.put("vocabulary", "r", data: ["f": "base", "g": "C"]) }
        // One remote (origin): each device merges what is there, and the result becomes the remote.
        for device in [a, c, b] {
            try pull(origin, into: device, as: alice)
            try pull(device, into: origin, as: alice)
        }
        for device in [a, c] { try pull(origin, into: device, as: alice) }
        for profile in [origin, a, b, c] {
            XCTAssertEqual(try profile.records.get("vocabulary", "r").data, ["f": "B", "g": "C"], profile.root.lastPathComponent)
        }
    }

    /// F2: a log entry received is an HLC receive event, like a record.
    func testAnAnswerWrittenAfterReadingAQuestionSortsAfterIt() throws {
        let alice = try makeIdentity()
        let ahead = ManualClock("2026-01-01T10:05:00.000Z"), behind = ManualClock("2026-01-01T10:00:00.000Z")
        let asker = try makeProfile("asker", identity: alice, clock: ahead)
        let answerer = try clone(asker, "answerer", identity: alice, clock: behind)
        let question = try asker.records.write(as: alice) { try $0.append("logs", data: ["q": "lunch?"]) }.value
        try pull(asker, into: answerer, as: alice)
        let answer = try answerer.records.write(as: alice) { try $0.append("logs", data: ["a": "yes"]) }.value
        let entries = try answerer.records.logEntries("logs")
        let asked = try XCTUnwrap(entries.first { $0.id == question }).at
        let answered = try XCTUnwrap(entries.first { $0.id == answer }).at
        XCTAssertLessThan(asked, answered, "the answer must sort after the question it read")
        XCTAssertEqual(entries.map(\.id), [question, answer])
    }

    /// F3: a criss-cross merge whose merge bases clashed reports only conflicts between its own two sides.
    func testConflictsOfTheMergeBasesAreNotReportedAgain() throws {
        let alice = try makeIdentity()
        let clock = ManualClock("2026-01-01T10:00:00.000Z")
        let a = try makeProfile("a", identity: alice, clock: clock)
        let b = try clone(a, "b", identity: alice, clock: clock)
        clock.advance(by: 60_000)
        try a.records.write(as: alice) { try $0.put("vocabulary", "x", data: ["label": "one"]) }
        clock.advance(by: 60_000)
        try b.records.write(as: alice) { try $0.put("vocabulary", "x", data: ["label": "two"]) }
        try gitOK(["fetch", "-q", a.root.path, "+main:refs/peers/a"], in: b.root)
        try gitOK(["fetch", "-q", b.root.path, "+main:refs/peers/b"], in: a.root)
        XCTAssertEqual(try a.sync.merge(revision: "refs/peers/b", as: alice).resolved.count, 1)
        XCTAssertEqual(try b.sync.merge(revision: "refs/peers/a", as: alice).resolved.count, 1)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD^{tree}"], in: a.root), try gitOK(["rev-parse", "HEAD^{tree}"], in: b.root))
        // Now a and b hold different merge commits of the same two commits: two merge bases.
        let report = try pull(b, into: a, as: alice)
        XCTAssertEqual(report.outcome, .merged)
        XCTAssertEqual(report.resolved, [], "both sides hold the same tree: nothing clashed in this merge")
        let message = try gitOK(["log", "-1", "--format=%B"], in: a.root)
        XCTAssertFalse(message.contains("Concord-Resolved"), message)
        XCTAssertFalse(message.contains("conflicts resolved"), message)
    }

    /// F4: two devices of one member added on two replicas at once, with a role change on one of them.
    func testMemberKeysAddedAtOnceAreBothKeptWithTheRoleChange() throws {
        let admin = try makeIdentity("alice", device: "laptop")
        let clock = ManualClock("2026-01-01T10:00:00.000Z")
        let a = try makeProfile("a", identity: admin, clock: clock)
        let phone = try makeIdentity("bob", device: "phone"), tablet = try makeIdentity("bob", device: "tablet")
        let desk = try makeIdentity("bob", device: "desk")
        try a.members.add("bob", role: .user, device: desk.device, key: desk.key.publicKey, as: admin)
        let b = try clone(a, "b", identity: admin, clock: clock)
        // A plain git clone has no clock yet, and a members-only write takes its stamp from the clock.
        try b.records.write(as: admin) { try $0.append("logs", data: ["from": "b"]) }
        clock.advance(by: 1000)
        try a.members.add("bob", role: .user, device: phone.device, key: phone.key.publicKey, as: admin)
        try b.members.add("bob", role: .editor, device: tablet.device, key: tablet.key.publicKey, as: admin)
        let copy = try clone(a, "a-copy", identity: admin, clock: clock)
        try pull(b, into: a, as: admin)
        try pull(copy, into: b, as: admin)
        for profile in [a, b] {
            let bob = try XCTUnwrap(try profile.members.list().first { $0.name == "bob" })
            XCTAssertEqual(bob.keys.map(\.device), ["desk", "phone", "tablet"], "every device added is kept")
            XCTAssertEqual(bob.role, .editor, "the role change survives the key addition")
        }
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD^{tree}"], in: a.root), try gitOK(["rev-parse", "HEAD^{tree}"], in: b.root))
        for device in [phone, tablet, desk] {
            XCTAssertNoThrow(try a.records.write(as: device) { try $0.append("logs", data: ["from": .string(device.device)]) },
                             "\(device.device) may write")
        }
    }
}
