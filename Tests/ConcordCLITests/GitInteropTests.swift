import ConcordTestSupport
import Foundation
import XCTest

/// The real git CLI judges what concord writes: objects, signatures, trailers, index, dates.
final class GitInteropTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    /// A profile after a varied session; `git status` is checked clean after every write.
    private func sessionProfile(_ alice: TestDevice) throws -> URL {
        let profile = try makeProfile(owner: alice)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile), "", "clean after init")
        let dump = try writeFile("dump.json", #"{"records":[{"kind":"vocabulary","id":"imported","data":{"w":1}}],"logs":[{"kind":"logs","data":{"e":1}}]}"#)
        let steps: [[String]] = [
            ["put", "vocabulary/puzzle", "--json", #"{"word":"puzzle"}"#],
            ["put", "vocabulary/puzzle", "--json", #"{"word":"puzzles"}"#],
            ["append", "logs", "--json", #"{"tapped":"puzzle"}"#],
            ["rm", "vocabulary/puzzle"],
            ["import", "--file", dump.path],
        ]
        for step in steps {
            try concordOK(step, as: alice, in: profile)
            XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "",
                           "git status must be clean after concord \(step[0])")
        }
        return profile
    }

    func testGitFsckAndVerifyCommitAcceptEverything() throws {
        let alice = try makeDevice("alice")
        let profile = try sessionProfile(alice)

        let fsck = try git(["fsck", "--full", "--strict"], in: profile)
        XCTAssertEqual(fsck.status, 0, fsck.summary)
        XCTAssertFalse(fsck.stderr.contains("error"), fsck.stderr)

        let all = try commits(profile)
        XCTAssertEqual(all.count, 6)
        for commit in all {
            let verify = try git(["verify-commit", "-v", commit], in: profile)
            XCTAssertEqual(verify.status, 0, "git verify-commit \(commit): \(verify.summary)")
            XCTAssertTrue(verify.stderr.contains(#"Good "git" signature for alice"#), verify.stderr)
        }
        let shown = try gitOK(["log", "--show-signature"], in: profile)
        XCTAssertEqual(shown.components(separatedBy: #"Good "git" signature for alice"#).count - 1, all.count, shown)
        XCTAssertEqual(try gitOK(["log", "--format=%G?"], in: profile).split(separator: "\n"), Array(repeating: "G", count: all.count))

        // Trailers: git parses them, in order, newest first.
        let actions = try gitOK(["log", "--format=%(trailers:key=Concord-Action,valueonly)"], in: profile)
            .split(separator: "\n").map(String.init)
        XCTAssertEqual(actions, ["imported", "deleted", "appended", "updated", "added", "created"])
        let actors = try gitOK(["log", "--format=%(trailers:key=Concord-Actor,valueonly)"], in: profile)
            .split(separator: "\n").map(String.init)
        XCTAssertEqual(Set(actors), ["alice"])
        let records = try gitOK(["log", "-1", "--skip=1", "--format=%(trailers:key=Concord-Record,valueonly)"], in: profile)
        XCTAssertEqual(records, "vocabulary/puzzle")
        // Author is the member at the device.
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%an <%ae>"], in: profile), "alice <alice@laptop>")
    }

    func testTamperedCommitFailsVerification() throws {
        let alice = try makeDevice("alice")
        let profile = try sessionProfile(alice)
        let head = try gitOK(["rev-parse", "HEAD"], in: profile)
        let raw = try git(["cat-file", "commit", head], in: profile).stdout
        XCTAssertTrue(raw.contains("gpgsig -----BEGIN SSH SIGNATURE-----"), raw)
        // Change one byte of the message ("imported" -> "importeD" in the summary line).
        let messageStart = try XCTUnwrap(raw.range(of: "\n\n"))
        let message = String(raw[messageStart.upperBound...])
        let summaryLine = String(message.prefix { $0 != "\n" })
        XCTAssertTrue(summaryLine.hasSuffix("imported"), summaryLine)
        let tamperedText = String(raw[..<messageStart.upperBound]) + summaryLine.dropLast() + "D" + message.dropFirst(summaryLine.count)
        XCTAssertEqual(tamperedText.utf8.count, raw.utf8.count)
        let input = try writeFile("tampered.commit", tamperedText)
        let tampered = try gitOK(["hash-object", "-t", "commit", "-w", input.path], in: profile)
        XCTAssertNotEqual(tampered, head)

        XCTAssertEqual(try git(["verify-commit", head], in: profile).status, 0, "the original still verifies")
        let verify = try git(["verify-commit", tampered], in: profile)
        XCTAssertNotEqual(verify.status, 0, "a tampered commit must not verify: \(verify.summary)")

        // Pointed at by the branch, concord's own log calls it bad (and the rest good).
        try gitOK(["update-ref", "refs/heads/main", tampered, head], in: profile)
        let log = try XCTUnwrap(parseJSON(try concordOKResult(["log", "--json"], as: alice, in: profile).stdout) as? [[String: Any]])
        XCTAssertEqual(log.first?["commit"] as? String, tampered)
        XCTAssertEqual(log.first?["signature"] as? String, "bad")
        XCTAssertEqual(Set(log.dropFirst().compactMap { $0["signature"] as? String }), ["good"])
    }

    func testFixedClockSetsStampAndCommitDate() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        try concordOK(["put", "vocabulary/clock", "--json", "{}"], as: alice, in: profile, clock: "2026-01-01T10:00:00.001Z")
        let record = try XCTUnwrap(parseJSON(try concordOKResult(["get", "vocabulary/clock"], as: alice, in: profile).stdout) as? [String: Any])
        let stamp = try XCTUnwrap(record["updatedAt"] as? String)
        XCTAssertTrue(stamp.hasPrefix("2026-01-01T10:00:00.001Z"), stamp)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%ad", "--date=format-local:%Y-%m-%d %H:%M:%S"], in: profile)
                       + " UTC", "2026-01-01 10:00:00 UTC")
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%at"], in: profile), "1767261600")
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%ai"], in: profile), "2026-01-01 10:00:00 +0000")
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Clock,valueonly)"], in: profile), stamp)

        // A different fixed instant is honoured too (the clock is not hard-wired).
        try concordOK(["put", "vocabulary/later", "--json", "{}"], as: alice, in: profile, clock: "2027-06-15T08:30:00Z")
        let later = try XCTUnwrap(parseJSON(try concordOKResult(["get", "vocabulary/later"], as: alice, in: profile).stdout) as? [String: Any])
        XCTAssertEqual(later["updatedAt"] as? String, "2027-06-15T08:30:00.000Z-0000")
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%ai"], in: profile), "2027-06-15 08:30:00 +0000")
    }

    func testInvalidClockIsRefused() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        for bad in ["garbage", "2026-13-01T10:00:00Z", "2026-01-01 10:00:00", "2026-01-01T10:00:00.001+01:00"] {
            let before = try snapshot(profile)
            let result = try concord(["put", "vocabulary/x", "--json", "{}"], as: alice, in: profile, clock: bad)
            assertRefusal(result, mentions: ["CONCORD_CLOCK", bad])
            XCTAssertEqual(try snapshot(profile), before)
        }
    }
}
