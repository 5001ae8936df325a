import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// The same two divergent commits merged by concord (libgit2, in process) and by plain
/// `git merge` running `concord merge-driver` must give identical trees.
final class MergeInteropTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    /// A screenplay profile (delete-wins scenes, lww characters, append comments) cloned into
    /// two devices' directories; returns (ours, theirs).
    private func divergentPair(
        base: (URL, TestDevice) throws -> Void,
        ours: (URL, TestDevice) throws -> Void,
        theirs: (URL, TestDevice) throws -> Void
    ) throws -> (URL, URL, TestDevice) {
        let alice = try makeDevice("alice", device: "mac")
        let origin = sandbox.appendingPathComponent("origin")
        try concordOK(["init", origin.path, "--name", "Play", "--template", "screenplay"], as: alice, clock: "2026-01-01T08:00:00.000Z")
        try base(origin, alice)
        let other = sandbox.appendingPathComponent("other")
        try gitOK(["clone", "-q", origin.path, other.path], in: sandbox)
        try concordOK(["doctor", "--fix"], as: alice, in: other)
        try ours(origin, alice)
        try theirs(other, alice)
        try gitOK(["fetch", "-q", other.path, "main:refs/remotes/other/main"], in: origin)
        return (origin, other, alice)
    }

    /// Merges refs/remotes/other/main into copies of `ours` with concord and with git; asserts
    /// equal trees, fsck clean, and returns the concord copy.
    @discardableResult
    private func assertSameMerge(_ ours: URL, as person: TestDevice, file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let byConcord = sandbox.appendingPathComponent("by-concord-\(UUID().uuidString.prefix(6))")
        let byGit = sandbox.appendingPathComponent("by-git-\(UUID().uuidString.prefix(6))")
        try FileManager.default.copyItem(at: ours, to: byConcord)
        try FileManager.default.copyItem(at: ours, to: byGit)
        try concordOK(["merge", "refs/remotes/other/main"], as: person, in: byConcord, file: file, line: line)
        try gitOK(["-c", "user.name=git", "-c", "user.email=git@example.com", "merge", "-q", "--no-edit",
                   "refs/remotes/other/main"], in: byGit, file: file, line: line)
        let concordTree = try gitOK(["rev-parse", "HEAD^{tree}"], in: byConcord, file: file, line: line)
        let gitTree = try gitOK(["rev-parse", "HEAD^{tree}"], in: byGit, file: file, line: line)
        XCTAssertEqual(concordTree, gitTree, "concord and git merged to different trees", file: file, line: line)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "--parents", "-1", "HEAD"], in: byConcord).isEmpty, false)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%P", "HEAD"], in: byConcord).split(separator: " ").count, 2,
                       "concord writes a two-parent merge commit", file: file, line: line)
        try gitOK(["fsck", "--full", "--strict"], in: byConcord, file: file, line: line)
        try gitOK(["fsck", "--full", "--strict"], in: byGit, file: file, line: line)
        try gitOK(["verify-commit", "HEAD"], in: byConcord, file: file, line: line)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: byConcord), "", "working tree matches the merge", file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: byConcord.appendingPathComponent(".git/MERGE_HEAD").path),
                       "concord never leaves a MERGING state", file: file, line: line)
        return byConcord
    }

    /// ``divergentPair(base:ours:theirs:)`` where each side puts `reference`: `base` at 09:00, `ours` at 10:00, `theirs` at 10:01.
    private func divergentPuts(_ reference: String, base: String, ours: String, theirs: String) throws -> (URL, URL, TestDevice) {
        try divergentPair(
            base: { try self.put(reference, base, in: $0, as: $1, at: "2026-01-01T09:00:00.000Z") },
            ours: { try self.put(reference, ours, in: $0, as: $1, at: "2026-01-01T10:00:00.000Z") },
            theirs: { try self.put(reference, theirs, in: $0, as: $1, at: "2026-01-01T10:01:00.000Z") })
    }

    private func put(_ reference: String, _ json: String, in profile: URL, as person: TestDevice, at clock: String) throws {
        try concordOK(["put", reference, "--json", json], as: person, in: profile, clock: clock)
    }

    func testLWWModifyModifySameFieldLaterWins() throws {
        let (ours, _, alice) = try divergentPuts("characters/bob", base: #"{"name":"biscuit","age":3}"#, ours: #"{"name":"cookie","age":3}"#, theirs: #"{"name":"cracker","age":3}"#)
        let merged = try assertSameMerge(ours, as: alice)
        let record = try concordOKResult(["get", "characters/bob"], as: alice, in: merged).stdout
        XCTAssertTrue(record.contains(#""name": "cracker""#), record)
        let trailers = try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Resolved,valueonly)"], in: merged)
        XCTAssertTrue(trailers.hasPrefix("characters/bob lww winner=alice@mac loser=alice@mac"), trailers)
        let conflicts = try concordOKResult(["conflicts", "--utc"], as: alice, in: merged).stdout
        // Per field, with the losing write's own commit (ours lost: the second parent, as concord's
        // merges put the merged-in main first).
        let lostCommit = try gitOK(["rev-parse", "--short=7", "HEAD^2"], in: merged)
        XCTAssertTrue(conflicts.contains("characters/bob (name): alice's edit (10:00:00Z, alice@mac, \(lostCommit)) lost to alice's edit (10:01:00Z, alice@mac)"),
                      conflicts)
        // Both edits stay in history.
        let history = try concordOKResult(["history", "characters/bob", "--json"], as: alice, in: merged).stdout
        XCTAssertTrue(history.contains("cookie") && history.contains("cracker"), history)
        // The losing version says which merge it lost in, and to whom.
        let merge = try gitOK(["rev-parse", "--short=7", "HEAD"], in: merged)
        let lines = try concordOKResult(["history", "characters/bob", "--utc"], as: alice, in: merged).stdoutLines
        let lost = lines.filter { $0.contains("lost in merge") }
        XCTAssertEqual(lost.count, 1, lines.joined(separator: "\n"))
        XCTAssertTrue(lost.first?.contains(#"edited characters/bob (name: "biscuit" → "cookie")"#) == true, lost.first ?? "")
        XCTAssertTrue(lost.first?.hasSuffix("lost in merge \(merge): name to alice@mac's edit") == true, lost.first ?? "")
    }

    /// A field named `café` precomposed on one side and decomposed on the other is one field: concord
    /// and plain git merge it to the same bytes, merging A into B and B into A (issue 32).
    func testCanonicallyEquivalentFieldNamesMergeToOneRecordEitherWay() throws {
        let (ours, theirs, alice) = try divergentPuts("characters/bob", base: #"{"name":"Bob"}"#,
                                                      ours: "{\"name\":\"Bob\",\"caf\u{E9}\":\"1\"}",
                                                      theirs: "{\"name\":\"Bob\",\"cafe\u{301}\":\"2\"}")
        let forward = try assertSameMerge(ours, as: alice)
        try gitOK(["fetch", "-q", ours.path, "main:refs/remotes/other/main"], in: theirs)
        let backward = try assertSameMerge(theirs, as: alice)
        let path = try XCTUnwrap(try gitOK(["ls-files", "characters"], in: forward).split(separator: "\n").first.map(String.init))
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD:\(path)"], in: forward), try gitOK(["rev-parse", "HEAD:\(path)"], in: backward),
                       "A into B and B into A write the same record")
        let bytes = Array(try Data(contentsOf: forward.appendingPathComponent(path)))
        XCTAssertTrue(bytes.indices.contains { bytes[$0...].starts(with: Array("\"caf\u{E9}\": \"2\"".utf8)) },
                      String(decoding: bytes, as: UTF8.self))
    }

    func testLWWDifferentFieldsBothKept() throws {
        let (ours, _, alice) = try divergentPuts("characters/bob", base: #"{"name":"Bob","age":3}"#, ours: #"{"name":"Robert","age":3}"#, theirs: #"{"name":"Bob","age":4}"#)
        let merged = try assertSameMerge(ours, as: alice)
        let record = try concordOKResult(["get", "characters/bob"], as: alice, in: merged).stdout
        XCTAssertTrue(record.contains(#""name": "Robert""#) && record.contains(#""age": 4"#), record)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Resolved,valueonly)"], in: merged), "")
    }

    func testAddAddGoesThroughThePolicy() throws {
        let (ours, _, alice) = try divergentPair(
            base: { _, _ in },
            ours: { try self.put("characters/eve", #"{"name":"Eve","role":"lead"}"#, in: $0, as: $1, at: "2026-01-01T10:00:00.000Z") },
            theirs: { try self.put("characters/eve", #"{"name":"Evelyn","mood":"calm"}"#, in: $0, as: $1, at: "2026-01-01T10:01:00.000Z") })
        let merged = try assertSameMerge(ours, as: alice)
        let record = try concordOKResult(["get", "characters/eve"], as: alice, in: merged).stdout
        XCTAssertTrue(record.contains(#""name": "Evelyn""#), record)
        XCTAssertTrue(record.contains(#""role": "lead""#) && record.contains(#""mood": "calm""#), record)
    }

    func testDeleteWinsOverConcurrentEdit() throws {
        let (ours, _, alice) = try divergentPair(
            base: { try self.put("scenes/7", #"{"text":"INT. KITCHEN"}"#, in: $0, as: $1, at: "2026-01-01T09:00:00.000Z") },
            ours: { try self.put("scenes/7", #"{"text":"INT. KITCHEN - NIGHT"}"#, in: $0, as: $1, at: "2026-01-01T10:02:00.000Z") },
            theirs: { try self.concordOK(["rm", "scenes/7"], as: $1, in: $0, clock: "2026-01-01T10:01:00.000Z") })
        let merged = try assertSameMerge(ours, as: alice)
        let result = try concord(["get", "scenes/7"], as: alice, in: merged)
        XCTAssertEqual(result.status, 1, result.summary)
        let conflicts = try concordOKResult(["conflicts", "--json", "--utc"], as: alice, in: merged).stdout
        XCTAssertTrue(conflicts.contains("\"field\": \"text\""), conflicts)
        XCTAssertTrue(conflicts.contains("scenes/7 (text): alice's edit (10:02:00Z, alice@mac, "), conflicts)
        XCTAssertTrue(conflicts.contains("lost to alice's delete (10:01:00Z, alice@mac)"), conflicts)
        // The lost edit is still reachable in history.
        let history = try concordOKResult(["history", "scenes/7", "--content"], as: alice, in: merged).stdout
        XCTAssertTrue(history.contains("INT. KITCHEN - NIGHT"), history)
        XCTAssertTrue(history.contains(#"edited scenes/7 (text: "INT. KITCHEN" → "INT. KITCHEN - NIGHT")"#), history)
        XCTAssertTrue(history.contains("lost in merge \(try gitOK(["rev-parse", "--short=7", "HEAD"], in: merged)): text to alice@mac's delete"), history)
    }

    func testLWWTombstoneVersusEditLaterWins() throws {
        let (ours, _, alice) = try divergentPair(
            base: { try self.put("characters/zed", #"{"name":"Zed"}"#, in: $0, as: $1, at: "2026-01-01T09:00:00.000Z") },
            ours: { try self.concordOK(["rm", "characters/zed"], as: $1, in: $0, clock: "2026-01-01T10:00:00.000Z") },
            theirs: { try self.put("characters/zed", #"{"name":"Zedd"}"#, in: $0, as: $1, at: "2026-01-01T10:05:00.000Z") })
        let merged = try assertSameMerge(ours, as: alice)
        XCTAssertTrue(try concordOKResult(["get", "characters/zed"], as: alice, in: merged).stdout.contains("Zedd"))
    }

    func testAppendLogsUnionInOrder() throws {
        let (ours, _, alice) = try divergentPair(
            base: { try self.concordOK(["append", "comments", "--json", #"{"text":"first"}"#], as: $1, in: $0, clock: "2026-01-01T09:00:00.000Z") },
            ours: { try self.concordOK(["append", "comments", "--json", #"{"tap":"A"}"#], as: $1, in: $0, clock: "2026-01-01T10:00:00.000Z") },
            theirs: { try self.concordOK(["append", "comments", "--json", #"{"tap":"B"}"#], as: $1, in: $0, clock: "2026-01-01T10:00:00.001Z") })
        let merged = try assertSameMerge(ours, as: alice)
        let log = try String(contentsOf: merged.appendingPathComponent("comments/2026-01-01.jsonl"), encoding: .utf8)
        let lines = log.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, log)
        XCTAssertTrue(lines[1].contains(#""tap":"A""#) && lines[2].contains(#""tap":"B""#), log)
    }

    func testEveryPolicyAtOnceAndMergingAgainIsUpToDate() throws {
        let (ours, _, alice) = try divergentPair(
            base: { dir, who in
                try self.put("scenes/1", #"{"text":"one","order":1}"#, in: dir, as: who, at: "2026-01-01T09:00:00.000Z")
                try self.put("scenes/2", #"{"text":"two","order":2}"#, in: dir, as: who, at: "2026-01-01T09:00:00.000Z")
                try self.put("characters/ann", #"{"name":"Ann"}"#, in: dir, as: who, at: "2026-01-01T09:00:00.000Z")
            },
            ours: { dir, who in
                try self.put("scenes/1", #"{"text":"one!","order":2}"#, in: dir, as: who, at: "2026-01-01T10:00:00.000Z")
                try self.concordOK(["rm", "scenes/2"], as: who, in: dir, clock: "2026-01-01T10:00:00.000Z")
                try self.concordOK(["append", "comments", "--json", #"{"n":1}"#], as: who, in: dir, clock: "2026-01-01T10:00:00.000Z")
            },
            theirs: { dir, who in
                try self.put("scenes/1", #"{"text":"one","order":3}"#, in: dir, as: who, at: "2026-01-01T10:01:00.000Z")
                try self.put("scenes/2", #"{"text":"two?","order":2}"#, in: dir, as: who, at: "2026-01-01T10:01:00.000Z")
                try self.put("characters/ann", #"{"name":"Anne"}"#, in: dir, as: who, at: "2026-01-01T10:01:00.000Z")
                try self.concordOK(["append", "comments", "--json", #"{"n":2}"#], as: who, in: dir, clock: "2026-01-01T10:01:00.000Z")
            })
        let merged = try assertSameMerge(ours, as: alice)
        let scene = try concordOKResult(["get", "scenes/1"], as: alice, in: merged).stdout
        XCTAssertTrue(scene.contains(#""text": "one!""#) && scene.contains(#""order": 3"#), scene)
        XCTAssertEqual(try concord(["get", "scenes/2"], as: alice, in: merged).status, 1)
        let again = try concordOKResult(["merge", "refs/remotes/other/main", "--json"], as: alice, in: merged).stdout
        XCTAssertTrue(again.contains("\"outcome\": \"up-to-date\""), again)
    }

    /// Changes `.concord/kinds.json` by hand with `change`, writes the `.gitattributes` that goes with it,
    /// and commits both with git (Concord has no command that changes kinds).
    private func changeKinds(in profile: URL, _ change: (inout [RecordKind]) throws -> Void) throws {
        let path = profile.appendingPathComponent(".concord/kinds.json")
        var kinds = try KindsTable.decode(Array(try Data(contentsOf: path))).kinds
        try change(&kinds)
        let table = try KindsTable(kinds)
        try Data(table.canonicalBytes()).write(to: path)
        try Data(table.gitattributes().utf8).write(to: profile.appendingPathComponent(".gitattributes"))
        try gitOK(["-c", "user.name=admin", "-c", "user.email=admin@example.com", "commit", "-q", "-am", "kinds changed by hand"], in: profile)
    }

    /// F5: kinds added on both sides, and a policy changed on one, give one tree in both directions,
    /// in process and under plain `git merge`, with `.gitattributes` merged rather than conflicted.
    func testKindsChangedOnBothSidesMergeToOneTreeInBothDirections() throws {
        let (ours, theirs, alice) = try divergentPair(
            base: { try self.put("characters/ann", #"{"name":"Ann"}"#, in: $0, as: $1, at: "2026-01-01T09:00:00.000Z") },
            ours: { dir, who in
                try self.changeKinds(in: dir) { kinds in
                    kinds.append(try RecordKind(name: "notes", directory: nil, policy: .lww, writers: .user))
                    kinds = try kinds.map { $0.name == "characters" ? try RecordKind(name: $0.name, directory: $0.directory, policy: .deleteWins, writers: $0.writers) : $0 }
                }
                try self.concordOK(["rm", "characters/ann"], as: who, in: dir, clock: "2026-01-01T10:00:00.000Z")
            },
            theirs: { dir, who in
                try self.changeKinds(in: dir) { kinds in
                    kinds.append(try RecordKind(name: "news", directory: nil, policy: .lww, writers: .user))
                }
                try self.put("characters/ann", #"{"name":"Anne"}"#, in: dir, as: who, at: "2026-01-01T10:01:00.000Z")
            })
        try gitOK(["fetch", "-q", ours.path, "main:refs/remotes/other/main"], in: theirs)
        let one = try assertSameMerge(ours, as: alice)
        let other = try assertSameMerge(theirs, as: alice)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD^{tree}"], in: one), try gitOK(["rev-parse", "HEAD^{tree}"], in: other),
                       "merging in the two directions gives different trees")
        let attributes = try String(contentsOf: one.appendingPathComponent(".gitattributes"), encoding: .utf8)
        XCTAssertTrue(attributes.contains("notes/*/*.json merge=concord") && attributes.contains("news/*/*.json merge=concord"), attributes)
        // characters became delete-wins on one side only: the merged kinds say delete-wins, so the delete stands.
        XCTAssertEqual(try concord(["get", "characters/ann"], as: alice, in: one).status, 1)
    }

    func testUnparseableSideIsKeptAsideAndReported() throws {
        let (ours, other, alice) = try divergentPair(
            base: { try self.put("characters/bob", #"{"name":"Bob"}"#, in: $0, as: $1, at: "2026-01-01T09:00:00.000Z") },
            ours: { try self.put("characters/bob", #"{"name":"Bobby"}"#, in: $0, as: $1, at: "2026-01-01T10:00:00.000Z") },
            theirs: { dir, _ in
                try Data("{ not json\n".utf8).write(to: dir.appendingPathComponent("\(RecordPaths.file(directory: "characters", id: "bob"))"))
                try self.gitOK(["-c", "user.name=x", "-c", "user.email=x@y", "commit", "-qam", "hand edit"], in: dir)
            })
        _ = other
        let result = try concord(["merge", "refs/remotes/other/main"], as: alice, in: ours)
        XCTAssertEqual(result.status, 1, result.summary)
        XCTAssertTrue(result.stderr.contains("\(RecordPaths.file(directory: "characters", id: "bob"))"), result.stderr)
        let theirShort = String(try gitOK(["rev-parse", "refs/remotes/other/main"], in: ours).prefix(7))
        let saved = ours.appendingPathComponent(".concord/conflicts/characters/\(RecordPaths.bucket("bob"))/bob.\(theirShort).json")
        XCTAssertEqual(try String(contentsOf: saved, encoding: .utf8), "{ not json\n")
        XCTAssertTrue(try concordOKResult(["get", "characters/bob"], as: alice, in: ours).stdout.contains("Bobby"))
        try gitOK(["fsck", "--full"], in: ours)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: ours), "")
    }

    func testDoctorReportsAndRepairsTheDriverConfig() throws {
        let alice = try makeDevice("alice", device: "mac")
        let profile = try makeProfile("p", owner: alice, template: "screenplay")
        XCTAssertEqual(try concord(["doctor"], as: alice, in: profile).status, 0)
        try gitOK(["config", "merge.concord.driver", "'/nonexistent/concord' merge-driver %O %A %B %P"], in: profile)
        let broken = try concord(["doctor"], as: alice, in: profile)
        XCTAssertEqual(broken.status, 1, broken.summary)
        XCTAssertTrue(broken.stdout.contains("/nonexistent/concord"), broken.stdout)
        try gitOK(["config", "--unset", "merge.concord.driver"], in: profile)
        XCTAssertTrue(try concord(["doctor"], as: alice, in: profile).stdout.contains("not set"))
        try concordOK(["doctor", "--fix"], as: alice, in: profile)
        let driver = try gitOK(["config", "merge.concord.driver"], in: profile)
        let binary = try ConcordBinary.required()
        XCTAssertTrue(driver.hasSuffix(" merge-driver %O %A %B %P") && driver.contains(binary), driver)
        XCTAssertEqual(try concord(["doctor"], as: alice, in: profile).status, 0)
    }
}
