@testable import ConcordGit
@testable import ConcordGitFormats
import Foundation
import XCTest

/// The small-object compressor, judged by the real git: every object it wrote, loose or packed,
/// must read back byte for byte through `git cat-file` and pass `git fsck --strict`.
final class SmallDeflateTests: GitTestCase {
    /// Inputs at the edges of the encoder: empty and tiny inputs (no 4-byte match possible),
    /// runs longer than deflate's longest match (258), matches at the window's far end, text,
    /// incompressible bytes, and exactly the largest input it takes.
    private func inputs() -> [(label: String, bytes: [UInt8])] {
        var generator = SeededGenerator(seed: 7)
        let random = { (count: Int) in (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        let record = Array("""
            {
              "data": {
                "category": "describing",
                "color": "#d12dfd",
                "label": "word13-r100",
                "spoken": "I want word13-r100"
              },
              "device": "a",
              "id": "w000013",
              "kind": "vocabulary",
              "updatedAt": "2026-01-01T10:00:00.000Z-0000-a",
              "updatedBy": "ann"
            }

            """.utf8)
        let block = random(1_000)
        var far = block + random(SmallDeflater.maximumInput - 2 * block.count) + block
        far = Array(far.prefix(SmallDeflater.maximumInput))
        var cases: [(String, [UInt8])] = [
            ("empty", []), ("one byte", [0x41]), ("three bytes", Array("abc".utf8)), ("four equal", [7, 7, 7, 7]),
            ("five", Array("aaaaa".utf8)), ("run of 258", Array(repeating: 0x20, count: 258)),
            ("run of 259", Array(repeating: 0x20, count: 259)), ("run of 1000", Array(repeating: 0xFF, count: 1_000)),
            ("record", record), ("records", Array((0..<40).map { _ in record }.joined())),
            ("random 300", random(300)), ("random 32 KiB", random(SmallDeflater.maximumInput)),
            ("repeat 32 KiB apart", far), ("all bytes", (0..<256).map { UInt8($0) } + (0..<256).map { UInt8(255 - $0) }),
        ]
        for length in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17, 18, 34, 35, 66, 67, 130, 131, 257] {
            // A match of exactly `length` bytes (each length code and its extra bits).
            let unit = random(length)
            cases.append(("match of \(length)", random(3) + unit + random(2) + unit + random(1)))
        }
        for distance in [1, 2, 3, 4, 5, 7, 8, 9, 13, 24, 25, 100, 1_024, 4_097, 16_385, 24_577, 32_000] {
            // A period of `distance` bytes repeated: matches reach back exactly that far, and
            // overlap themselves when they are longer than the distance.
            let period = random(distance)
            cases.append(("distance \(distance)", (0..<(distance + 12)).map { period[$0 % distance] }))
        }
        return cases
    }

    func testLooseObjectsReadBackThroughGit() throws {
        let (repository, url) = try makeRepository()
        let cases = inputs()
        var ids = [ObjectID]()
        for (_, bytes) in cases { ids.append(try repository.writeLooseObject(bytes, type: .blob)) }
        try assertGitReads(cases, ids: ids, in: url)
    }

    func testPackedObjectsReadBackThroughGit() throws {
        let (repository, url) = try makeRepository()
        let cases = inputs()
        var pack = ObjectPack()
        var ids = [ObjectID]()
        for (_, bytes) in cases { ids.append(try pack.add(bytes, type: .blob)) }
        try pack.write(into: repository)
        XCTAssertTrue(try looseObjects(url).isEmpty)
        for name in try packFiles(url, suffix: ".idx") {
            XCTAssertEqual(try git(["verify-pack", ".git/objects/pack/" + name], in: url).status, 0, name)
        }
        try assertGitReads(cases, ids: ids, in: url)
    }

    /// It compresses: a record file shrinks by more than a third (it would not with literals alone).
    func testRecordsShrink() {
        let record = inputs().first { $0.label == "records" }!.bytes
        var deflater = SmallDeflater()
        var out = [UInt8]()
        record.withUnsafeBytes { deflater.append($0, to: &out) }
        XCTAssertLessThan(out.count, record.count * 2 / 3)
        XCTAssertEqual(Array(out.prefix(2)), [0x78, 0x01])
    }

    func testObjectHeaders() {
        for (type, name) in [(ObjectType.blob, "blob"), (.tree, "tree"), (.commit, "commit")] {
            for size in [0, 1, 9, 10, 99, 100, 123_456, 1 << 31] {
                XCTAssertEqual(ObjectPack.header(type: type, size: size), Array("\(name) \(size)\0".utf8))
            }
        }
    }

    private func assertGitReads(_ cases: [(label: String, bytes: [UInt8])], ids: [ObjectID], in url: URL) throws {
        let request = Data(ids.map { $0.hex + "\n" }.joined().utf8)
        let output = try git(["cat-file", "--batch"], in: url, input: request)
        XCTAssertEqual(output.status, 0, output.stderr)
        // Each answer: "<id> blob <size>\n<content>\n".
        var data = output.stdoutData[...]
        for ((label, bytes), id) in zip(cases, ids) {
            guard let newline = data.firstIndex(of: 0x0A) else { return XCTFail("\(label): git answered nothing") }
            let header = String(decoding: data[..<newline], as: UTF8.self)
            XCTAssertEqual(header, "\(id.hex) blob \(bytes.count)", label)
            let content = data[(newline + 1)...].prefix(bytes.count)
            XCTAssertEqual(Array(content), bytes, label)
            data = data[(newline + 1 + bytes.count + 1)...]
        }
        let fsck = try git(["fsck", "--full", "--strict"], in: url)
        XCTAssertEqual(fsck.status, 0, fsck.stderr)
    }
}
