import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Creating, opening and writing profiles through the Swift API.
final class ProfileTests: KitTestCase {
    func testCreateThenOpen() throws {
        let alice = try makeIdentity()
        let created = try makeProfile(identity: alice)
        XCTAssertEqual(created.info.name, "Test profile")
        XCTAssertEqual(created.info.formatVersion, concordFormatVersion)
        XCTAssertEqual(created.info.createdAt, "2026-01-01T10:00:00.001Z")

        let opened = try Profile.open(at: created.root, environment: makeEnvironment(alice))
        XCTAssertEqual(opened.info, created.info)
        XCTAssertEqual(opened.kinds.kinds.map(\.name), ["logs", "settings", "vocabulary"])
        XCTAssertEqual(opened.kinds.kind(named: "logs")?.policy, .append)
        let members = try opened.members.list()
        XCTAssertEqual(members.map(\.name), ["alice"])
        XCTAssertEqual(members.first?.role, .admin)
        XCTAssertEqual(members.first?.status, .active)
        XCTAssertEqual(members.first?.keys.map(\.publicKey), [alice.key.publicKey])
        XCTAssertEqual(members.first?.keys.map(\.device), ["laptop"])

        // The first commit is signed, verified by git, and the tree is clean.
        XCTAssertEqual(try git(["verify-commit", "HEAD"], in: created.root).status, 0)
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: created.root), "")
        XCTAssertEqual(try gitOK(["log", "--format=%(trailers:key=Concord-Action,valueonly)"], in: created.root), "created")
        XCTAssertEqual(try gitOK(["ls-tree", "-r", "--name-only", "HEAD"], in: created.root).split(separator: "\n"),
                       [".concord/kinds.json", ".concord/members/alice.json", ".concord/profile.json", ".gitattributes"])
    }

    func testOpenRefusals() throws {
        let alice = try makeIdentity()
        let empty = sandbox.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        guard case .notAProfile(let path)? = concordError({ try Profile.open(at: empty, environment: makeEnvironment(alice)) }) else {
            return XCTFail("expected notAProfile")
        }
        XCTAssertEqual(path, empty.path)

        let profile = try makeProfile(identity: alice)
        let file = profile.root.appendingPathComponent(".concord/profile.json")
        let text = try String(contentsOf: file, encoding: .utf8)
        try Data(text.replacingOccurrences(of: #""formatVersion": \#(concordFormatVersion)"#, with: #""formatVersion": 99"#).utf8).write(to: file)
        XCTAssertEqual(concordError { try Profile.open(at: profile.root, environment: makeEnvironment(alice)) },
                       .newerFormat(found: 99, supported: concordFormatVersion))

        XCTAssertEqual(concordError { try makeProfile(identity: alice) }, .profileExists(profile.root.path))
    }

    func testManyRecordsInOneCommit() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let before = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        let result = try profile.records.write(as: alice) { tx in
            for index in 0..<150 {
                try tx.put("vocabulary", "w\(index)", data: ["n": JSONValue(index)])
            }
            try tx.put("settings", "voice", data: ["rate": .number("1.25")])
            return tx.changes.count
        }
        XCTAssertEqual(result.value, 151)
        XCTAssertEqual(result.changes.count, 151)
        XCTAssertEqual(Set(result.changes.map(\.action)), [.added])
        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        XCTAssertEqual(result.commit, head)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD~1"], in: profile.root), before, "one commit for the whole transaction")
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Record-Count,valueonly)"], in: profile.root), "151")
        XCTAssertEqual(try git(["verify-commit", head], in: profile.root).status, 0)
        XCTAssertEqual(try git(["fsck", "--full"], in: profile.root).status, 0)
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile.root), "")

        let listing = try profile.records.list(kind: "vocabulary")
        XCTAssertEqual(listing.items.count, 150)
        XCTAssertEqual(listing.warnings, [])
        XCTAssertEqual(try profile.records.get("vocabulary", "w42").data, ["n": JSONValue(42)])
        XCTAssertEqual(try profile.records.get("settings", "voice").data?["rate"], .number("1.25"))

        // The file on disk is the record's canonical encoding.
        let bytes = try Data(contentsOf: profile.root.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "w7"))"))
        XCTAssertEqual(Array(bytes), try profile.records.get("vocabulary", "w7").encoded())
    }

    /// The batch `put` (records encoded on every core) writes exactly what one `put` per record
    /// writes: same stamps, same bytes, same changes, with unchanged, updated and repeated records.
    func testBatchPutWritesWhatSinglePutsWrite() throws {
        let alice = try makeIdentity()
        var items = [(kind: String, id: String, data: [String: JSONValue])]()
        for index in 0..<600 { items.append(("vocabulary", "w\(index)", ["n": JSONValue(index)])) }
        items.append(("vocabulary", "seed-3", ["n": JSONValue(3)]))          // unchanged
        items.append(("vocabulary", "seed-4", ["n": JSONValue(-4)]))         // updated
        items.append(("settings", "voice", ["rate": .number("1.25")]))
        items.append(("vocabulary", "w7", ["n": JSONValue(700)]))           // repeated: the last one wins
        items.append(("vocabulary", "w8", ["n": JSONValue(800)]))

        var trees = [String]()
        var changes = [[RecordChange]]()
        for (name, batch) in [("batch", true), ("single", false)] {
            let profile = try makeProfile(name, identity: alice, clock: ManualClock("2026-01-01T10:00:00.001Z"))
            try profile.records.write(as: alice) { tx in
                for index in 0..<10 { try tx.put("vocabulary", "seed-\(index)", data: ["n": JSONValue(index)]) }
            }
            let result = try profile.records.write(as: alice) { tx in
                if batch { try tx.put(items) } else { for item in items { try tx.put(item.kind, item.id, data: item.data) } }
            }
            changes.append(result.changes)
            trees.append(try gitOK(["rev-parse", "HEAD:vocabulary"], in: profile.root) + " " + (try gitOK(["rev-parse", "HEAD:settings"], in: profile.root)))
            XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile.root), "", name)
            XCTAssertEqual(try profile.records.get("vocabulary", "w7").data, ["n": JSONValue(700)], name)
        }
        XCTAssertEqual(trees[0], trees[1])
        XCTAssertEqual(changes[0], changes[1])
        XCTAssertEqual(changes[0].count, 600 + 2 + 2, "600 new, seed-4, voice, and w7 and w8 again")
        XCTAssertFalse(changes[0].contains { $0.id == "seed-3" }, "an unchanged record is not a change")
    }

    func testReadsInsideATransactionSeePendingWrites() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        try profile.records.write(as: alice) { tx in
            XCTAssertNil(try tx.record("vocabulary", "a"))
            try tx.put("vocabulary", "a", data: ["v": 1])
            XCTAssertEqual(try tx.record("vocabulary", "a")?.data, ["v": 1])
            try tx.put("vocabulary", "a", data: ["v": 2])
            try tx.delete("vocabulary", "a")
            XCTAssertEqual(try tx.record("vocabulary", "a")?.isDeleted, true)
        }
        XCTAssertEqual(concordError { try profile.records.get("vocabulary", "a") }, .recordNotFound("vocabulary/a"))
    }

    func testFailedOrEmptyWriteCommitsNothing() throws {
        struct Stop: Error {}
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        XCTAssertThrowsError(try profile.records.write(as: alice) { tx in
            try tx.put("vocabulary", "half", data: ["x": 1])
            throw Stop()
        })
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head)
        XCTAssertFalse(FileManager.default.fileExists(atPath: profile.root.appendingPathComponent("\(RecordPaths.file(directory: "vocabulary", id: "half"))").path))

        let empty = try profile.records.write(as: alice) { _ in 7 }
        XCTAssertNil(empty.commit)
        XCTAssertEqual(empty.value, 7)

        try profile.records.write(as: alice) { try $0.put("vocabulary", "same", data: ["x": 1]) }
        let head2 = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        let unchanged = try profile.records.write(as: alice) { try $0.put("vocabulary", "same", data: ["x": 1]) }
        XCTAssertNil(unchanged.commit, "writing the data a record already has changes nothing")
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head2)
    }

    func testWriteRebuildsOnTopOfAMovedBranch() throws {
        // A plain git commit lands on the branch behind concord's back; the next write builds on it.
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        try Data("hello\n".utf8).write(to: profile.root.appendingPathComponent("README"))
        try gitOK(["add", "README"], in: profile.root)
        try gitOK(["-c", "user.name=Git", "-c", "user.email=git@example.com", "-c", "commit.gpgsign=false",
                   "commit", "-q", "-m", "readme"], in: profile.root)
        let gitCommit = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "after", data: [:]) }
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD~1"], in: profile.root), gitCommit)
        XCTAssertEqual(try gitOK(["ls-tree", "--name-only", "HEAD", "README"], in: profile.root), "README")
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile.root), "")
    }

    func testRoles() throws {
        let alice = try makeIdentity()
        let bob = try makeIdentity("bob", device: "phone")
        let profile = try makeProfile(identity: alice)
        let refusal = concordError({ try profile.records.write(as: bob) { try $0.put("vocabulary", "x", data: [:]) } })
        guard case .notAMember(member: "bob", profile: _)? = refusal else { return XCTFail("expected a refusal: \(String(describing: refusal))") }
        let message = refusal?.localizedDescription ?? ""
        XCTAssertTrue(message.contains("bob") && message.contains("not an active member"), message)

        // An admin adds bob as a "user": he may append to logs (writers: user) but not edit vocabulary (editor).
        try profile.members.add("bob", role: .user, device: "phone", key: bob.key.publicKey, as: alice)
        XCTAssertEqual(try profile.members.list().first { $0.name == "bob" }?.role, .user)
        guard case .notAllowed(member: "bob", role: .user, action: _, needs: .admin, profile: _, actingOn: nil)? = concordError({
            try profile.members.add("bob", role: .admin, device: "phone", key: bob.key.publicKey, as: bob)
        }) else { return XCTFail("only admins may change members") }
        try profile.records.write(as: bob) { try $0.append("logs", data: ["tap": "x"]) }
        let roleRefusal = concordError({ try profile.records.write(as: bob) { try $0.put("vocabulary", "x", data: [:]) } })
        guard case .notAllowed(member: "bob", role: .user, action: "writing vocabulary", needs: .editor, profile: _, actingOn: nil)? = roleRefusal else {
            return XCTFail("expected a refusal: \(String(describing: roleRefusal))")
        }
        let roleMessage = roleRefusal?.localizedDescription ?? ""
        XCTAssertTrue(roleMessage.contains("user") && roleMessage.contains("editor"), roleMessage)
        // git accepts bob's commit as bob's: the allowed-signers file follows the members.
        XCTAssertEqual(try gitOK(["log", "--format=%an %G?"], in: profile.root).split(separator: "\n").first, "bob G")
    }

    func testRefusesAnIdentityWhoseKeyIsNotTheMembers() throws {
        // Same member name as the admin, different key: the engine must not sign commits as "alice" with it.
        let alice = try makeIdentity("alice", device: "laptop")
        let impostor = try makeIdentity("alice", device: "evil")
        let profile = try makeProfile(identity: alice)
        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        guard case .keyNotRegistered(member: "alice", fingerprint: _, profile: _)? = concordError({
            try profile.records.write(as: impostor) { try $0.put("vocabulary", "forged", data: [:]) }
        }) else { return XCTFail("an unregistered key is refused") }
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head)
    }
}
