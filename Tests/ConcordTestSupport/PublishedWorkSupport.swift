// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest

/// The team of the published-work scenes (issue 42, the second red-team pass's repro-R and
/// repro-U): alice (Admin), eddie (Editor) and vera (Viewer) on one remote, a path or `concord
/// serve`; `clone` gives a device its own copy through that remote.
package struct PublishedWorkTeam {
    package let alice: TestDevice
    package let eddie: TestDevice
    package let vera: TestDevice
    package let aliceProfile: URL
    package let clone: (TestDevice, String) throws -> URL

    package init(alice: TestDevice, eddie: TestDevice, vera: TestDevice, aliceProfile: URL, clone: @escaping (TestDevice, String) throws -> URL) {
        (self.alice, self.eddie, self.vera, self.aliceProfile, self.clone) = (alice, eddie, vera, aliceProfile, clone)
    }
}

extension ConcordTestCase {
    /// Eddie, an Admin, lets Viewers write vocabulary and vera writes some; both reach main. Alice,
    /// on her copy from before, demotes eddie to Viewer and syncs. His demotion takes effect where it
    /// joins main, after what he and vera published: the kinds change and vera's record stand on every
    /// device (nothing is left out), eddie is a Viewer from then on, and his next kinds change is refused.
    package func assertADemotionOnAnOlderCopyLeavesPublishedKindsAndWritesStanding(_ team: PublishedWorkTeam,
                                                                                file: StaticString = #filePath, line: UInt = #line) throws {
        try concordOK(["role", "eddie", "admin"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "published-eddie")
        let verasCopy = try team.clone(team.vera, "published-vera")
        try concordOK(["kinds", "set", "vocabulary", "--writers", "viewer"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/veras", "--json", #"{"label":"by vera"}"#], as: team.vera, in: verasCopy, file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)

        try concordOK(["role", "eddie", "viewer"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let synced = try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertFalse(synced.contains("left out"), "what reached main first stands: \(synced)", file: file, line: line)

        let fresh = try team.clone(team.alice, "published-fresh")
        for (device, copy) in [(team.alice, team.aliceProfile), (team.alice, fresh), (team.vera, verasCopy)] {
            try concordOK(["sync"], as: device, in: copy, file: file, line: line)
            let kinds = try concordOK(["kinds", "list"], as: device, in: copy, file: file, line: line)
            XCTAssertTrue(kinds.split(separator: "\n").contains { $0.hasPrefix("vocabulary") && $0.contains("viewer") },
                          "eddie's published kinds change stands at \(copy.lastPathComponent): \(kinds)", file: file, line: line)
            XCTAssertTrue(try concordOK(["get", "vocabulary/veras"], as: device, in: copy, file: file, line: line).contains("by vera"),
                          "vera's published record stands at \(copy.lastPathComponent)", file: file, line: line)
            let members = try concordOK(["members", "list"], as: device, in: copy, file: file, line: line)
            XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("viewer") }, members, file: file, line: line)
        }
        XCTAssertTrue(try concordOK(["verify"], as: team.alice, in: fresh, file: file, line: line).contains("verified"), file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertNotEqual(try concord(["kinds", "set", "vocabulary", "--writers", "user"], as: team.eddie, in: eddiesCopy).status, 0,
                          "a Viewer changes no kind", file: file, line: line)
    }

    /// Eddie (Editor) creates vocabulary/pie and alice rewrites it; both reach main. Eddie then
    /// records his departure on a copy from before pie existed (plain git: his file marked left, as
    /// `concord leave` writes it), and vera merges that commit with `concord merge` and syncs. His
    /// departure takes effect where it joins main: pie keeps alice's published version on every
    /// device (not a tombstone in eddie's name), nothing is left out, and eddie has left.
    package func assertALeaveOnAnOlderCopyLeavesPublishedRecordsStanding(_ team: PublishedWorkTeam,
                                                                         file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "leaving-eddie")
        let verasCopy = try team.clone(team.vera, "leaving-vera")
        let beforePie = try revParse("HEAD", in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/pie", "--json", #"{"label":"pie by eddie"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["put", "vocabulary/pie", "--json", #"{"label":"pie by alice"}"#], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)

        try gitOK(["checkout", "--quiet", "-b", "old", beforePie], in: eddiesCopy, file: file, line: line)
        let leave = try commitWithGit(in: eddiesCopy, signedWith: team.eddie.keyFile, message: "members/eddie: left") { clone in
            try self.editMember("eddie", in: clone) { member in
                member["status"] = "revoked"
                member["revokedBy"] = "eddie"
                member["revokedAt"] = "2026-01-03T00:00:00.000Z"
                member["keys"] = [[String: Any]]()
            }
        }
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try gitOK(["fetch", "--quiet", eddiesCopy.path, "old"], in: verasCopy, file: file, line: line)
        let merged = try concordOK(["merge", leave], as: team.vera, in: verasCopy, file: file, line: line)
        XCTAssertFalse(merged.contains("left out"), "a departure on an old copy takes nothing published away: \(merged)", file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)

        let fresh = try team.clone(team.alice, "leaving-fresh")
        for copy in [team.aliceProfile, fresh] {
            try concordOK(["sync"], as: team.alice, in: copy, file: file, line: line)
            let pie = try concordOK(["get", "vocabulary/pie"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertTrue(pie.contains("pie by alice"), "alice's published version stands at \(copy.lastPathComponent): \(pie)", file: file, line: line)
            let members = try concordOK(["members", "list"], as: team.alice, in: copy, file: file, line: line)
            XCTAssertTrue(members.split(separator: "\n").contains { $0.contains("eddie") && $0.contains("revoked") }, members, file: file, line: line)
        }
        XCTAssertTrue(try concordOK(["verify"], as: team.alice, in: fresh, file: file, line: line).contains("verified"), file: file, line: line)
    }

    /// The fourth red-team pass (repros B, B2): eddie, an Admin alice then demoted to Viewer, writes
    /// on his copy from before the demotion and demotes himself there, so that the side's tip shows
    /// him a Viewer already; he merges that copy into main. His rights on the side are the most he
    /// held where its commits were made (an Admin's): his write is left out, on every device.
    package func assertASelfDemotionOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(_ team: PublishedWorkTeam,
                                                                                file: StaticString = #filePath, line: UInt = #line) throws {
        try concordOK(["role", "eddie", "admin"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let eddiesCopy = try team.clone(team.eddie, "self-demoted-eddie")
        let old = try revParse("HEAD", in: eddiesCopy, file: file, line: line)
        try concordOK(["role", "eddie", "viewer"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)

        try gitOK(["checkout", "--quiet", "-b", "old", old], in: eddiesCopy, file: file, line: line)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"an Admin's write after the demotion"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try concordOK(["role", "eddie", "viewer"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try gitOK(["checkout", "--quiet", "main"], in: eddiesCopy, file: file, line: line)
        let merged = try concordOK(["merge", "old"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(merged.contains("left out: ") && merged.contains("evil.json: eddie's change"), merged, file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        try assertNowhere("vocabulary/evil", team, file: file, line: line)
    }

    /// The fourth red-team pass (repro C): eddie (Editor), revoked by alice, writes on his copy from
    /// before the revocation and records his departure there (plain git, as `concord leave` writes
    /// it); vera merges that branch into main and syncs. His write is left out all the same.
    package func assertALeaveOnAnOldCopyDoesNotHideWhatWasWrittenBeforeIt(_ team: PublishedWorkTeam,
                                                                           file: StaticString = #filePath, line: UInt = #line) throws {
        let eddiesCopy = try team.clone(team.eddie, "leaving-revoked-eddie")
        let verasCopy = try team.clone(team.vera, "leaving-revoked-vera")
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        try concordOK(["put", "vocabulary/evil", "--json", #"{"label":"written after the revocation"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
        let leave = try commitWithGit(in: eddiesCopy, signedWith: team.eddie.keyFile, message: "members/eddie: left") { clone in
            try self.editMember("eddie", in: clone) { member in
                member["status"] = "revoked"
                member["revokedBy"] = "eddie"
                member["revokedAt"] = "2026-01-03T00:00:00.000Z"
                member["keys"] = [[String: Any]]()
            }
        }
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try gitOK(["fetch", "--quiet", eddiesCopy.path, "main:refs/peers/eddie"], in: verasCopy, file: file, line: line)
        let merged = try concordOK(["merge", leave], as: team.vera, in: verasCopy, file: file, line: line)
        XCTAssertTrue(merged.contains("left out: ") && merged.contains("evil.json: eddie's change"), merged, file: file, line: line)
        try concordOK(["sync"], as: team.vera, in: verasCopy, file: file, line: line)
        try assertNowhere("vocabulary/evil", team, file: file, line: line)
    }

    /// Record `reference` is on neither alice's copy (after a sync) nor a fresh clone.
    private func assertNowhere(_ reference: String, _ team: PublishedWorkTeam, file: StaticString, line: UInt) throws {
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        let fresh = try team.clone(team.alice, "nowhere-\(UUID().uuidString.prefix(4))")
        for copy in [team.aliceProfile, fresh] {
            XCTAssertNotEqual(try concord(["get", reference], as: team.alice, in: copy).status, 0, "\(reference) at \(copy.lastPathComponent)",
                              file: file, line: line)
        }
        XCTAssertTrue(try concordOK(["verify"], as: team.alice, in: fresh, file: file, line: line).contains("verified"), file: file, line: line)
    }
}
#endif
