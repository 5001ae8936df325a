import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The stated maximum sizes hold on local reads too: a huge hand-made file is refused from its
/// size, without being read.
final class LimitsTests: KitTestCase {
    func testAHugeRecordFileIsSkippedByListAndRefusedByGetFromItsSize() throws {
        let alice = try makeIdentity()
        let profile = try makeProfile(identity: alice)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "puzzle", data: ["label": .string("puzzle")]) }
        let path = RecordPaths.file(directory: "vocabulary", id: "huge")
        let url = profile.root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        // A sparse 1 GiB file: reading it would take a gigabyte of memory.
        FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: 1 << 30)
        try handle.close()

        let listing = try profile.records.list(kind: "vocabulary")
        XCTAssertEqual(listing.items.map(\.id), ["puzzle"])
        XCTAssertTrue(listing.warnings.contains { $0.contains(path) && $0.contains("over the 1048576-byte limit") }, "\(listing.warnings)")
        let error = concordError { try profile.records.get("vocabulary", "huge") }
        XCTAssertTrue(error?.localizedDescription.contains("over the 1048576-byte limit") == true, "\(String(describing: error))")
    }
}
