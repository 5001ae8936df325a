import ConcordTestSupport
import Foundation
import XCTest

/// `concord log` and `concord history` as the audit trail: who changed what (fields old → new),
/// when (local time or UTC), on which device; filtered by record, member and time; and the
/// versions that lost a merge, with the merge they lost in.
final class AuditTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    /// Scenario A11: a therapist adds the symbol "puzzle" at 14:30; the parent's audit view shows
    /// the action, the symbol, the therapist's name, the time and the device.
    func testLogShowsWhoChangedWhatWhenOnWhichDevice() throws {
        let (parent, therapist, profile) = try careTeam(joined: "2026-03-02T09:00:00.000Z")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle","color":"red"}"#], as: therapist, in: profile,
                      clock: "2026-03-02T14:30:00.000Z")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"jigsaw","color":"red"}"#], as: parent, in: profile,
                      clock: "2026-03-03T08:15:00.000Z")
        try concordOK(["rm", "vocabulary/puzzle"], as: therapist, in: profile, clock: "2026-03-04T17:00:00.000Z")

        let utc = try concordOKResult(["log", "--utc"], as: parent, in: profile).stdoutLines
        XCTAssertEqual(utc.count, 5, utc.joined(separator: "\n"))
        XCTAssertTrue(utc[0].hasPrefix("2026-03-04 17:00:00Z  therapist@ipad  deleted vocabulary/puzzle  "), utc[0])
        XCTAssertTrue(utc[1].hasPrefix(#"2026-03-03 08:15:00Z  parent@laptop  edited vocabulary/puzzle (label: "puzzle" → "jigsaw")  "#), utc[1])
        XCTAssertTrue(utc[2].hasPrefix(#"2026-03-02 14:30:00Z  therapist@ipad  added vocabulary/puzzle (color: "red", label: "puzzle")  "#), utc[2])
        for line in utc { XCTAssertTrue(line.hasSuffix("[signature: good]"), line) }

        // Local time by default: the same instants in the machine's zone (TZ).
        let local = try concordWithDeadline(["log", "--limit", "1"], as: parent, in: profile, environment: ["TZ": "America/New_York"])
        XCTAssertTrue(local.stdout.hasPrefix("2026-03-04 12:00:00  therapist@ipad  deleted vocabulary/puzzle"), local.stdout)

        // --member, --since, --until (UTC with Z, a day in local time).
        let byTherapist = try concordOKResult(["log", "--member", "therapist", "--utc"], as: parent, in: profile).stdoutLines
        XCTAssertEqual(byTherapist.count, 2, byTherapist.joined(separator: "\n"))
        XCTAssertTrue(byTherapist.allSatisfy { $0.contains("therapist@ipad") })
        let window = try concordOKResult(["log", "--since", "2026-03-02T12:00:00Z", "--until", "2026-03-04T00:00:00Z", "--utc"],
                                   as: parent, in: profile).stdoutLines
        XCTAssertEqual(window.map { String($0.prefix(20)) }, ["2026-03-03 08:15:00Z", "2026-03-02 14:30:00Z"])
        let day = try concordWithDeadline(["log", "--since", "2026-03-03", "--until", "2026-03-04"], as: parent, in: profile,
                                             environment: ["TZ": "UTC"])
        XCTAssertEqual(day.stdout.split(separator: "\n").count, 1, day.stdout)

        // --json carries the same: fields with old and new values.
        let json = try XCTUnwrap(parseJSON(try concordOKResult(["log", "--json", "--member", "parent", "--limit", "1"], as: parent, in: profile).stdout)
                                 as? [[String: Any]])
        let change = try XCTUnwrap((json.first?["changes"] as? [[String: Any]])?.first)
        XCTAssertEqual(change["record"] as? String, "vocabulary/puzzle")
        XCTAssertEqual(change["action"] as? String, "edited")
        let fields = try XCTUnwrap(change["fields"] as? [[String: Any]])
        XCTAssertEqual(fields.count, 1)
        XCTAssertEqual(fields.first?["field"] as? String, "label")
        XCTAssertEqual(fields.first?["old"] as? String, "puzzle")
        XCTAssertEqual(fields.first?["new"] as? String, "jigsaw")
    }

    /// Each `<!-- recipe: name -->` block of docs/audit.md, run as written with /bin/sh in a real
    /// profile (a parent, a therapist, an edit, a delete, and a conflict a merge resolved).
    func testEveryRecipeInDocsAuditRuns() throws {
        let (parent, therapist, profile) = try careTeam(joined: "2026-03-01T09:00:00.000Z")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: therapist, in: profile, clock: "2026-03-02T14:30:00.000Z")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"jigsaw"}"#], as: parent, in: profile, clock: "2026-03-03T08:15:00.000Z")
        try concordOK(["rm", "vocabulary/puzzle"], as: therapist, in: profile, clock: "2026-03-04T17:00:00.000Z")
        // A conflict: the same record written on a clone and here, merged.
        let other = sandbox.appendingPathComponent("other")
        try gitOK(["clone", "-q", profile.path, other.path], in: sandbox)
        fsckAtEnd += [profile, other]
        try concordOK(["doctor", "--fix"], as: parent, in: other)
        try concordOK(["put", "vocabulary/snack", "--json", #"{"label":"biscuit"}"#], as: parent, in: profile, clock: "2026-03-05T10:00:00.000Z")
        try concordOK(["put", "vocabulary/snack", "--json", #"{"label":"cracker"}"#], as: parent, in: other, clock: "2026-03-05T10:01:00.000Z")
        try gitOK(["fetch", "-q", other.path, "main:refs/remotes/other/main"], in: profile)
        try concordOK(["merge", "refs/remotes/other/main"], as: parent, in: profile, clock: "2026-03-05T10:02:00.000Z")

        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/audit.md")
        let recipes = try Self.recipes(in: String(contentsOf: docs, encoding: .utf8))
        XCTAssertEqual(Set(recipes.keys), ["trailers", "signatures", "record", "member", "window", "conflicts"])
        func run(_ name: String) throws -> [String] {
            let result = try ProcessRunner.run("/bin/sh", ["-c", try XCTUnwrap(recipes[name])], environment: concordEnvironment(parent), in: profile)
            XCTAssertEqual(result.status, 0, "\(name): \(result.summary)")
            return result.stdoutLines
        }
        let trailers = try run("trailers")
        XCTAssertTrue(trailers.contains { $0.hasPrefix("2026-03-02T14:30:00") && $0.hasSuffix("therapist@ipad added vocabulary/puzzle") },
                      trailers.joined(separator: "\n"))
        XCTAssertTrue(trailers.contains { $0.hasSuffix("parent@laptop updated vocabulary/puzzle") }, trailers.joined(separator: "\n"))
        let signatures = try run("signatures")
        XCTAssertEqual(signatures.count, try commits(profile).count)
        XCTAssertTrue(signatures.allSatisfy { $0.split(separator: " ")[1] == "G" }, signatures.joined(separator: "\n"))
        XCTAssertTrue(signatures.contains { $0.contains(" G therapist vocabulary/puzzle: added") }, signatures.joined(separator: "\n"))
        let record = try run("record")
        XCTAssertTrue(record.contains(#"+    "label": "puzzle""#) && record.contains(#"-    "label": "puzzle""#), record.joined(separator: "\n"))
        XCTAssertEqual(record.filter { $0.contains(" vocabulary/puzzle: ") }.count, 3, record.joined(separator: "\n"))
        let member = try run("member")
        XCTAssertEqual(member.map { String($0.dropFirst(8)) }, ["vocabulary/puzzle: deleted", "vocabulary/puzzle: added"])
        let window = try run("window")
        XCTAssertEqual(window.count, 2, window.joined(separator: "\n"))
        let conflicts = try run("conflicts")
        XCTAssertEqual(conflicts.count, 1, conflicts.joined(separator: "\n"))
        XCTAssertTrue(conflicts.first?.contains("vocabulary/snack lww winner=parent@laptop loser=parent@laptop") == true, conflicts.first ?? "")
    }

    /// A parent's profile with a therapist (an editor on an iPad) added at `joined`.
    private func careTeam(joined: String) throws -> (parent: TestDevice, therapist: TestDevice, profile: URL) {
        let parent = try makeDevice("parent")
        let therapist = try makeDevice("therapist", device: "ipad")
        let profile = try makeProfile(owner: parent)
        let key = try concordOKResult(["identity", "show", "--public-key"], as: therapist).stdout.trimmingCharacters(in: .newlines)
        try concordOK(["members", "add", "therapist", "--role", "editor", "--key", key, "--device", "ipad"], as: parent, in: profile, clock: joined)
        return (parent, therapist, profile)
    }

    /// The shell block after each `<!-- recipe: name -->` line.
    static func recipes(in markdown: String) throws -> [String: String] {
        var recipes = [String: String]()
        let lines = markdown.components(separatedBy: "\n")
        for (index, line) in lines.enumerated() where line.hasPrefix("<!-- recipe: ") {
            let name = String(line.dropFirst("<!-- recipe: ".count).dropLast(" -->".count))
            guard index + 2 < lines.count, lines[index + 1] == "```sh", let end = lines[(index + 2)...].firstIndex(of: "```") else {
                XCTFail("recipe \(name) is not followed by a ```sh block")
                continue
            }
            recipes[name] = lines[(index + 2)..<end].joined(separator: "\n")
        }
        return recipes
    }

    func testABadDateIsRefusedWithWhatToGive() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        for arguments in [["log", "--since", "yesterday"], ["log", "--until", "2026-13-45"], ["log", "--since", "3 days"]] {
            let result = try concord(arguments, as: alice, in: profile)
            XCTAssertEqual(result.status, 2, result.summary)
            XCTAssertTrue(result.stderr.contains("is not a date: give 2026-11-24"), result.stderr)
        }
        let unknown = try concord(["log", "--member", "nobody"], as: alice, in: profile)
        XCTAssertEqual(unknown.status, 0, unknown.summary)
        XCTAssertEqual(unknown.stdout, "")
    }
}
