import XCTest

@testable import ConcordModel

final class JSONReaderTests: XCTestCase {
    /// Rebuilds a document through the reader's object, array and string reads.
    private static func walk(_ reader: inout JSONReader) throws -> JSONValue {
        switch reader.nextType {
        case .object:
            var members = [String: JSONValue]()
            try reader.readObject { key, reader in members[key] = try walk(&reader) }
            return .object(members)
        case .array:
            var elements = [JSONValue]()
            try reader.readArray { _, reader in elements.append(try walk(&reader)) }
            return .array(elements)
        case .string:
            return .string(try reader.readString())
        default:
            return try reader.readValue()
        }
    }

    /// Read piece by piece, a document gives the value `parse` gives, or the same error; and one
    /// whose every value is left unread (so skipped) fails exactly where `parse` fails.
    func testReadingPieceByPieceMatchesParse() {
        var random = SplitMix64(seed: 11)
        for _ in 0..<300 {
            let document = Array(JSONTranscoderTests.randomText(depth: 0, using: &random).utf8)
            var changed = document
            if !changed.isEmpty {
                changed[Int.random(in: 0..<changed.count, using: &random)] = Array(#"{}[]",:\ax0"#.utf8).randomElement(using: &random)!
            }
            for input in [document, changed, Array(document.dropLast())] {
                let parsed = Result { () throws(JSONParseError) in try JSONValue.parse(input) }
                let walked = Result { try JSONReader.read(input) { reader in try Self.walk(&reader) } }
                let skipped = Result { try JSONReader.read(input) { reader in try reader.skipValue() } }
                switch (parsed, walked) {
                case (.success(let a), .success(let b)): XCTAssertEqual(b, a, text(input))
                case (.failure(let a), .failure(let b)): XCTAssertEqual(b as? JSONParseError, a, text(input))
                default: XCTFail("\(text(input)): parse \(parsed), reader \(walked)")
                }
                XCTAssertEqual((try? skipped.get()) != nil, (try? parsed.get()) != nil, text(input))
            }
        }
    }

    func testUnreadMembersAreSkippedButStillChecked() throws {
        let keys = try JSONReader.read(Array(#"{"a": [1, {"b": 2}], "c": "x", "d": {}}"#.utf8)) { reader -> [String] in
            var keys = [String]()
            try reader.readObject { key, _ in keys.append(key) }
            return keys
        }
        XCTAssertEqual(keys, ["a", "c", "d"])
        XCTAssertThrowsError(try JSONReader.read(Array(#"{"a": [1, {"b" 2}]}"#.utf8)) { reader in try reader.readObject { _, _ in } }) { error in
            XCTAssertEqual((error as? JSONParseError)?.message, "expected ':' after object key")
        }
        XCTAssertThrowsError(try JSONReader.read(Array(#"{"a": 1, "a": 2}"#.utf8)) { reader in try reader.readObject { _, _ in } }) { error in
            XCTAssertEqual((error as? JSONParseError)?.description, #"line 1, column 10: duplicate key "a" in object"#)
        }
    }

    func testCanonicalReadsIndentAsTheyWouldInsideARecord() throws {
        let data = try JSONReader.read(Array(#"{"b": [1], "a": {"y": null, "x": "é"}}"#.utf8)) { reader in try reader.readCanonical(indent: 1) }
        XCTAssertEqual(data, Record.canonicalData(["a": ["x": "é", "y": nil], "b": [1]]))
        XCTAssertEqual(text(data), "{\n    \"a\": {\n      \"x\": \"é\",\n      \"y\": null\n    },\n    \"b\": [\n      1\n    ]\n  }")
    }

    /// What reading `{"items": [...], "after": ...}` gives: each element's canonical line, or the
    /// error. In halves, as a caller does it: the halves' results when they succeed, else the
    /// array read in order.
    private func read(_ document: [UInt8], inHalves: Bool) -> (lines: Result<[String], JSONParseError>, usedHalves: Bool) {
        var usedHalves = false
        final class Half: @unchecked Sendable { var lines = [String]() }
        do {
            let lines = try JSONReader.read(document) { reader -> [String] in
                var lines = [String]()
                try reader.readObject { key, reader in
                    guard key == "items" else { return }
                    let halves = [Half(), Half()]
                    if inHalves, reader.readArrayInHalves(minimumBytes: 0, { half, index, reader in
                        halves[half].lines.append("\(index): " + text(try reader.readCanonical(pretty: false)))
                    }) {
                        usedHalves = true
                        lines = halves[0].lines + halves[1].lines
                        return
                    }
                    try reader.readArray { index, reader in lines.append("\(index): " + text(try reader.readCanonical(pretty: false))) }
                }
                return lines
            }
            return (.success(lines), usedHalves)
        } catch let error as JSONParseError {
            return (.failure(error), usedHalves)
        } catch {
            XCTFail("unexpected \(error)")
            return (.success([]), usedHalves)
        }
    }

    /// Reading an array in two halves on two threads gives what reading it in order gives, for
    /// valid documents and for every cut or changed byte (a failed half falls back to in order).
    func testAnArrayReadInHalvesMatchesOneReadInOrder() {
        var random = SplitMix64(seed: 7)
        var halved = 0
        for _ in 0..<60 {
            let elements = (0..<Int.random(in: 0..<12, using: &random)).map { _ in JSONTranscoderTests.randomText(depth: 0, using: &random) }
            let document = Array(("{\"items\": [" + elements.joined(separator: ", ") + "], \"after\": [1, {\"x\": \"]\"}]}").utf8)
            var variants = [document]
            for _ in 0..<8 {
                var changed = document
                changed[Int.random(in: 0..<changed.count, using: &random)] = Array(#"{}[]",:\ax0"#.utf8).randomElement(using: &random)!
                variants.append(changed)
                variants.append(Array(document.prefix(Int.random(in: 0..<document.count, using: &random))))
            }
            for (number, variant) in variants.enumerated() {
                let inOrder = read(variant, inHalves: false).lines, (inHalves, used) = read(variant, inHalves: true)
                if used { halved += 1 }
                if number == 0, (try? inOrder.get()) != nil {
                    XCTAssertEqual(used, elements.count >= 2, "a valid array of two or more elements is read in halves")
                }
                switch (inOrder, inHalves) {
                case (.success(let a), .success(let b)): XCTAssertEqual(b, a, text(variant))
                case (.failure(let a), .failure(let b)): XCTAssertEqual(b, a, text(variant))
                default: XCTFail("\(text(variant)): in order \(inOrder), in halves \(inHalves)")
                }
            }
        }
        XCTAssertGreaterThan(halved, 60)
    }

    func testTheMiddleBoundarySkipsCommasInStringsAndNestedValues() {
        // The middle byte falls inside the string; the commas there and in [1, 2] are not boundaries.
        let document = Array(#"[1, {"a": "x,\",y,z,w,v,u", "b": [1, 2]}, 3] , 4"#.utf8)
        document.withUnsafeBufferPointer { bytes in
            let found = JSONReader.middleBoundary(of: bytes, arrayAt: 0)
            XCTAssertEqual(found?.comma, 40)
            XCTAssertEqual(found?.count, 2)
            XCTAssertNil(JSONReader.middleBoundary(of: bytes, arrayAt: 43), "one element: nothing to split")
        }
    }

    func testReadsOfTheWrongTypeNameWhatWasFound() {
        XCTAssertThrowsError(try JSONReader.read(Array(#"{"a": 1}"#.utf8)) { reader in try reader.readArray { _, _ in } }) { error in
            XCTAssertEqual((error as? JSONParseError)?.description, "line 1, column 1: expected an array, found an object")
        }
        XCTAssertThrowsError(try JSONReader.read(Array(#"[1] x"#.utf8)) { reader in try reader.skipValue() }) { error in
            XCTAssertEqual((error as? JSONParseError)?.message, "unexpected character 'x' after the JSON value")
        }
    }
}
