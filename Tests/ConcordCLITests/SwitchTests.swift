import ConcordTestSupport
import Foundation
import XCTest

/// `concord switch`: another member acts on this device; the device key still signs; the acting
/// member's role, bounded by the owner's, decides (scenario A12).
final class SwitchTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    func testAUserActingOnAnEditorsDeviceAppendsButCannotEditVocabulary() throws {
        let parent = try makeDevice("parent")
        let therapist = try makeDevice("therapist", device: "ipad")
        let grandma = try makeDevice("grandma", device: "phone")
        let profile = try makeProfile(owner: parent, members: [(therapist, "editor"), (grandma, "user")])
        XCTAssertEqual(try concordOKResult(["switch"], as: therapist, in: profile).stdout, "therapist acts on this device (its owner)\n")

        let switched = try concordOKResult(["switch", "grandma"], as: therapist, in: profile).stdout
        XCTAssertTrue(switched.hasPrefix("grandma now acts on therapist's ipad; the switch is logged as "), switched)
        let switchEntry = try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Actor,valueonly)"], in: profile)
        XCTAssertEqual(switchEntry, "therapist", "the switch is logged by the device's owner")
        XCTAssertTrue(try concordOKResult(["switch"], as: therapist, in: profile).stdout.hasPrefix("grandma acts on this device (therapist's ipad)"))

        // A User may not edit vocabulary, whoever's device it is: refused before any commit.
        try assertRefusedWithoutChange(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: therapist, profile: profile,
                                       mentions: ["acting on therapist's device, grandma has the rights of a User", "editor"])
        // She may append to the log: her entry, her name on the commit, the therapist's key.
        try concordOK(["append", "logs", "--json", #"{"tapped":"juice"}"#], as: therapist, in: profile)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Actor,valueonly,separator=)@%(trailers:key=Concord-Device,valueonly,separator=)"],
                                 in: profile), "grandma@ipad")
        let verified = try git(["verify-commit", "-v", "HEAD"], in: profile)
        XCTAssertTrue(verified.stderr.contains(#"Good "git" signature for therapist"#), verified.stderr)
        let exported = try concordOKResult(["export"], as: parent, in: profile).stdout
        XCTAssertTrue(exported.contains(#""by":"grandma""#) || exported.contains(#""by": "grandma""#), exported)
        let line = try concordOKResult(["log", "--limit", "1"], as: parent, in: profile).stdout
        XCTAssertTrue(line.contains("  grandma@ipad (therapist's device)  appended logs/"), line)
        XCTAssertTrue(line.contains("[signature: good]"), line)
        try concordOK(["verify"], as: parent, in: profile)
        // Membership commands act as the device's owner, whoever acts: a commit the others accept.
        let spare = try makeDevice("spare", device: "spare")
        let spareKey = try concordOKResult(["identity", "show", "--public-key"], as: spare).stdout.trimmingCharacters(in: .newlines)
        try concordOK(["devices", "add", "--name", "spare", "--key", spareKey,
                       "--proof", try keyProof(of: spare, for: profile, member: "therapist")], as: therapist, in: profile)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Actor,valueonly)"], in: profile), "therapist")
        try concordOK(["verify"], as: parent, in: profile)

        // Only active members; back to the owner, who edits vocabulary again.
        try assertRefusedWithoutChange(["switch", "nobody"], as: therapist, profile: profile, mentions: ["nobody"])
        XCTAssertTrue(try concordOKResult(["switch", "therapist"], as: therapist, in: profile).stdout.hasPrefix("therapist now acts on therapist's ipad"))
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: therapist, in: profile)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Actor,valueonly)"], in: profile), "therapist")
        try concordOK(["verify"], as: parent, in: profile)
    }
}
