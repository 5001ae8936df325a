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
        return try into.merge(revision: "refs/peers/incoming", as: identity)
    }

    /// F2: a log entry received is an HLC receive event, like a record.
    func testAnAnswerWrittenAfterReadingAQuestionSortsAfterIt() throws {
        let alice = try makeIdentity()
        let ahead = ManualClock("2026-01-01T10:05:00.000Z"), behind = ManualClock("2026-01-01T10:00:00.000Z")
        let asker = try makeProfile("asker", identity: alice, clock: ahead)
        let answerer = try clone(asker, "answerer", identity: alice, clock: behind)
        let question = try asker.write(as: alice) { try $0.append("logs", data: ["q": "lunch?"]) }.value
        try pull(asker, into: answerer, as: alice)
        let answer = try answerer.write(as: alice) { try $0.append("logs", data: ["a": "yes"]) }.value
        let entries = try answerer.logEntries("logs")
        let asked = try XCTUnwrap(entries.first { $0.id == question }).at
        let answered = try XCTUnwrap(entries.first { $0.id == answer }).at
        XCTAssertLessThan(asked, answered, "the answer must sort after the question it read")
        XCTAssertEqual(entries.map(\.id), [question, answer])
    }
}
