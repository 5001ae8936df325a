import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation
import GRDB
import XCTest

@testable import ConcordKit

/// Reviewer probes (h-rev1): each prints what it found; the assertions state the expected-correct behaviour.
struct Rev1Item: Codable, Sendable, Equatable { var name: String }
struct Rev1List: ConcordRecord, Equatable {
    static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor)
    var id: String
    var items: [Rev1Item]
}

struct Rev1Named: ConcordRecord, Equatable {
    static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor)
    var id: String
    var label: String
}

final class Rev1ProbeTests: KitTestCase {
    /// A record whose data has an `id` member naming another record: typed reads and a read-modify-write.
    func testRev1DataIDMemberRedirectsTypedSave() throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("idm"), name: "I", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        _ = try store.write { transaction in
            try transaction.put("vocabulary", "other", data: ["label": .string("the real other")])
            try transaction.put("vocabulary", "puzzle", data: ["id": .string("other"), "label": .string("planted")])
        }
        let all = try store.read { try $0.fetchAll(Rev1Named.self) }
        print("REV1 typed fetchAll:", all)
        _ = try store.write { transaction in
            var value = try transaction.fetch(Rev1Named.self, id: "puzzle")!
            print("REV1 fetch(id: puzzle) ->", value)
            value.label += " (edited)"
            try transaction.save(value)
        }
        let other = try store.read { try $0.fetch(Rev1Named.self, id: "other") }
        print("REV1 other after saving puzzle:", String(describing: other))
        XCTAssertEqual(all.map(\.id).sorted(), ["other", "puzzle"])
        XCTAssertEqual(other?.label, "the real other")
    }

    /// A member names their device like alice's and writes "acting as alice": alice's feed says it is hers.
    func testRev1OriginSpoof() async throws {
        let alice = try makeIdentity(), bob = try makeIdentity("bob", device: "laptop")
        let remote = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: remote)
        let aliceStore = try ConcordStore.create(at: sandbox.appendingPathComponent("alice"), name: "Shared", template: .aac,
                                                 identity: alice, environment: makeEnvironment(alice))
        try await aliceStore.addRemote("origin", url: remote.path)
        try await aliceStore.addMember("bob", role: .editor, device: "laptop", key: bob.key.publicKey)
        _ = try await aliceStore.sync()
        let bobStore = try await ConcordStore.clone(url: remote.path, into: sandbox.appendingPathComponent("bob"), identity: bob,
                                              environment: makeEnvironment(bob))
        let start = ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory).trimmingCharacters(in: .whitespacesAndNewlines))
        let feed = Collector(aliceStore.changes(since: start))
        let bobProfile = try Profile.open(at: sandbox.appendingPathComponent("bob"), environment: makeEnvironment(bob))
        _ = try bobProfile.records.write(as: bob.acting(as: "alice")) { try $0.put("vocabulary", "planted", data: ["label": .string("x")]) }
        _ = try await bobStore.sync()
        _ = try await aliceStore.sync()
        try await feed.waitFor { $0.count == 1 }
        let change = feed.values[0].commit
        print("REV1 origin:", String(describing: change?.origin), "member:", change?.member ?? "nil", "device:", change?.device ?? "nil")
        print("REV1 log:", try gitOK(["log", "-1", "--format=%B"], in: aliceStore.directory))
        XCTAssertEqual(change?.origin, .sync, "bob's commit is reported as this device's")
    }

    /// A string with U+0000 equals its prefix in the index; a field name with a backslash is never found.
    func testRev1IndexNulAndBackslash() throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("nul"), name: "N", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        _ = try store.write { transaction in
            try transaction.put([
                (kind: "vocabulary", id: "real", data: ["label": .string("admin"), "a\\b": .number("1"), "c\nd": .number("1")]),
                (kind: "vocabulary", id: "fake", data: ["label": .string("admin\u{0}-not-really"), "a\\b": .number("2"), "c\nd": .number("2")]),
            ])
        }
        let queries = [
            IndexQuery(kind: "vocabulary", conditions: [.init("label", .equal(.string("admin")))]),
            IndexQuery(kind: "vocabulary", conditions: [.init("label", .isIn([.string("admin")]))]),
            IndexQuery(kind: "vocabulary", conditions: [.init("label", .lessOrEqual(.string("admin")))]),
            IndexQuery(kind: "vocabulary", conditions: [.init("a\\b", .equal(.number("1")))]),
            IndexQuery(kind: "vocabulary", conditions: [.init("c\nd", .equal(.number("1")))]),
        ]
        try store.read { reader in
            for query in queries {
                let indexed = try reader.query(query).map(\.id.rawValue), scanned = try reader.profile.records.scan(query).map(\.id.rawValue)
                print("REV1 query \(query.conditions.map(\.field)): index \(indexed) scan \(scanned) count \(try reader.count(query))")
                XCTAssertEqual(indexed, scanned)
            }
        }
    }

    /// The raw SQL hatch: ATTACH and parenthesised pragmas pass; their effects outlive the call.
    func testRev1SQLHatch() throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("sql"), name: "S", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        _ = try store.write { try $0.put("vocabulary", "one", data: ["label": .string("x")]) }
        let evil = sandbox.appendingPathComponent("evil.db").path
        let indexPath = try store.read { reader in
            for sql in ["PRAGMA busy_timeout(0)", "ATTACH '\(evil)' AS evil", "/* */ PRAGMA synchronous = OFF", "PRAGMA locking_mode",
                        "SELECT name, file FROM pragma_database_list", "PRAGMA busy_timeout", "PRAGMA synchronous"] {
                do { print("REV1 sql \(sql) ->", try reader.sql(sql)) } catch { print("REV1 sql \(sql) refused:", error) }
            }
            return reader.profile.index.path
        }
        print("REV1 evil.db exists:", FileManager.default.fileExists(atPath: evil))
    }

    /// An older type swaps two array elements: whose unknown members does each keep?
    func testRev1UnknownFieldsFollowPositions() throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("uf"), name: "U", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        _ = try store.write { try $0.put("vocabulary", "list", data: ["items": .array([
            .object(["name": .string("a"), "secret": .string("a's")]), .object(["name": .string("b"), "secret": .string("b's")]),
        ])]) }
        _ = try store.write { transaction in
            var list = try transaction.fetch(Rev1List.self, id: "list")!
            list.items.swapAt(0, 1)
            try transaction.save(list)
        }
        let data = try store.read { try $0.profile.records.scan(IndexQuery(kind: "vocabulary"))[0].data! }
        print("REV1 after swap:", String(decoding: JSONValue.object(data).canonicalLine(), as: UTF8.self))
        XCTAssertEqual(data["items"], .array([.object(["name": .string("b"), "secret": .string("b's")]),
                                              .object(["name": .string("a"), "secret": .string("a's")])]))
    }

    /// A value nested deeper than the parser reads is written, then cannot be read back.
    func testRev1DeepValueIsWrittenButUnreadable() throws {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("deep"), name: "D", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        var deepValue: JSONValue = .number("1")
        for _ in 0..<600 { deepValue = .array([deepValue]) }
        let deep = deepValue
        do {
            let result = try store.write { try $0.put("vocabulary", "deep", data: ["tree": deep]) }
            print("REV1 deep write committed:", result.commit ?? "nil")
        } catch { print("REV1 deep write refused:", error); return }
        try store.read { reader in
            print("REV1 deep index query:", try reader.query(IndexQuery(kind: "vocabulary")).map(\.id.rawValue))
            do { print("REV1 deep scan:", try reader.profile.records.scan(IndexQuery(kind: "vocabulary")).map(\.id.rawValue)) } catch {
                print("REV1 deep scan failed:", error)
            }
        }
    }

    func testRev1DecimalEdges() throws {
        for lexeme in ["1e200", "1e-200", "123456789012345678901234567890123456789012345", "1e99999999999999999999", "-1e-400"] {
            let started = Date()
            let value = try? JSONValueDecoder().decode(Decimal.self, from: .number(lexeme))
            print("REV1 Decimal \(lexeme) ->", value.map { "\($0)" } ?? "error", "in \(Date().timeIntervalSince(started)) s")
        }
    }

    /// A switch on alice's device (concord switch bob): the store's own writes, what origin?
    func testRev1OwnWritesWhileSwitchedAreToldAsSync() async throws {
        let (_, aliceStore, _) = try twoStores()
        let start = ChangeToken(commit: try gitOK(["rev-parse", "HEAD"], in: aliceStore.directory).trimmingCharacters(in: .whitespacesAndNewlines))
        let feed = Collector(aliceStore.changes(since: start))
        let alice = aliceStore.identity
        let aliceProfile = try Profile.open(at: aliceStore.directory, environment: makeEnvironment(alice))
        _ = try aliceProfile.members.switchActing(to: "bob", as: alice)
        try await aliceStore.write { try $0.put("vocabulary", "mine", data: ["label": .string("x")]) }
        try await feed.waitFor { $0.contains { $0.commit?.records.contains { $0.id == "mine" } == true } }
        for event in feed.values { print("REV1 switched:", event.commit?.summary ?? "", String(describing: event.commit?.origin), event.commit?.member ?? "nil") }
        XCTAssertEqual(feed.values.last?.commit?.origin, .thisDevice, "a write made by this store is told as a sync")
    }

    /// Two Admins change one kind at once: one restricts its writers, the other its policy.
    func testRev1ConcurrentKindSetsMerge() throws {
        let base = try KindsTable([RecordKind(name: "notes", policy: .deleteWins, writers: .user)])
        let ours = try KindsTable([RecordKind(name: "notes", policy: .deleteWins, writers: .admin)])    // lock it down
        let theirs = try KindsTable([RecordKind(name: "notes", policy: .lww, writers: .user)])          // change its policy
        let outcome = RecordMerge.mergeKindsFile(base: base.canonicalBytes(), ours: ours.canonicalBytes(), theirs: theirs.canonicalBytes())
        if case .merged(let bytes, let conflicts) = outcome {
            print("REV1 kinds merge:", String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\n", with: " "), "conflicts:", conflicts)
            let kind = try KindsTable.decode(bytes).kind(named: "notes")
            XCTAssertEqual(kind?.writers, .admin, "the lock-down was dropped")
        } else { print("REV1 kinds merge:", outcome) }
        let writersOnly = RecordMerge.mergeKindsFile(base: base.canonicalBytes(), ours: ours.canonicalBytes(),
                                                     theirs: try KindsTable([RecordKind(name: "notes", policy: .deleteWins, writers: .viewer)]).canonicalBytes())
        print("REV1 kinds merge admin vs viewer:", writersOnly)
    }
}
