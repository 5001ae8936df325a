import ConcordGit
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Two devices changing a profile at once, then merging: what the merge reports, what the clock
/// learns, and how member files combine (ISSUE 12 F2–F4).
final class ConcurrentChangeTests: KitTestCase {
    /// F1: the three devices. A writes f at 10:01, B writes f at 10:02, C writes g at 10:03;
    /// syncing A, then C, then B must leave B's f, the latest write of that field, on every device.
    func testTheLatestWriteOfAFieldWinsWhateverTheSyncOrder() throws {
        let alice = try makeIdentity()
        let clock = ManualClock("2026-01-01T10:00:00.000Z")
        let origin = try makeProfile("origin", identity: alice, clock: clock)
        fsckAtEnd(origin.root)
        try origin.records.write(as: alice) { try $0.put("vocabulary", "r", data: ["f": "base", "g": "base"]) }
        let a = try copy(of: origin, "a", as: alice, clock: clock)
        let b = try copy(of: origin, "b", as: alice, clock: clock)
        let c = try copy(of: origin, "c", as: alice, clock: clock)
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
        fsckAtEnd(asker.root)
        let answerer = try copy(of: asker, "answerer", as: alice, clock: behind)
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
        fsckAtEnd(a.root)
        let b = try copy(of: a, "b", as: alice, clock: clock)
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
        fsckAtEnd(a.root)
        let phone = try makeIdentity("bob", device: "phone"), tablet = try makeIdentity("bob", device: "tablet")
        let desk = try makeIdentity("bob", device: "desk")
        try a.members.add("bob", role: .user, device: desk.device, key: desk.key.publicKey, as: admin)
        let b = try copy(of: a, "b", as: admin, clock: clock)
        // A plain git clone has no clock yet, and a members-only write takes its stamp from the clock.
        try b.records.write(as: admin) { try $0.append("logs", data: ["from": "b"]) }
        clock.advance(by: 1000)
        try a.members.add("bob", role: .user, device: phone.device, key: phone.key.publicKey, as: admin)
        try b.members.add("bob", role: .editor, device: tablet.device, key: tablet.key.publicKey, as: admin)
        let copy = try self.copy(of: a, "a-copy", as: admin, clock: clock)
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

/// A merge with one merge base decides the files both sides changed together, on every core,
/// after libgit2's pass (`MergePlanner.queueing`); deciding each when libgit2 asks must give the
/// same tree, the same unresolved files with the same reasons, and the same resolved conflicts.
final class QueuedMergeTests: KitTestCase {
    func testFilesDecidedTogetherAfterLibgit2MergeAsWhenEachIsAsked() throws {
        let alice = try makeIdentity()
        let clock = ManualClock("2026-01-01T10:00:00.000Z")
        let a = try makeProfile("a", identity: alice, clock: clock)
        try a.records.write(as: alice) { records in
            for n in 0..<40 { try records.put("vocabulary", "w\(n)", data: ["label": .string("word \(n)"), "note": "base"]) }
        }
        let directory = sandbox.appendingPathComponent("b")
        try gitOK(["clone", "-q", a.root.path, directory.path], in: sandbox)
        let b = try Profile.open(at: directory, environment: makeEnvironment(alice, clock: clock))
        fsckAtEnd(a.root, b.root)
        clock.advance(by: 60_000)
        try a.records.write(as: alice) { records in
            for n in 0..<30 { try records.put("vocabulary", "w\(n)", data: ["label": .string("a \(n)"), "note": "base"]) }
        }
        clock.advance(by: 60_000)
        try b.records.write(as: alice) { records in
            for n in 10..<40 { try records.put("vocabulary", "w\(n)", data: ["label": .string("b \(n)"), "note": .string("b \(n)")]) }
        }
        // On b, by plain git: one record made unreadable (its policy cannot merge it) and a file
        // no policy covers changed on both sides (git's text merge, conflicted).
        let bad = RecordPaths.file(directory: "vocabulary", id: "w12")
        try Data("not json\n".utf8).write(to: b.root.appendingPathComponent(bad))
        try Data("b's notes\n".utf8).write(to: b.root.appendingPathComponent("notes.txt"))
        try gitOK(["add", "-A"], in: b.root)
        try gitOK(["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--no-gpg-sign", "-m", "by hand"], in: b.root)
        try Data("a's notes\n".utf8).write(to: a.root.appendingPathComponent("notes.txt"))
        try gitOK(["add", "-A"], in: a.root)
        try gitOK(["-c", "user.name=a", "-c", "user.email=a@a", "commit", "-q", "--no-gpg-sign", "-m", "by hand"], in: a.root)
        try gitOK(["fetch", "-q", b.root.path, "+main:refs/peers/b"], in: a.root)

        let ours = try a.repository.resolveRevision("HEAD"), theirs = try a.repository.resolveRevision("refs/peers/b")
        XCTAssertEqual(try a.repository.mergeBases(ours, theirs).count, 1)
        let queued = try PolicyMerge.compute(in: a.repository, ours: ours, theirs: theirs, caches: EngineCaches())
        let asked = try PolicyMerge.compute(in: a.repository, ours: ours, theirs: theirs, caches: EngineCaches(), queueing: false)
        XCTAssertTrue(queued.planner.queueing)
        XCTAssertEqual(queued.tree, asked.tree)
        XCTAssertEqual(queued.unresolved, asked.unresolved)
        XCTAssertEqual(Set(queued.unresolved.map(\.path)), [bad, "notes.txt"])
        XCTAssertNotEqual(queued.unresolved.first { $0.path == bad }?.reason, "both sides changed it and no Concord policy covers it",
                          "the policy's own reason")
        let (ourTree, theirTree) = (try a.repository.commit(ours).tree, try a.repository.commit(theirs).tree)
        func sides(_ paths: [String]) throws -> [(ours: ObjectID?, theirs: ObjectID?)] {
            zip(try a.repository.entries(at: paths, inTree: ourTree), try a.repository.entries(at: paths, inTree: theirTree)).map { ($0?.id, $1?.id) }
        }
        let resolvedQueued = try queued.planner.conflicts(between: sides), resolvedAsked = try asked.planner.conflicts(between: sides)
        XCTAssertEqual(resolvedQueued, resolvedAsked)
        XCTAssertEqual(resolvedQueued.count, 19, "w10..<w30 clashed, but w12 was unreadable")
    }
}
