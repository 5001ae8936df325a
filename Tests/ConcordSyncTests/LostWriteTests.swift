import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Scenarios B2 and B3 (issue 32): every write a merge left out is reported per field, with its
/// own author and commit, on every device and whatever the sync order; an edit lost to a delete
/// too; the loser is told at their next sync, even one that only fast-forwards. The reports are
/// worked out from the merges' parents and trees, never from their commit messages.
final class LostWriteTests: ConcordTestCase {
    private func lost(_ device: TestDevice, in copy: URL, _ extra: [String] = []) throws -> [[String: Any]] {
        let text = try concordOK(["conflicts", "--json"] + extra, as: device, in: copy)
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]], text)
    }

    private func head(_ copy: URL) throws -> String { try gitOK(["rev-parse", "HEAD"], in: copy) }

    /// Base `scenes/y {"a":"base","b":"base"}`: alice sets a, then bob sets b, then carol sets a. In every
    /// sync order, every device lists exactly one lost write: alice's a, in her own commit, lost to
    /// carol's; bob's b survived and is reported nowhere.
    func testTheRightLoserIsNamedWhateverTheSyncOrder() throws {
        let team = try makeLostWriteTeam()
        for order in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            let tag = order.map(String.init).joined()
            let copies = try shareScreenplay(team, tag: tag, records: [("scenes/y", #"{"a":"base","b":"base"}"#)])
            try concordOK(["put", "scenes/y", "--json", #"{"a":"alice","b":"base"}"#], as: team.alice, in: copies[0])
            let alicesCommit = try head(copies[0])
            try concordOK(["put", "scenes/y", "--json", #"{"a":"base","b":"bob"}"#], as: team.bob, in: copies[1])
            try concordOK(["put", "scenes/y", "--json", #"{"a":"carol","b":"base"}"#], as: team.carol, in: copies[2])
            for index in order { try concordOK(["sync"], as: team.all[index], in: copies[index]) }
            for _ in 0..<2 { for index in order { try concordOK(["sync"], as: team.all[index], in: copies[index]) } }

            for (index, device) in team.all.enumerated() {
                let record = try concordOK(["get", "scenes/y"], as: device, in: copies[index])
                XCTAssertTrue(record.contains(#""a": "carol""#) && record.contains(#""b": "bob""#), "order \(tag): \(record)")
                let entries = try lost(device, in: copies[index])
                XCTAssertEqual(entries.count, 1, "order \(tag), on \(device.member)'s device: \(entries)")
                let entry = try XCTUnwrap(entries.first)
                XCTAssertEqual(entry["record"] as? String, "scenes/y")
                XCTAssertEqual(entry["field"] as? String, "a")
                let loser = try XCTUnwrap(entry["loser"] as? [String: Any]), winner = try XCTUnwrap(entry["winner"] as? [String: Any])
                XCTAssertEqual(loser["member"] as? String, "alice", "order \(tag)")
                XCTAssertEqual(loser["commit"] as? String, alicesCommit, "order \(tag): the losing write's own commit")
                XCTAssertEqual(winner["member"] as? String, "carol", "order \(tag)")
                let history = try concordOK(["history", "scenes/y"], as: device, in: copies[index])
                let marked = history.split(separator: "\n").filter { $0.contains("lost in merge") }
                XCTAssertEqual(marked.count, 1, "order \(tag): \(history)")
                XCTAssertTrue(marked.first?.contains(String(alicesCommit.prefix(7))) ?? false, "alice's version is the one marked: \(history)")
                XCTAssertTrue(marked.first?.contains("a to carol@tablet's edit") ?? false, history)
            }
        }
    }

    /// alice deletes `scenes/x`; bob edits a and carol edits b; they sync bob, carol, alice: both
    /// edits are reported lost to the delete, each with its author (only carol's was before).
    func testEveryEditLostToADeleteIsReported() throws {
        let team = try makeLostWriteTeam()
        let copies = try shareScreenplay(team, tag: "delete", records: [("scenes/x", #"{"a":"base","b":"base"}"#)])
        try concordOK(["rm", "scenes/x"], as: team.alice, in: copies[0])
        try concordOK(["put", "scenes/x", "--json", #"{"a":"bob","b":"base"}"#], as: team.bob, in: copies[1])
        try concordOK(["put", "scenes/x", "--json", #"{"a":"base","b":"carol"}"#], as: team.carol, in: copies[2])
        for index in [1, 2, 0] { try concordOK(["sync"], as: team.all[index], in: copies[index]) }
        for index in [1, 2, 0] { try concordOK(["sync"], as: team.all[index], in: copies[index]) }
        for (index, device) in team.all.enumerated() {
            let entries = try lost(device, in: copies[index])
            let seen = entries.map { entry -> String in
                let loser = entry["loser"] as? [String: Any], winner = entry["winner"] as? [String: Any]
                return "\(entry["field"] as? String ?? "-") \(loser?["member"] as? String ?? "?") \(winner?["member"] as? String ?? "?") \(winner?["change"] as? String ?? "?")"
            }
            XCTAssertEqual(seen.sorted(), ["a bob alice delete", "b carol alice delete"], "on \(device.member)'s device")
            let history = try concordOK(["history", "scenes/x"], as: device, in: copies[index])
            XCTAssertEqual(history.split(separator: "\n").filter { $0.contains("lost in merge") }.count, 2, history)
        }
    }

    /// Carol's sync makes the merge that leaves alice's write out; alice's next sync only
    /// fast-forwards, and tells her (text and --json); `conflicts --mine` and `--since` filter.
    func testTheLoserIsToldAtTheirNextSync() throws {
        let team = try makeLostWriteTeam()
        let (copies, carols) = try carolsMergeLeavesOutAlicesEdit(team, tag: "told")
        XCTAssertTrue(carols.contains("lost: scenes/y (a): alice's edit ("), carols)
        XCTAssertFalse(carols.contains("your edit"), "carol lost nothing: \(carols)")

        let told = try concordOK(["sync"], as: team.alice, in: copies[0])
        XCTAssertTrue(told.contains("received 1 commits") || told.contains("received 2 commits"), told)
        XCTAssertTrue(told.contains("your edit of scenes/y (a) lost to carol's edit at "), told)
        XCTAssertTrue(told.contains("; the lost version: concord history scenes/y"), told)
        XCTAssertNotNil(told.range(of: #"at \d\d:\d\d:\d\d;"#, options: .regularExpression), "times to the second: \(told)")
        // Told once: the next sync brings nothing new.
        XCTAssertFalse(try concordOK(["sync"], as: team.alice, in: copies[0]).contains("your edit"))

        // --json, on bob's device, which receives carol's merge: alice's loss, not his.
        let json = try concordOK(["sync", "--json"], as: team.bob, in: copies[1])
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let reported = try XCTUnwrap(object["lost"] as? [[String: Any]], json)
        XCTAssertEqual(reported.count, 1, json)
        XCTAssertEqual(reported.first?["yours"] as? Bool, false)

        XCTAssertEqual(try lost(team.alice, in: copies[0], ["--mine"]).count, 1)
        XCTAssertEqual(try lost(team.bob, in: copies[1], ["--mine"]).count, 0)
        XCTAssertEqual(try lost(team.alice, in: copies[0], ["--since", "1h"]).count, 1)
        XCTAssertEqual(try lost(team.alice, in: copies[0], ["--since", "2999-01-01"]).count, 0)
        XCTAssertTrue(try concordOK(["conflicts", "--mine"], as: team.bob, in: copies[1]).contains("no lost writes match"))
        // A bad date is a usage error, as for `log` (exit 2, with what to give).
        let refused = try concord(["conflicts", "--since", "yesterday"], as: team.alice, in: copies[0])
        XCTAssertEqual(refused.status, 2)
        XCTAssertTrue(refused.stderr.contains(#"--since "yesterday" is not a date: give 2026-11-24"#), refused.stderr)
    }
}

/// The team and the lost write of these tests (and of WatchTests' `testAWatchTellsTheLoser`).
extension ConcordTestCase {
    /// Alice, bob and carol, each on a device of their own.
    struct LostWriteTeam {
        let alice: TestDevice, bob: TestDevice, carol: TestDevice
        var all: [TestDevice] { [alice, bob, carol] }
    }

    func makeLostWriteTeam() throws -> LostWriteTeam {
        LostWriteTeam(alice: try makeDevice("alice", device: "laptop"), bob: try makeDevice("bob", device: "phone"),
             carol: try makeDevice("carol", device: "tablet"))
    }

    /// A screenplay profile on a path remote with bob and carol as Editors and `records`; each
    /// member's copy, in the order of `team.all`.
    func shareScreenplay(_ team: LostWriteTeam, tag: String, records: [(String, String)]) throws -> [URL] {
        let remote = try makeRemote(.path, name: "remote-\(tag).git")
        let profile = try publishProfile(owner: team.alice, remote: remote, directory: "alice-\(tag)", template: "screenplay",
                                         members: [(team.bob, "editor"), (team.carol, "editor")], records: records)
        return [profile, try cloneProfile(team.bob, from: remote, into: "bob-\(tag)"), try cloneProfile(team.carol, from: remote, into: "carol-\(tag)")]
    }

    /// The lost write both tests start from: scenes/y shared, alice changes its field a and syncs,
    /// then carol changes a too and her sync merges, leaving alice's write out. Returns the copies
    /// (alice, bob, carol) and what carol's sync printed.
    func carolsMergeLeavesOutAlicesEdit(_ team: LostWriteTeam, tag: String) throws -> (copies: [URL], carolsSync: String) {
        let copies = try shareScreenplay(team, tag: tag, records: [("scenes/y", #"{"a":"base","b":"base"}"#)])
        try concordOK(["put", "scenes/y", "--json", #"{"a":"alice","b":"base"}"#], as: team.alice, in: copies[0])
        try concordOK(["sync"], as: team.alice, in: copies[0])
        try concordOK(["put", "scenes/y", "--json", #"{"a":"carol","b":"base"}"#], as: team.carol, in: copies[2])
        return (copies, try concordOK(["sync"], as: team.carol, in: copies[2]))
    }
}
