import ConcordKit
import Foundation
import XCTest

/// `CommitTrailers` reads UTF-8 bytes (for speed, bench row B7); these messages pin that it reads
/// what the straightforward String version reads (kept here as the reference).
final class CommitTrailersTests: XCTestCase {
    func testTheByteReaderReadsWhatTheStringReaderReads() {
        let messages = [
            "put vocabulary/ball\n\nConcord-Actor: alice\nConcord-Device: laptop\nConcord-Action: added\nConcord-Clock: 2026-01-01T10:00:00.000Z-0000-laptop\nConcord-Record: vocabulary/ball\n",
            "one paragraph only\nConcord-Actor: mallory\n",
            "Concord-Actor: mallory",
            "",
            "\n\n\n\n",
            "summary\n\n\nConcord-Actor:   bob  \n\nConcord-Device:\tphone\t\nno colon here\n:empty key\nConcord-Record: a:b:c\n",
            "summary\n\nbody paragraph\nConcord-Actor: not-a-trailer\n\nConcord-Actor: carol\nConcord-Record-Count: 120\nConcord-Resolved: vocabulary/x lww\nConcord-Unresolved: y\nX-Other: 1\n\n",
            "sum\u{00E9}mary \u{1F600}\n\nConcord-Actor: \u{00E9}mile\nConcord-Record: vocabulary/\u{1F600}\n",
        ]
        for message in messages {
            let read = CommitTrailers(message: message)
            let reference = Reference(message: message)
            XCTAssertEqual(read.actor, reference.fields["Concord-Actor"]?.last, message.debugDescription)
            XCTAssertEqual(read.device, reference.fields["Concord-Device"]?.last, message.debugDescription)
            XCTAssertEqual(read.action, reference.fields["Concord-Action"]?.last, message.debugDescription)
            XCTAssertEqual(read.clock, reference.fields["Concord-Clock"]?.last, message.debugDescription)
            XCTAssertEqual(read.records, reference.fields["Concord-Record"] ?? [], message.debugDescription)
            XCTAssertEqual(read.recordCount, reference.fields["Concord-Record-Count"]?.last.flatMap { Int($0) }, message.debugDescription)
            XCTAssertEqual(read.resolved, reference.fields["Concord-Resolved"] ?? [], message.debugDescription)
            XCTAssertEqual(read.unresolved, reference.fields["Concord-Unresolved"] ?? [], message.debugDescription)
            XCTAssertEqual(read.other.map { "\($0.key)=\($0.value)" }, reference.other, message.debugDescription)
        }
        XCTAssertEqual(CommitTrailers(message: messages[0]).actor, "alice")
        XCTAssertNil(CommitTrailers(message: messages[1]).actor, "one paragraph has no trailers")
        XCTAssertEqual(CommitTrailers(message: messages[5]).device, "phone", "the last paragraph only")
        XCTAssertNil(CommitTrailers(message: messages[5]).actor)
        // Lines end at "\n", as git reads them (the String version took "\r\n" for one character and joined the lines).
        let crlf = CommitTrailers(message: "summary\n\nConcord-Actor: dave\r\nConcord-Device: tablet\n")
        XCTAssertEqual(crlf.actor, "dave\r")
        XCTAssertEqual(crlf.device, "tablet")
        XCTAssertEqual(CommitTrailers(message: messages[6]).actor, "carol")
    }

    /// The String version CommitTrailers had before (space and tab trimmed, as the byte reader does).
    private struct Reference {
        var fields = [String: [String]]()
        var other = [String]()

        init(message: String) {
            let paragraphs = message.split(separator: "\n\n", omittingEmptySubsequences: true)
            guard paragraphs.count > 1, let last = paragraphs.last else { return }
            for line in last.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let key = String(line[..<colon])
                let value = line[line.index(after: colon)...].trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
                if key.hasPrefix("Concord-"), ["Actor", "Device", "Action", "Clock", "Record", "Record-Count", "Resolved", "Unresolved"]
                    .contains(String(key.dropFirst(8))) {
                    fields[key, default: []].append(value)
                } else {
                    other.append("\(key)=\(value)")
                }
            }
        }
    }
}
