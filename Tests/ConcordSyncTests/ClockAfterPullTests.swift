import ConcordTestSupport
import Foundation
import XCTest

/// A write after a plain `git pull` is stamped after what was pulled (issue 32): before a write takes
/// its stamp, the clock takes in the `Concord-Clock` stamps of the commits HEAD gained since it last
/// looked, not only what a `concord sync` told it, under a sync's bound on stamps far ahead (24 h).
/// The devices' clocks lie in 2099 so that these stamps, not the setup's (today's), order the writes.
final class ClockAfterPullTests: ConcordTestCase {
    /// The question (10:05) comes by a fast-forward `git pull` to a device whose clock reads 10:00
    /// and whose clock file, written by `concord clone`, names no commit: the answer sorts after it.
    func testAnAnswerAppendedAfterAPlainGitPullSortsAfterTheQuestion() throws {
        let scene = try makeTwoDevices()
        let question = try ask(scene, at: "2099-06-01T10:05:00.000Z")
        try gitPull(scene)
        let answer = try appendAnswer(scene, at: "2099-06-01T10:00:00.000Z")
        try assertAnswer(answer, sortsAfter: question, in: scene)
    }

    /// The same through a merge plain git made (no `Concord-Clock` trailer of its own), with
    /// concord's merge driver joining the two appends to the log: the question comes in through the
    /// merge's second parent, and the answer sorts after it.
    func testAnAnswerAfterAPlainGitMergeSortsAfterTheQuestion() throws {
        let scene = try makeTwoDevices()
        try concordOK(["append", "logs", "--json", #"{"note":"offline"}"#], as: scene.other, in: scene.otherProfile,
                      clock: "2099-06-01T09:00:00.000Z")
        let question = try ask(scene, at: "2099-06-01T10:05:00.000Z")
        try gitPull(scene)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "--merges", "HEAD~1..HEAD"], in: scene.otherProfile), "1", "git made a merge")
        let answer = try appendAnswer(scene, at: "2099-06-01T10:00:00.000Z")
        try assertAnswer(answer, sortsAfter: question, in: scene)
    }

    /// A stamp two days ahead, pulled with plain git, does not move the clock, as a sync would not:
    /// the next write is stamped by the device's own clock.
    func testAStampFarAheadPulledWithGitDoesNotMoveTheClock() throws {
        let scene = try makeTwoDevices()
        let question = try ask(scene, at: "2099-06-03T12:00:00.000Z")
        try gitPull(scene)
        let answer = try appendAnswer(scene, at: "2099-06-01T10:00:00.000Z")
        XCTAssertEqual(try stamp(question, in: scene).prefix(10), "2099-06-03", "the entry keeps its stamp")
        let answered = try stamp(answer, in: scene)
        XCTAssertTrue(answered.hasPrefix("2099-06-01T10:00:00.000Z"), "the stamp two days ahead moved the clock: \(answered)")
    }

    /// On a profile of many commits, the pull of one more is taken in (the answer sorts after it),
    /// and a commit looked at before is not looked at again: a stamp passed over as too far ahead
    /// (30 h) when it was pulled stays passed over once the device's clock comes within 24 h of it,
    /// as one received by a sync does.
    func testOnlyTheCommitsHeadGainedSinceTheClockLookedAreTakenIn() throws {
        let scene = try makeTwoDevices()
        for index in 0..<30 {
            try concordOK(["put", "vocabulary/word\(index)", "--json", #"{"label":"w\#(index)"}"#], as: scene.owner,
                          in: scene.ownerProfile, clock: "2099-06-01T08:00:00.000Z")
        }
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile, clock: "2099-06-01T08:00:00.000Z")
        try gitPull(scene)
        try concordOK(["append", "logs", "--json", #"{"n":0}"#], as: scene.other, in: scene.otherProfile, clock: "2099-06-01T10:00:00.000Z")

        let question = try ask(scene, at: "2099-06-01T10:05:00.000Z")
        try gitPull(scene)
        let answer = try appendAnswer(scene, at: "2099-06-01T10:00:01.000Z")
        try assertAnswer(answer, sortsAfter: question, in: scene)

        let early = try ask(scene, at: "2099-06-02T16:00:00.000Z")
        try gitPull(scene)
        let first = try concordOK(["append", "logs", "--json", #"{"n":1}"#], as: scene.other, in: scene.otherProfile,
                                  clock: "2099-06-01T10:30:00.000Z")
        let firstStamp = try stamp(first, in: scene)
        XCTAssertTrue(firstStamp.hasPrefix("2099-06-01T10:30:00.000Z"), "30 h ahead moved the clock: \(firstStamp)")
        let second = try concordOK(["append", "logs", "--json", #"{"n":2}"#], as: scene.other, in: scene.otherProfile,
                                   clock: "2099-06-01T20:00:00.000Z")
        let (passedOver, secondStamp) = (try stamp(early, in: scene), try stamp(second, in: scene))
        XCTAssertTrue(secondStamp.hasPrefix("2099-06-01T20:00:00.000Z"), "a commit looked at before was read again: \(secondStamp) follows \(passedOver)")
    }

    /// The owner appends a question at `clock` and syncs it to the remote; returns its entry id.
    private func ask(_ scene: TwoDevices, at clock: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let id = try concordOK(["append", "logs", "--json", #"{"q":"lunch?"}"#], as: scene.owner, in: scene.ownerProfile, clock: clock,
                               file: file, line: line)
        try concordOK(["sync"], as: scene.owner, in: scene.ownerProfile, clock: clock, file: file, line: line)
        return id
    }

    /// The other device takes in the remote's main with a plain `git pull` (a merge git makes where it must).
    private func gitPull(_ scene: TwoDevices, file: StaticString = #filePath, line: UInt = #line) throws {
        try gitOK(["pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main"], in: scene.otherProfile, file: file, line: line)
    }

    /// The other device appends its answer at `clock`; returns its entry id.
    private func appendAnswer(_ scene: TwoDevices, at clock: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try concordOK(["append", "logs", "--json", #"{"a":"yes"}"#], as: scene.other, in: scene.otherProfile, clock: clock,
                      file: file, line: line)
    }

    /// Fails unless log entry `answer`'s stamp sorts after `question`'s.
    private func assertAnswer(_ answer: String, sortsAfter question: String, in scene: TwoDevices,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        let (asked, answered) = (try stamp(question, in: scene, file: file, line: line), try stamp(answer, in: scene, file: file, line: line))
        XCTAssertLessThan(asked, answered, "the answer must sort after the question it read", file: file, line: line)
    }

    /// The stamp (`at`) of log entry `id` as the other device reads it.
    private func stamp(_ id: String, in scene: TwoDevices, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let text = try concordOK(["get", "logs/\(id)"], as: scene.other, in: scene.otherProfile, file: file, line: line)
        let entry = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        return try XCTUnwrap(entry?["at"] as? String, "concord get logs/\(id) printed \(text)", file: file, line: line)
    }
}
