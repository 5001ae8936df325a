import XCTest
@testable import ConcordModel
import ConcordTestSupport

final class ProfilePathRulesTests: XCTestCase {
    /// The record shortcut (`recordInItsBucket`) answers exactly as the general classification,
    /// over generated paths: records in their buckets and in others, odd components, documents,
    /// logs, and a log kind whose directory looks like a record kind's bucket directory.
    func testTheRecordShortcutClassifiesAsTheGeneralRule() throws {
        let kinds = try KindsTable.decode(Array("""
        {"formatVersion":1,"kinds":[
          {"directory":"vocabulary","name":"vocabulary","policy":"lww","writers":"editor"},
          {"directory":"a/b","name":"nested","policy":"lww","writers":"editor"},
          {"directory":"scenes","name":"scenes","policy":"delete-wins","writers":"editor"},
          {"directory":"logs","name":"logs","policy":"append","writers":"user"},
          {"directory":"journal/0c","name":"odd","policy":"append","writers":"user"}]}
        """.utf8))
        var generator = SeededGenerator(seed: 20261125)
        let directories = ["vocabulary", "a/b", "scenes", "logs", "journal/0c", "journal", "other", ".concord", "a", "vocabulary/x", ""]
        let ids = ["w1", "w009790", ".", "..", "a.b", "-", "x y", "é", String(repeating: "z", count: 128), String(repeating: "z", count: 129), "", "2026-11-25"]
        var shortcuts = 0, cases = 0
        for _ in 0..<20_000 {
            let directory = directories.randomElement(using: &generator)!
            let id = ids.randomElement(using: &generator)!
            let bucket: String
            switch Int.random(in: 0..<4, using: &generator) {
            case 0: bucket = RecordPaths.bucket(id)
            case 1: bucket = RecordPaths.buckets.randomElement(using: &generator)!
            case 2: bucket = ["0C", "g0", "0", "000", ".", "..", "0c"].randomElement(using: &generator)!
            default: bucket = RecordPaths.bucket(id)
            }
            let suffix = [".json", ".jsonl", ".JSON", "", ".json.json"].randomElement(using: &generator)!
            var path = (directory.isEmpty ? "" : directory + "/") + bucket + "/" + id + suffix
            if Bool.random(using: &generator) {   // half of them a record in its bucket, or nearly
                let record = ["w\(Int.random(in: 0..<100_000, using: &generator))", "a.b", "-", "Z_9"].randomElement(using: &generator)!
                path = ["vocabulary", "a/b", "scenes"].randomElement(using: &generator)! + "/" + RecordPaths.bucket(record) + "/" + record + ".json"
            }
            if Int.random(in: 0..<10, using: &generator) == 0 { path = "/" + path }
            if Int.random(in: 0..<10, using: &generator) == 0 { path += "/" }
            let bytes = Array(path.utf8)
            let general = ProfilePathRules.classifyInGeneral(bytes, kinds: kinds)
            if let shortcut = ProfilePathRules.recordInItsBucket(bytes, kinds: kinds) {
                XCTAssertEqual(general, .success(shortcut), path)
                shortcuts += 1
            }
            XCTAssertEqual(ProfilePathRules.classify(bytes, kinds: kinds), general, path)
            cases += 1
        }
        XCTAssertGreaterThan(shortcuts, cases / 20, "the generated paths hardly ever took the shortcut")
        // And the general rule's refusals are still found through `classify`.
        let vocabulary = try XCTUnwrap(kinds.kinds.first { $0.name == "vocabulary" })
        let wrong = RecordPaths.buckets.first { $0 != RecordPaths.bucket("w1") }!
        XCTAssertEqual(ProfilePathRules.classify(Array("vocabulary/\(wrong)/w1.json".utf8), kinds: kinds), .failure(.wrongBucket))
        XCTAssertEqual(ProfilePathRules.classify(Array("vocabulary/\(RecordPaths.bucket("w1"))/w1.json".utf8), kinds: kinds),
                       .success(.record(vocabulary, id: "w1")))
        XCTAssertEqual(ProfilePathRules.classify(Array("journal/0c/x.json".utf8), kinds: kinds), .failure(.notInFormat))
    }

    /// Each kind of file's size limit and whether a commit may remove it, as the incoming check asks them.
    func testEachFileKindsLimitAndWhetherItMayBeRemoved() throws {
        let vocabulary = try RecordKind(name: "vocabulary", policy: .lww, writers: .editor)
        let chat = try RecordKind(name: "chat", policy: .append, writers: .user)
        let files: [(ProfilePathRules.File, limit: Int, mustStay: Bool)] = [
            (.record(vocabulary, id: "w1"), maxRecordBytes, true),
            (.logDay(chat, day: "2026-11-27"), ProfilePathRules.maxLogFileBytes, true),
            (.profileInfo, ProfilePathRules.maxDocumentBytes, true),
            (.kinds, ProfilePathRules.maxDocumentBytes, true),
            (.member(name: "alice"), ProfilePathRules.maxDocumentBytes, true),
            (.invitation(id: "i1"), ProfilePathRules.maxDocumentBytes, true),
            (.gitattributes, ProfilePathRules.maxDocumentBytes, true),
            (.conflictCopy, ProfilePathRules.maxDocumentBytes, false),
        ]
        for (file, limit, mustStay) in files {
            XCTAssertEqual(file.limit, limit, "\(file)")
            XCTAssertEqual(file.mustStay, mustStay, "\(file)")
        }
        XCTAssertLessThan(maxRecordBytes, ProfilePathRules.maxLogFileBytes)
    }
}
