import Foundation
import XCTest

@testable import ConcordModel

final class KindsTableTests: XCTestCase {
    func testKindValidation() throws {
        let kind = try RecordKind(name: "notes", policy: .lww, writers: .editor)
        XCTAssertEqual(kind.directory, "notes")
        XCTAssertEqual(try RecordKind(name: "n", directory: "a/b-c/d_e", policy: .append, writers: .user).directory, "a/b-c/d_e")
        XCTAssertEqual(modelError { () throws(ModelError) in try RecordKind(name: "a b", policy: .lww, writers: .user) }, .invalidKindName("a b"))
        for bad in ["", "/a", "a/", "a//b", ".git", "a/.hidden", "..", "a/../b", "a b", ".concord/x", "a\\b"] {
            XCTAssertEqual(
                modelError { () throws(ModelError) in try RecordKind(name: "n", directory: bad, policy: .lww, writers: .user) },
                .invalidDirectory(bad), bad)
        }
        XCTAssertEqual(
            modelError { () throws(ModelError) in try RecordKind(name: ".x", policy: .lww, writers: .user) },
            .invalidDirectory(".x"))
    }

    func testCanonicalFileAndRoundTrip() throws {
        let table = try KindsTable([
            RecordKind(name: "logs", policy: .append, writers: .user),
            RecordKind(name: "b", directory: "data/b", policy: .deleteWins, writers: .admin),
        ])
        XCTAssertEqual(table.kinds.map(\.name), ["b", "logs"])
        XCTAssertEqual(
            text(table.canonicalBytes()),
            """
            {
              "formatVersion": 1,
              "kinds": [
                {
                  "directory": "data/b",
                  "name": "b",
                  "policy": "delete-wins",
                  "writers": "admin"
                },
                {
                  "directory": "logs",
                  "name": "logs",
                  "policy": "append",
                  "writers": "user"
                }
              ]
            }

            """)
        XCTAssertEqual(try KindsTable.decode(table.canonicalBytes()), table)
        for template in Template.allCases {
            XCTAssertEqual(try KindsTable.decode(template.kinds.canonicalBytes()), template.kinds)
        }
    }

