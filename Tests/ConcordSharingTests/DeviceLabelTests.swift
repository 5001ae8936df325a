import ConcordTestSupport
import Foundation
import XCTest

/// Issue 42, the second red-team pass's finding 4 (repros F, F2): a thief holding one of eddie's
/// device keys relabels eddie's keys in his own file — swaps the labels, or gives both one label —
/// and pushes it. `devices remove <label>` never then removes eddie's own device or both keys: a
/// label naming two keys, or this device's own, is refused with what to do, and removal by the key's
/// fingerprint cuts the thief off.
final class DeviceLabelTests: ConcordTestCase {
    func testSwappedLabelsCannotMakeAMemberRemoveTheirOwnDevice() throws {
        let (team, eddiesCopy, tablet) = try eddieWithAStolenTablet { keys in
            for index in keys.indices { keys[index]["device"] = keys[index]["device"] as? String == "laptop" ? "tablet" : "laptop" }
        }
        let refused = try concord(["devices", "remove", "tablet"], as: team.eddie, in: eddiesCopy)
        assertOneLineRefusal(refused, mentions: ["the key labelled tablet is this device's own (\(try fingerprint(team.eddie.publicKeyLine)))",
                                                 "remove that one by its fingerprint"])
        try assertTheThiefIsCutOffByFingerprint(team, eddiesCopy, tablet)
    }

    func testALabelNamingTwoKeysIsRefusedAndTheFingerprintDecides() throws {
        let (team, eddiesCopy, tablet) = try eddieWithAStolenTablet { keys in
            for index in keys.indices { keys[index]["device"] = "laptop" }
        }
        let refused = try concord(["devices", "remove", "laptop"], as: team.eddie, in: eddiesCopy)
        assertOneLineRefusal(refused, mentions: ["2 of eddie's keys are labelled laptop", try fingerprint(tablet.publicKeyLine),
                                                 "remove one by its fingerprint"])
        try assertTheThiefIsCutOffByFingerprint(team, eddiesCopy, tablet)
    }

    /// A write a removed key signed on a copy from before its removal, merged in as a side, is left
    /// out, and the report says why: the key's removal, not a revocation or demotion (the second
    /// red-team pass's repro-B).
    func testAWriteByARemovedKeyIsReportedAsLostToTheKeysRemoval() throws {
        let (team, eddiesCopy, tablet) = try eddieAddsATablet()
        let tabletsCopy = try cloneProfile(tablet, from: team.remote, into: "tablet")
        let tabletsKey = try fingerprint(tablet.publicKeyLine)
        try concordOK(["devices", "remove", tabletsKey], as: team.eddie, in: eddiesCopy)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        try concordOK(["put", "vocabulary/stolen", "--json", #"{"label":"by the tablet"}"#], as: tablet, in: tabletsCopy)
        let stolen = try revParse("HEAD", in: tabletsCopy)

        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try gitOK(["fetch", "--quiet", tabletsCopy.path, "main:refs/peers/tablet"], in: team.aliceProfile)
        let json = try concordOK(["merge", stolen, "--json"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(json.contains(#""cause": "key removed: \#(tabletsKey)""#), json)
        try gitOK(["reset", "--quiet", "--hard", "HEAD^1"], in: team.aliceProfile)   // the same merge again, in words
        let merged = try concordOK(["merge", stolen], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(merged.contains("eddie's change (commit \(stolen.prefix(7))) lost to the removal of the key that signed it (\(tabletsKey))"), merged)
        XCTAssertNotEqual(try concord(["get", "vocabulary/stolen"], as: team.alice, in: team.aliceProfile).status, 0, "left out")
    }

    /// The access team; eddie, on a copy of his own, adds his tablet (with its proof) and syncs.
    private func eddieAddsATablet() throws -> (AccessTeam, URL, TestDevice) {
        let team = try makeAccessTeam()
        let eddiesCopy = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        let tablet = try makeDevice("eddie", device: "tablet")
        try addDevice(tablet, as: team.eddie, in: eddiesCopy)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        return (team, eddiesCopy, tablet)
    }

    /// Eddie adds his tablet and syncs; a thief holding the tablet's key changes the labels of eddie's
    /// keys with `relabel` (plain git, signed by the tablet's key) and pushes it; eddie syncs.
    private func eddieWithAStolenTablet(_ relabel: @escaping (inout [[String: Any]]) -> Void) throws -> (AccessTeam, URL, TestDevice) {
        let (team, eddiesCopy, tablet) = try eddieAddsATablet()
        try assertAccepted(team, commit: try pushWithGit(team, signedWith: tablet.keyFile, message: "members/eddie: devices") { clone in
            try self.editMember("eddie", in: clone) { member in
                var keys = member["keys"] as? [[String: Any]] ?? []
                relabel(&keys)
                member["keys"] = keys
            }
        })
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy)
        return (team, eddiesCopy, tablet)
    }

    /// Eddie removes the tablet's key by its fingerprint and syncs: his own key stays, and a write the
    /// thief then signs with the tablet's key is refused.
    private func assertTheThiefIsCutOffByFingerprint(_ team: AccessTeam, _ eddiesCopy: URL, _ tablet: TestDevice,
                                                     file: StaticString = #filePath, line: UInt = #line) throws {
        let tabletsKey = try fingerprint(tablet.publicKeyLine)
        let removed = try concordOK(["devices", "remove", tabletsKey], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertTrue(removed.contains("(key \(tabletsKey))"), "it names the key it removed: \(removed)", file: file, line: line)
        try concordOK(["sync"], as: team.eddie, in: eddiesCopy, file: file, line: line)
        XCTAssertEqual(try memberKeys("eddie", at: "refs/heads/main", in: team.remote.bare), [keyBlob(team.eddie.publicKeyLine)],
                       "eddie's own key stays, the tablet's is gone", file: file, line: line)
        let thief = try pushWithGit(team, signedWith: tablet.keyFile) { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "still here""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertRefused(team, commit: thief, mentions: [], file: file, line: line)
        try concordOK(["put", "vocabulary/eddies", "--json", #"{"label":"by eddie"}"#], as: team.eddie, in: eddiesCopy, file: file, line: line)
    }
}
