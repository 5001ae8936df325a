import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `concord log --record` and `concord history` read only the commits the audit index
/// (`.git/concord/audit-index`) names for the record. They must list exactly the commits whose
/// file for that record differs from their first parent's — what walking every commit's tree
/// finds — with merges and resolved conflicts in the history, and after the index was torn,
/// damaged, or left behind by a history replaced by hand.
final class AuditIndexTests: ConcordTestCase {
    func testTheIndexListsWhatAWalkOfEveryCommitFindsAndSurvivesDamageAndRewrites() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        let (alice, bob) = (scene.owner, scene.other)
        // Concurrent edits of the same records on both devices, merged by sync (lww conflicts resolved).
        for round in 0..<3 {
            try concordOK(["put", "vocabulary/shared", "--json", #"{"label":"alice \#(round)"}"#], as: alice, in: scene.ownerProfile)
            try concordOK(["put", "vocabulary/other", "--json", #"{"label":"alice \#(round)"}"#], as: alice, in: scene.ownerProfile)
            try concordOK(["put", "vocabulary/shared", "--json", #"{"label":"bob \#(round)"}"#], as: bob, in: scene.otherProfile)
            try concordOK(["sync"], as: alice, in: scene.ownerProfile)
            try concordOK(["sync"], as: bob, in: scene.otherProfile)
        }
        try concordOK(["sync"], as: alice, in: scene.ownerProfile)
        try concordOK(["rm", "vocabulary/other"], as: alice, in: scene.ownerProfile)
        let profile = scene.ownerProfile
        let index = profile.appendingPathComponent(".git/concord/audit-index")

        try assertLogMatchesAWalk("vocabulary/shared", in: profile, as: alice)
        try assertLogMatchesAWalk("vocabulary/other", in: profile, as: alice)
        XCTAssertTrue(FileManager.default.fileExists(atPath: index.path))
        let history = try concordOK(["history", "vocabulary/shared", "--json"], as: alice, in: profile)
        XCTAssertTrue(history.contains(#""lostIn""#), "a version that lost a merge is named with its merge: \(history.prefix(500))")

        // A torn batch (a killed update) and a later write: the next query mends the index.
        let handle = try FileHandle(forWritingTo: index)
        handle.seekToEndOfFile()
        handle.write(Data("c \(String(repeating: "ab", count: 20)) 1 vocabulary/sh".utf8))
        try handle.close()
        try concordOK(["put", "vocabulary/shared", "--json", #"{"label":"after the tear"}"#], as: alice, in: profile)
        try assertLogMatchesAWalk("vocabulary/shared", in: profile, as: alice)
        XCTAssertFalse(try String(contentsOf: index, encoding: .utf8).contains(String(repeating: "ab", count: 20)))

        // Another version's index is built again.
        try Data("concord-audit-index 99\nt \(String(repeating: "cd", count: 20))\n".utf8).write(to: index)
        try assertLogMatchesAWalk("vocabulary/shared", in: profile, as: alice)

        // A history replaced by hand (reset to an older commit, then new writes): nothing from the
        // abandoned commits is listed.
        let abandoned = try gitOK(["rev-parse", "HEAD"], in: profile)
        try gitOK(["reset", "-q", "--hard", "HEAD~3"], in: profile)
        try concordOK(["put", "vocabulary/shared", "--json", #"{"label":"rewritten"}"#], as: alice, in: profile)
        let listed = try assertLogMatchesAWalk("vocabulary/shared", in: profile, as: alice)
        XCTAssertFalse(listed.contains(abandoned))
    }

    /// `init` and `clone` create the index; writes and syncs keep it at HEAD where it exists
    /// (without a query); where it was removed, a write does not bring it back and a query does.
    func testWritesSyncsAndClonesKeepTheIndexAtHead() throws {
        let scene = try makeTwoDevices(other: ("bob", "tablet"), role: "editor")
        let (alice, bob) = (scene.owner, scene.other)
        XCTAssertEqual(try indexTip(scene.ownerProfile), try revParse("HEAD", in: scene.ownerProfile), "init and the writes after it")
        XCTAssertEqual(try indexTip(scene.otherProfile), try revParse("HEAD", in: scene.otherProfile), "clone")
        try concordOK(["put", "vocabulary/a", "--json", #"{"label":"a"}"#], as: alice, in: scene.ownerProfile)
        try concordOK(["put", "vocabulary/b", "--json", #"{"label":"b"}"#], as: bob, in: scene.otherProfile)
        try concordOK(["sync"], as: alice, in: scene.ownerProfile)
        try concordOK(["sync"], as: bob, in: scene.otherProfile)
        XCTAssertEqual(try indexTip(scene.otherProfile), try revParse("HEAD", in: scene.otherProfile), "a sync with a merge")
        try concordOK(["sync"], as: alice, in: scene.ownerProfile)
        XCTAssertEqual(try indexTip(scene.ownerProfile), try revParse("HEAD", in: scene.ownerProfile), "a fast-forwarding sync")
        try assertLogMatchesAWalk("vocabulary/a", in: scene.otherProfile, as: bob)

        let index = scene.otherProfile.appendingPathComponent(".git/concord/audit-index")
        try FileManager.default.removeItem(at: index)
        try concordOK(["put", "vocabulary/c", "--json", #"{"label":"c"}"#], as: bob, in: scene.otherProfile)
        XCTAssertFalse(FileManager.default.fileExists(atPath: index.path))
        try assertLogMatchesAWalk("vocabulary/b", in: scene.otherProfile, as: bob)
        XCTAssertEqual(try indexTip(scene.otherProfile), try revParse("HEAD", in: scene.otherProfile), "built by the query")
    }

    /// The commit the index's last tip line names, or nil.
    private func indexTip(_ profile: URL) throws -> String? {
        let text = try String(contentsOf: profile.appendingPathComponent(".git/concord/audit-index"), encoding: .utf8)
        return text.split(separator: "\n").last { $0.hasPrefix("t ") }.map { String($0.dropFirst(2)) }
    }

    /// Fails unless `concord log --record reference` lists, newest first by time, exactly the
    /// commits of HEAD's history whose file for the record differs from its first parent's.
    @discardableResult
    private func assertLogMatchesAWalk(_ reference: String, in profile: URL, as device: TestDevice,
                                       file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let (kind, id) = (String(reference.split(separator: "/")[0]), String(reference.split(separator: "/")[1]))
        let path = RecordPaths.file(directory: kind, id: id)
        var expected = Set<String>()
        for commit in try gitOK(["rev-list", "HEAD"], in: profile).split(separator: "\n").map(String.init) {
            let mine = try git(["rev-parse", "--verify", "--quiet", "\(commit):\(path)"], in: profile).stdout
            let before = try git(["rev-parse", "--verify", "--quiet", "\(commit)^1:\(path)"], in: profile).stdout
            if mine != before { expected.insert(commit) }
        }
        let output = try concordOK(["log", "--record", reference, "--json"], as: device, in: profile)
        let entries = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [[String: Any]], file: file, line: line)
        let listed = entries.compactMap { $0["commit"] as? String }
        XCTAssertEqual(Set(listed), expected, "\(reference)", file: file, line: line)
        XCTAssertEqual(listed.count, expected.count, "each commit once", file: file, line: line)
        let times = try listed.map { Int(try gitOK(["show", "-s", "--format=%at", $0], in: profile).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
        XCTAssertEqual(times, times.sorted(by: >), "newest first", file: file, line: line)
        return listed
    }
}