    func testDecodeErrors() {
        func reason(_ json: String) -> String? {
            guard case .malformedKindsFile(let why) = modelError({ () throws(ModelError) in try KindsTable.decode(Array(json.utf8)) })
            else { return nil }
            return why
        }
        XCTAssertEqual(reason(#"{"formatVersion": 2, "kinds": []}"#), "formatVersion 2 is newer than this concord understands; upgrade concord")
        XCTAssertEqual(reason(#"{"kinds": []}"#), "\"formatVersion\" must be an integer")
        XCTAssertEqual(reason(#"{"formatVersion": 1}"#), "\"kinds\" must be an array")
        XCTAssertEqual(reason(#"{"formatVersion": 1, "kinds": [], "x": 1}"#), "unknown field \"x\"")
        // Several unknown fields: the first in byte order, every time (each decode builds its own
        // dictionary, whose order differs; the check of a fetched commit must say the same twice).
        let unknown = ["updatedBy", "zeta", "data", "m", "k", "y", "c", "x", "w", "Q"].map { "\"\($0)\": 1" }.joined(separator: ", ")
        for _ in 0..<20 {
            XCTAssertEqual(reason(#"{"formatVersion": 1, "kinds": [], "# + unknown + "}"), "unknown field \"Q\"")
            XCTAssertEqual(reason(#"{"formatVersion": 1, "kinds": [{"name": "a", "policy": "lww", "writers": "user", "# + unknown + "}]}"),
                           "kinds[0] has unknown field \"Q\"")
        }
        XCTAssertEqual(reason("[]"), "the top level must be an object")
        XCTAssertEqual(reason(#"{"formatVersion": 1, "kinds": [{"name": "a", "policy": "lww", "writers": "god"}]}"#),
                       "kinds[0].writers must be one of viewer, user, editor, admin")
        XCTAssertEqual(reason(#"{"formatVersion": 1, "kinds": [{"name": "a", "policy": "merge", "writers": "user"}]}"#),
                       "kinds[0].policy must be one of lww, append, delete-wins")
        XCTAssertEqual(
            reason(#"{"formatVersion": 1, "kinds": [{"name": "a", "policy": "lww", "writers": "user"}, {"name": "a", "directory": "z", "policy": "lww", "writers": "user"}]}"#),
            "kind \"a\" is defined twice")
        XCTAssertEqual(
            reason(#"{"formatVersion": 1, "kinds": [{"name": "a", "policy": "lww", "writers": "user"}, {"name": "b", "directory": "a", "policy": "lww", "writers": "user"}]}"#),
            "directory \"a\" is used by two kinds")
        XCTAssertTrue(reason("{")?.hasPrefix("invalid JSON at line 1, column 2") ?? false)
        // A missing directory defaults to the name.
        XCTAssertEqual(
            try KindsTable.decode(Array(#"{"formatVersion": 1, "kinds": [{"name": "a", "policy": "lww", "writers": "Editor"}]}"#.utf8)).kinds.first?.directory,
            "a")
    }

    func testKindForPath() throws {
        let table = try KindsTable([
            RecordKind(name: "vocabulary", policy: .lww, writers: .editor),
            RecordKind(name: "logs", policy: .append, writers: .user),
            RecordKind(name: "deep", directory: "a/b", policy: .lww, writers: .user),
        ])
        // Records sit in a bucket directory below their kind's directory (data format 2).
        let hit = table.kind(forPath: RecordPaths.file(directory: "vocabulary", id: "x"))
        XCTAssertEqual(hit?.0.name, "vocabulary")
        XCTAssertEqual(hit?.fileName, "x.json")
        XCTAssertEqual(table.kind(forPath: "logs/2026-01-01.jsonl")?.fileName, "2026-01-01.jsonl")
        XCTAssertEqual(table.kind(forPath: "a/b/0f/r.json")?.0.name, "deep")
        XCTAssertNil(table.kind(forPath: "a/b/r.json"), "format 1's flat layout is not a record path")
        XCTAssertNil(table.kind(forPath: "vocabulary/x.json"))
        XCTAssertNil(table.kind(forPath: "a/r.json"))
        XCTAssertNil(table.kind(forPath: "vocabulary/sub/x.json"), "not a bucket name")
        XCTAssertNil(table.kind(forPath: "vocabulary/AB/x.json"), "buckets are lower-case hex")
        XCTAssertNil(table.kind(forPath: "logs/00/2026-01-01.jsonl"), "log files sit directly in their directory")
        XCTAssertNil(table.kind(forPath: "x.json"))
        XCTAssertNil(table.kind(forPath: "vocabulary/"))
        XCTAssertNil(table.kind(forPath: "other/x.json"))
        XCTAssertEqual(table.kind(named: "logs")?.policy, .append)
        XCTAssertNil(table.kind(named: "nope"))
    }

    func testNestedKindDirectoriesAreRefused() {
        let error = modelError { () throws(ModelError) in
            _ = try KindsTable([
                RecordKind(name: "vocabulary", policy: .lww, writers: .editor),
                RecordKind(name: "sneaky", directory: "vocabulary/3f", policy: .lww, writers: .editor),
            ])
        }
        XCTAssertTrue("\(String(describing: error))".contains("lies inside"), "\(String(describing: error))")
    }

    func testAdding() throws {
        let table = try Template.recipes.kinds.adding(RecordKind(name: "menus", policy: .lww, writers: .editor))
        XCTAssertEqual(table.kinds.map(\.name), ["categories", "menus", "recipes"])
        XCTAssertNotNil(modelError { () throws(ModelError) in
            try table.adding(RecordKind(name: "menus", directory: "m2", policy: .lww, writers: .editor))
        })
    }

    func testGitattributes() {
        XCTAssertEqual(
            Template.aac.kinds.gitattributes(),
            """
            # Generated by concord from .concord/kinds.json; do not edit.
            logs/*.jsonl merge=concord
            settings/*/*.json merge=concord
            vocabulary/*/*.json merge=concord
            .concord/kinds.json merge=concord
            .concord/members/*.json merge=concord
            .gitattributes merge=concord

            """)
        XCTAssertTrue(Template.screenplay.kinds.gitattributes().contains("scenes/*/*.json merge=concord\n"))
    }

    func testTemplates() {
        func summary(_ t: Template) -> [String] {
            t.kinds.kinds.map { "\($0.name):\($0.directory):\($0.policy.rawValue):\($0.writers.rawValue)" }
        }
        XCTAssertEqual(Template.allCases.map(\.rawValue), ["blank", "aac", "screenplay", "recipes", "sessions", "personal"])
        XCTAssertEqual(summary(.blank), [])
        XCTAssertEqual(Template.blank.kinds, .empty)
        XCTAssertEqual(summary(.aac), ["logs:logs:append:user", "settings:settings:lww:admin", "vocabulary:vocabulary:lww:editor"])
        XCTAssertEqual(
            summary(.screenplay),
            ["characters:characters:lww:editor", "comments:comments:append:viewer", "scenes:scenes:delete-wins:editor"])
        XCTAssertEqual(summary(.recipes), ["categories:categories:lww:editor", "recipes:recipes:lww:editor"])
        XCTAssertEqual(
            summary(.sessions),
            ["messages:messages:append:user", "participants:participants:lww:user", "sessions:sessions:lww:admin"])
        XCTAssertEqual(summary(.personal), ["profile:profile:lww:admin"])
        // Template kinds pass the same validation as user-defined ones.
        for template in Template.allCases {
            for kind in template.kinds.kinds {
                XCTAssertEqual(try? RecordKind(name: kind.name, policy: kind.policy, writers: kind.writers), kind)
            }
        }
    }

    func testCodable() throws {
        let kind = try RecordKind(name: "scenes", policy: .deleteWins, writers: .editor)
        let data = try JSONEncoder().encode(kind)
        XCTAssertEqual(try JSONDecoder().decode(RecordKind.self, from: data), kind)
        let bad = Data(#"{"name":"a b","policy":"lww","writers":"user"}"#.utf8)
        XCTAssertThrowsError(try JSONDecoder().decode(RecordKind.self, from: bad))
    }
}

/// The bucket of a record id is fixed by the data format: other implementations must agree.
final class RecordPathsTests: XCTestCase {
    func testBucketsAreTheLowByteOfFNV1a() {
        // FNV-1a 32-bit reference values: "" → 0x811c9dc5, "a" → 0xe40c292c, "foobar" → 0xbf9cf968.
        XCTAssertEqual(RecordPaths.bucket(""), "c5")
        XCTAssertEqual(RecordPaths.bucket("a"), "2c")
        XCTAssertEqual(RecordPaths.bucket("foobar"), "68")
        XCTAssertEqual(RecordPaths.file(directory: "vocabulary", id: "foobar"), "vocabulary/68/foobar.json")
    }

    func testTenThousandIdsSpreadOverAllBuckets() {
        var counts = [String: Int]()
        for number in 0..<10_000 { counts[RecordPaths.bucket("w\(number)"), default: 0] += 1 }
        XCTAssertEqual(counts.count, 256)
        XCTAssertLessThan(counts.values.max()!, 80, "about 39 per bucket expected")
        XCTAssertTrue(counts.keys.allSatisfy { RecordPaths.isBucket($0) })
    }
}
