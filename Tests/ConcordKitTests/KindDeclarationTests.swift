import ConcordTestSupport
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Kinds an app declares (`ConcordStore.open(… kinds:)`) and an Admin's changes of kinds
/// (`Records.addKinds`, `setKind`): one signed commit of `.concord/kinds.json` with its
/// `.gitattributes`, every refusal changing nothing, and every device accepting the change.
final class KindDeclarationTests: KitTestCase {
    private let notes = Kind("notes", policy: .lastWriterWins, writers: .editor, indexed: ["page"])
    private let diary = Kind("diary", directory: "journal/days", policy: .append, writers: .user)

    /// The bytes of `path` in the profile's working tree.
    private func file(_ path: String, in root: URL) throws -> [UInt8] {
        Array(try Data(contentsOf: root.appendingPathComponent(path)))
    }

    /// HEAD, kinds.json and .gitattributes: what a refusal must leave as it was.
    private func state(_ root: URL) throws -> [String] {
        [try gitOK(["rev-parse", "HEAD"], in: root), String(decoding: try file(KindsTable.path, in: root), as: UTF8.self),
         String(decoding: try file(".gitattributes", in: root), as: UTF8.self), try gitOK(["status", "--porcelain"], in: root)]
    }

    /// `kinds.json` and `.gitattributes` in `root` are what `table` generates, byte for byte.
    private func assertFiles(_ root: URL, match table: KindsTable, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try self.file(KindsTable.path, in: root), table.canonicalBytes(), file: file, line: line)
        XCTAssertEqual(try self.file(".gitattributes", in: root), Array(table.gitattributes().utf8), file: file, line: line)
    }

    func testOpeningAStoreRegistersTheMissingKindsInOneSignedCommit() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let before = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        let vocabulary = Kind("vocabulary", policy: .lastWriterWins, writers: .editor)
        let store = try ConcordStore.open(at: profile.root, identity: alice, environment: makeEnvironment(alice),
                                          kinds: [notes, diary, vocabulary])
        XCTAssertEqual(try gitOK(["rev-list", "--count", "\(before)..HEAD"], in: profile.root), "1", "one commit for all the missing kinds")
        XCTAssertEqual(try git(["verify-commit", "HEAD"], in: profile.root).status, 0, "the commit is signed")
        XCTAssertEqual(try gitOK(["show", "--format=", "--name-only", "HEAD"], in: profile.root).split(separator: "\n"),
                       [".concord/kinds.json", ".gitattributes"])
        XCTAssertEqual(store.kinds.kinds.map(\.name), ["diary", "logs", "notes", "settings", "vocabulary"])
        XCTAssertEqual(store.kinds.kind(named: "diary")?.directory, "journal/days")
        XCTAssertEqual(store.declaredKinds, [notes, diary, vocabulary])
        XCTAssertEqual(try KindsTable.decode(try file(KindsTable.path, in: profile.root)), store.kinds)
        try assertFiles(profile.root, match: store.kinds)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile.root), "")
        XCTAssertTrue(try gitOK(["log", "-1", "--format=%s"], in: profile.root).contains("records: added"))

        // The new kinds are written at once, and the indexed fields stay out of the profile.
        try store.write { try $0.put("notes", "n1", data: ["page": JSONValue(3)]) }
        try store.write { _ = try $0.append("diary", data: ["text": "hello"]) }
        XCTAssertEqual(try store.read { try $0.get("notes", "n1").data?["page"] }, JSONValue(3))
        XCTAssertFalse(String(decoding: try file(KindsTable.path, in: profile.root), as: UTF8.self).contains("indexed"))

        // Opened again with the same kinds: nothing to register, no commit.
        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        _ = try ConcordStore.open(at: profile.root, identity: alice, environment: makeEnvironment(alice), kinds: [notes, diary])
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head)
    }

    func testCreatingAStoreWithKinds() throws {
        let alice = try makeIdentity()
        let directory = sandbox.appendingPathComponent("created")
        let store = try ConcordStore.create(at: directory, name: "Created", template: .blank, identity: alice,
                                            environment: makeEnvironment(alice), kinds: [notes])
        XCTAssertEqual(store.kinds.kinds.map(\.name), ["notes"])
        XCTAssertEqual(try gitOK(["rev-list", "--count", "HEAD"], in: directory), "2")
        try assertFiles(directory, match: store.kinds)

        // A declaration refused before anything is made.
        let refused = sandbox.appendingPathComponent("refused")
        let error = concordError {
            try ConcordStore.create(at: refused, name: "R", template: .aac, identity: alice, environment: makeEnvironment(alice),
                                    kinds: [Kind("logbook", directory: "logs", policy: .lww, writers: .editor)])
        }
        XCTAssertTrue(error?.localizedDescription.contains(#"directory "logs" is already kind "logs"'s"#) == true, "\(String(describing: error))")
        XCTAssertFalse(FileManager.default.fileExists(atPath: refused.path), "nothing created")
    }

    func testANonAdminWithMissingKindsIsToldAnAdminMustOpenItAndNothingChanges() throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "phone")
        let profile = try makeProfile(identity: alice)
        try profile.members.add("bob", role: .editor, device: "phone", key: bob.key.publicKey, as: alice)
        let before = try state(profile.root)
        let error = concordError {
            try ConcordStore.open(at: profile.root, identity: bob, environment: makeEnvironment(bob), kinds: [notes, diary])
        }
        XCTAssertEqual(error, .kindsNeedAdmin(missing: ["notes", "diary"], member: "bob", role: .editor))
        XCTAssertTrue(error?.localizedDescription.contains("an Admin must open the profile with this app once") == true)
        XCTAssertEqual(try state(profile.root), before)

        // Kinds the profile has (even otherwise) open for anyone.
        let store = try ConcordStore.open(at: profile.root, identity: bob, environment: makeEnvironment(bob),
                                          kinds: [Kind("vocabulary", policy: .deleteWins, writers: .editor)])
        XCTAssertEqual(store.kindDifferences("vocabulary"), ["policy is lww in the profile, delete-wins here"])
        XCTAssertEqual(try state(profile.root), before)
    }

    func testAKindTheProfileHasOtherwiseOpensUnchangedAndItsDifferencesAreNamed() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let before = try state(profile.root)
        let declared = Kind("vocabulary", directory: "words", policy: .deleteWins, writers: .admin)
        let store = try ConcordStore.open(at: profile.root, identity: alice, environment: makeEnvironment(alice), kinds: [declared])
        XCTAssertEqual(try state(profile.root), before, "never a silent change of the profile")
        XCTAssertEqual(store.kinds.kind(named: "vocabulary")?.policy, .lww)
        XCTAssertEqual(store.kindDifferences("vocabulary"), [
            "directory is vocabulary in the profile, words here", "policy is lww in the profile, delete-wins here",
            "writers are editor in the profile, admin here",
        ])
        XCTAssertEqual(store.kindDifferences("settings"), [], "not declared")
        XCTAssertEqual(store.kindDifferences("nothing"), [])
    }

    func testDeclarationsThatAreRefused() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let before = try state(profile.root)
        func open(_ kinds: [Kind]) -> ConcordError? {
            concordError { try ConcordStore.open(at: profile.root, identity: alice, environment: makeEnvironment(alice), kinds: kinds) }
        }
        let cases: [([Kind], String)] = [
            ([Kind("a b", policy: .lww, writers: .editor)], #"invalid kind name "a b""#),
            ([Kind("notes", directory: ".hidden", policy: .lww, writers: .editor)], #"invalid kind directory ".hidden""#),
            ([Kind("notes", directory: "a//b", policy: .lww, writers: .editor)], #"invalid kind directory "a//b""#),
            ([Kind("notes", directory: "vocabulary", policy: .lww, writers: .editor)], #"directory "vocabulary" is already kind "vocabulary"'s"#),
            ([Kind("notes", directory: "vocabulary/old", policy: .lww, writers: .editor)], "lie one inside the other"),
            ([notes, Kind("notes", policy: .deleteWins, writers: .editor)], #"kind "notes" is declared twice, differently"#),
            ([notes, Kind("memo", directory: "notes", policy: .lww, writers: .editor)], #"directory "notes" is already kind "notes"'s"#),
        ]
        for (kinds, expected) in cases {
            let error = open(kinds)
            XCTAssertTrue(error?.localizedDescription.contains(expected) == true, "\(expected): \(String(describing: error))")
            XCTAssertEqual(try state(profile.root), before, expected)
        }
        // The same kind declared twice alike is one kind.
        let store = try ConcordStore.open(at: profile.root, identity: alice, environment: makeEnvironment(alice), kinds: [notes, notes])
        XCTAssertEqual(store.kinds.kind(named: "notes")?.policy, .lww)
    }

    func testAddAndSetByAnAdminAndTheirRefusals() throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "phone")
        let profile = try makeProfile(identity: alice)
        try profile.members.add("bob", role: .editor, device: "phone", key: bob.key.publicKey, as: alice)
        let memo = try RecordKind(name: "memo", policy: .lww, writers: .user)
        let added = try profile.records.addKinds([memo], as: alice)
        XCTAssertNotNil(added.commit)
        XCTAssertEqual(added.changes.map(\.reference), ["kinds/memo"])
        XCTAssertEqual(profile.kinds.kind(named: "memo"), memo, "the profile reads the new table at once")
        try assertFiles(profile.root, match: profile.kinds)

        let set = try profile.records.setKind(name: "memo", policy: .deleteWins, writers: .editor, as: alice)
        XCTAssertEqual(set.value, try RecordKind(name: "memo", policy: .deleteWins, writers: .editor))
        XCTAssertEqual(profile.kinds.kind(named: "memo")?.policy, .deleteWins)
        try assertFiles(profile.root, match: profile.kinds)
        XCTAssertNil(try profile.records.setKind(name: "memo", writers: .editor, as: alice).commit, "nothing to change: no commit")
        XCTAssertEqual(try profile.records.setKind(name: "memo", writers: .user, directory: "memo", as: alice).value.writers, .user)

        let before = try state(profile.root)
        let refusals: [(String, () throws -> Any)] = [
            (#"kind "memo" already exists"#, { try profile.records.addKinds([try RecordKind(name: "memo", directory: "other", policy: .lww, writers: .user)], as: alice) }),
            (#"directory "memo" is already kind "memo"'s"#, { try profile.records.addKinds([try RecordKind(name: "memo2", directory: "memo", policy: .lww, writers: .user)], as: alice) }),
            ("lie one inside the other", { try profile.records.addKinds([try RecordKind(name: "sub", directory: "memo/sub", policy: .lww, writers: .user)], as: alice) }),
            ("lie one inside the other", { try profile.records.addKinds([try RecordKind(name: "top", directory: "top", policy: .lww, writers: .user),
                                                                         try RecordKind(name: "under", directory: "top/under", policy: .lww, writers: .user)], as: alice) }),
            ("a log kind (append) keeps one .jsonl file per day", { try profile.records.setKind(name: "memo", policy: .append, as: alice) }),
            ("cannot change from append to lww", { try profile.records.setKind(name: "logs", policy: .lww, as: alice) }),
            (#"keeps its directory "memo""#, { try profile.records.setKind(name: "memo", directory: "elsewhere", as: alice) }),
            (#"unknown kind "nothing""#, { try profile.records.setKind(name: "nothing", writers: .user, as: alice) }),
            ("give what to change", { try profile.records.setKind(name: "memo", as: alice) }),
            ("bob is editor", { try profile.records.addKinds([try RecordKind(name: "mine", policy: .lww, writers: .user)], as: bob) }),
            ("changing its kinds needs admin", { try profile.records.setKind(name: "memo", writers: .viewer, as: bob) }),
        ]
        for (expected, body) in refusals {
            let error = concordError { try body() }
            XCTAssertTrue(error?.localizedDescription.contains(expected) == true, "\(expected): \(String(describing: error))")
            XCTAssertEqual(try state(profile.root), before, expected)
        }
        guard case .notAllowed(let member, let role, _, let needs, _, _)? = concordError({ try profile.records.setKind(name: "memo", writers: .viewer, as: bob) }) else {
            return XCTFail("a non-Admin gets notAllowed")
        }
        XCTAssertEqual([member, role.rawValue, needs.rawValue], ["bob", "editor", "admin"])
        XCTAssertEqual(profile.kinds.kind(named: "memo")?.writers, .user, "a refusal leaves the profile's table as it was")
    }
}
