import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `concord kinds [list]`, `kinds add`, `kinds set`: what they print, the one signed commit each
/// change makes, every refusal (one line, nothing changed), and kinds added concurrently on two
/// devices merging to the same bytes under `concord merge` and plain `git merge`.
final class KindsCommandTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    private var alice: TestDevice!
    private var bob: TestDevice!
    private var profile: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        alice = try makeDevice("alice")
        bob = try makeDevice("bob", device: "phone")
        profile = try makeProfile(owner: alice, members: [(bob, "editor")])
    }

    /// The kinds file as a table.
    private func kinds(in directory: URL) throws -> KindsTable {
        try KindsTable.decode(Array(try Data(contentsOf: directory.appendingPathComponent(".concord/kinds.json"))))
    }

    func testListInTextAndJSON() throws {
        XCTAssertEqual(try concordOK(["kinds"], as: bob, in: profile), """
            logs  directory logs  append  writers user
            settings  directory settings  lww  writers admin
            vocabulary  directory vocabulary  lww  writers editor
            """)
        XCTAssertEqual(try concordOK(["kinds", "list"], as: bob, in: profile), try concordOK(["kinds"], as: bob, in: profile))
        let json = parseJSON(try concordOK(["kinds", "list", "--json"], as: bob, in: profile)) as? [[String: String]]
        XCTAssertEqual(json?.map { $0["name"] ?? "" }, ["logs", "settings", "vocabulary"])
        XCTAssertEqual(json?.first, ["name": "logs", "directory": "logs", "policy": "append", "writers": "user"])
    }

    func testAddAndSetMakeOneSignedCommitOfKindsAndAttributes() throws {
        let before = try commits(profile).count
        let added = try concordOK(["kinds", "add", "notes", "--policy", "delete-wins", "--writers", "user", "--directory", "team/notes"],
                                  as: alice, in: profile)
        XCTAssertTrue(added.hasPrefix("added kind notes (directory team/notes, delete-wins, writers user) in commit "), added)
        XCTAssertEqual(try commits(profile).count, before + 1)
        try gitOK(["verify-commit", "HEAD"], in: profile)
        XCTAssertEqual(try gitOK(["show", "--format=", "--name-only", "HEAD"], in: profile), ".concord/kinds.json\n.gitattributes")
        let table = try kinds(in: profile)
        XCTAssertEqual(table.kind(named: "notes"), try RecordKind(name: "notes", directory: "team/notes", policy: .deleteWins, writers: .user))
        XCTAssertEqual(try String(contentsOf: profile.appendingPathComponent(".gitattributes"), encoding: .utf8), table.gitattributes())
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile), "")

        // The new kind is written at once, by whom its writers allow.
        try concordOK(["put", "notes/n1", "--json", #"{"text":"hi"}"#], as: bob, in: profile)

        let set = parseJSON(try concordOK(["kinds", "set", "notes", "--writers", "admin", "--policy", "lww", "--json"], as: alice, in: profile))
            as? [String: Any]
        XCTAssertEqual(set?["writers"] as? String, "admin")
        XCTAssertEqual(set?["policy"] as? String, "lww")
        XCTAssertEqual(set?["directory"] as? String, "team/notes")
        XCTAssertEqual((set?["commit"] as? String)?.count, 40)
        try assertRefusedWithoutChange(["put", "notes/n2", "--json", "{}"], as: bob, profile: profile, mentions: ["bob is editor", "needs admin"])
        XCTAssertEqual(try concordOK(["kinds", "set", "notes", "--writers", "admin"], as: alice, in: profile),
                       "kind notes is already lww, writers admin: unchanged")
        let json = parseJSON(try concordOK(["kinds", "add", "memo", "--policy", "append", "--writers", "viewer", "--json"], as: alice, in: profile))
            as? [String: Any]
        XCTAssertEqual(json?["directory"] as? String, "memo")
        XCTAssertEqual(try kinds(in: profile).kind(named: "memo")?.policy, .append)
    }

    func testRefusalsChangeNothing() throws {
        try concordOK(["kinds", "add", "notes", "--policy", "lww", "--writers", "user"], as: alice, in: profile)
        let refusals: [([String], TestDevice, [String])] = [
            (["kinds", "add", "mine", "--policy", "lww", "--writers", "user"], bob, ["bob is editor", "changing its kinds needs admin"]),
            (["kinds", "set", "notes", "--writers", "viewer"], bob, ["bob is editor", "needs admin"]),
            (["kinds", "add", "a b", "--policy", "lww", "--writers", "user"], alice, [#"invalid kind name "a b""#]),
            (["kinds", "add", "x", "--policy", "lww", "--writers", "user", "--directory", ".git"], alice, [#"invalid kind directory ".git""#]),
            (["kinds", "add", "x", "--policy", "lww", "--writers", "user", "--directory", "/abs"], alice, [#"invalid kind directory "/abs""#]),
            (["kinds", "add", "notes", "--policy", "lww", "--writers", "user", "--directory", "other"], alice, [#"kind "notes" already exists"#, "kinds set notes"]),
            (["kinds", "add", "words", "--policy", "lww", "--writers", "user", "--directory", "vocabulary"], alice,
             [#"directory "vocabulary" is already kind "vocabulary"'s"#, "--directory"]),
            (["kinds", "add", "old", "--policy", "lww", "--writers", "user", "--directory", "notes/old"], alice, ["lie one inside the other"]),
            (["kinds", "set", "notes", "--policy", "append"], alice, ["cannot change from lww to append", ".jsonl", ".json"]),
            (["kinds", "set", "logs", "--policy", "delete-wins"], alice, ["cannot change from append to delete-wins"]),
            (["kinds", "set", "notes", "--directory", "elsewhere"], alice, [#"keeps its directory "notes""#]),
            (["kinds", "set", "nothing", "--writers", "user"], alice, [#"unknown kind "nothing""#]),
        ]
        for (arguments, person, mentions) in refusals {
            try assertRefusedWithoutChange(arguments, as: person, profile: profile, mentions: mentions)
        }
    }

    /// Usage errors: one line naming the choices, exit 2, nothing changed.
    func testBadPolicyWritersOrNothingToSet() throws {
        let cases: [([String], String)] = [
            (["kinds", "add", "x", "--policy", "newest", "--writers", "user"], #"--policy must be lww, delete-wins or append, not "newest""#),
            (["kinds", "add", "x", "--policy", "lww", "--writers", "owner"], #"--writers must be viewer, user, editor or admin, not "owner""#),
            (["kinds", "set", "vocabulary", "--policy", "LWW"], #"--policy must be lww, delete-wins or append, not "LWW""#),
            (["kinds", "set", "vocabulary"], #"give --policy, --writers or both: what to change about kind "vocabulary""#),
        ]
        for (arguments, expected) in cases {
            let before = try snapshot(profile)
            let result = try concord(arguments, as: alice, in: profile)
            XCTAssertEqual(result.status, 2, result.summary)
            XCTAssertEqual(result.stderr, "concord: \(expected)\n", result.summary)
            XCTAssertEqual(result.stdout, "")
            XCTAssertEqual(try snapshot(profile), before)
        }
        let missing = try concord(["kinds", "add", "x", "--policy", "lww"], as: alice, in: profile)
        XCTAssertEqual(missing.status, 2, missing.summary)
        XCTAssertTrue(missing.stderr.contains("--writers"), missing.summary)
        for command in [["kinds"], ["kinds", "list"], ["kinds", "add"], ["kinds", "set"]] {
            let help = try concord(command + ["--help"], as: nil)
            XCTAssertEqual(help.status, 0, help.summary)
            XCTAssertTrue(help.stdout.contains("USAGE: concord kinds"), help.stdout)
        }
        XCTAssertTrue(try concord(["--help"], as: nil).stdout.contains("kinds"), "concord --help lists kinds")
    }
}
