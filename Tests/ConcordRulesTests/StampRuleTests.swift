import ConcordModel
import ConcordRules
import XCTest

/// Records speak only for their signer (data format 7) on its own, no git: a record file's bytes
/// after a commit and before it, as values.
final class StampRuleTests: XCTestCase {
    func stamp(_ millis: Int64, _ member: String, _ device: String = "laptop") -> WriteStamp {
        WriteStamp(at: HLC(wallMillis: 1_767_000_000_000 + millis), member: member, device: device)
    }

    func record(_ envelope: WriteStamp, _ data: [String: JSONValue], fields: [String: WriteStamp] = [:],
                lastDeleted: WriteStamp? = nil) throws -> [UInt8] {
        Record(id: try RecordID("puzzle"), kind: "vocabulary", device: envelope.device, member: envelope.member, stamp: envelope.at,
               state: .live(data: data), fieldStamps: fields, lastDeleted: lastDeleted).encoded()
    }

    func tombstone(_ envelope: WriteStamp) throws -> [UInt8] {
        Record(id: try RecordID("puzzle"), kind: "vocabulary", device: envelope.device, member: envelope.member, stamp: envelope.at,
               state: .deleted).encoded()
    }

    func problem(_ after: [UInt8], _ before: [[UInt8]?], signer: String = "eddie") -> String? {
        StampRule.recordProblem("vocabulary/puzzle", after: after, before: before, signer: signer)?.reason
    }

    func testTheRuleHoldsFromFormat7() {
        XCTAssertFalse(StampRule.applies(parentFormat: 6))
        XCTAssertTrue(StampRule.applies(parentFormat: 7))
        XCTAssertTrue(StampRule.applies(parentFormat: concordFormatVersion))
    }

    func testAWriteInTheSignersNameStandsAndOneInAnothersIsRefused() throws {
        let alices = try record(stamp(1, "alice"), ["label": .string("puzzle"), "size": .number("3")])
        // Eddie's own write, keeping the size Alice wrote under her stamp.
        XCTAssertNil(problem(try record(stamp(2, "eddie"), ["label": .string("ball"), "size": .number("3")],
                                        fields: ["size": stamp(1, "alice")]), [alices]))
        // A new record, and a delete, in his own name.
        XCTAssertNil(problem(try record(stamp(2, "eddie"), ["label": .string("ball")]), [nil]))
        XCTAssertNil(problem(try tombstone(stamp(2, "eddie")), [alices]))
        // Unchanged: the parent's file as it was.
        XCTAssertNil(problem(alices, [alices]))

        // Alice's name on a new record, on new words, on a new time, on a delete.
        let forged = try XCTUnwrap(problem(try record(stamp(2, "alice"), ["label": .string("ball")]), [nil]))
        XCTAssertTrue(forged.contains("its updatedBy stamped") && forged.contains("in alice's name, but eddie signed it")
                      && forged.contains("concord put"), forged)
        let words = try XCTUnwrap(problem(try record(stamp(1, "alice"), ["label": .string("rude"), "size": .number("3")]), [alices]))
        XCTAssertTrue(words.contains(#"field "label""#) && words.contains("alice"), words)
        XCTAssertNotNil(problem(try record(stamp(3, "alice"), ["label": .string("puzzle"), "size": .number("3")]), [alices]))
        XCTAssertNotNil(problem(try tombstone(stamp(2, "alice")), [alices]))
        // A field stamp of Alice's on a value she never wrote.
        let field = try XCTUnwrap(problem(try record(stamp(2, "eddie"), ["label": .string("ball"), "size": .number("9")],
                                                     fields: ["size": stamp(1, "alice")]), [alices]))
        XCTAssertTrue(field.contains(#"field "size""#), field)
        // A field of Alice's taken away under her stamp (red-team finding, issue 42): the removal is a
        // claim in her name; in his own, it stands.
        let removed = try XCTUnwrap(problem(try record(stamp(1, "alice"), ["label": .string("puzzle")]), [alices]))
        XCTAssertTrue(removed.contains(#"field "size""#) && removed.contains("in alice's name, but eddie signed it"), removed)
        XCTAssertNil(problem(try record(stamp(2, "eddie"), ["label": .string("puzzle")], fields: ["label": stamp(1, "alice")]), [alices]))
        // The same device name does not make a stamp the signer's: the member is what counts.
        XCTAssertNotNil(problem(try record(stamp(2, "alice", "tablet"), ["label": .string("ball")]), [alices]))
    }

    func testARevivedRecordKeepsTheDeleteItSaw() throws {
        let deleted = try tombstone(stamp(1, "alice"))
        XCTAssertNil(problem(try record(stamp(2, "eddie"), ["label": .string("again")], lastDeleted: stamp(1, "alice")), [deleted]))
        let invented = try XCTUnwrap(problem(try record(stamp(2, "eddie"), ["label": .string("again")], lastDeleted: stamp(0, "uma")), [deleted]))
        XCTAssertTrue(invented.contains("its lastDeleted") && invented.contains("uma's name"), invented)
    }

    /// For a merge every stamp is the signer's or one parent's (or their policy merge's), each field
    /// with the value it had there.
    func testAMergeKeepsOneParentsStampsOrWritesItsSigners() throws {
        let ours = try record(stamp(1, "alice"), ["label": .string("puzzle")])
        let theirs = try record(stamp(2, "uma"), ["label": .string("ball")])
        XCTAssertNil(problem(theirs, [ours, ours, theirs]))
        XCTAssertNil(problem(ours, [theirs, ours, theirs]))
        XCTAssertNil(problem(try record(stamp(3, "eddie"), ["label": .string("both")]), [ours, ours, theirs]))
        let neither = try XCTUnwrap(problem(try record(stamp(2, "uma"), ["label": .string("puzzle")]), [theirs, ours, theirs]))
        XCTAssertTrue(neither.contains(#"field "label""#) && neither.contains("uma's name"), neither)
    }

    func testAFileThatDoesNotReadIsLeftToTheStructuralCheck() {
        XCTAssertNil(problem(Array("{".utf8), [nil]))
    }
}
