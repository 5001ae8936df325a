@testable import ConcordTrust
import Foundation
import XCTest

/// `Armor.unwrap` splits and trims lines on UTF-8 bytes (bench row B7); it must read every text
/// as the straightforward unwrap by Characters below does: the same bytes or the same failure.
final class ArmorTests: XCTestCase {
    private let label = "SSH SIGNATURE"

    func testUnwrapReadsTextsAsUnwrappingByCharactersDoes() {
        let lines = Vector.signature.split(separator: "\n").map(String.init)
        let body = lines.dropFirst().dropLast()
        var texts = [
            Vector.signature,
            Vector.signature.replacingOccurrences(of: "\n", with: "\r\n"),
            Vector.signature.replacingOccurrences(of: "\n", with: "\r"),
            lines[0] + "\n" + lines.dropFirst().map { " \t" + $0 + "\t " }.joined(separator: "\n"),
            "gpgsig " + lines.joined(separator: "\n "),
            "text before\n\n" + Vector.signature + "\ntext after\n",
            lines[0] + "\n\n" + body.joined(separator: "\n\n") + "\n\n" + lines.last!,
            lines[0] + "\n" + lines.last!,
            String(Vector.signature.prefix(Vector.signature.count / 2)),
            "",
            "\n\r\n\r",
            lines[0] + "\n" + lines.last! + "\n" + Vector.signature,
        ]
        // Combining marks after a blank or a line end, a Kelvin sign (canonically a K), and
        // other scalars that are not ASCII, in each place a line can hold them.
        for odd in ["\u{301}", " \u{301}", "\t\u{301}", "\u{212A}", "K", "é", "e\u{301}", "\u{FEFF}", "\u{0}", "="] {
            texts.append(odd + Vector.signature)
            texts.append(lines[0] + odd + "\n" + body.joined(separator: "\n") + "\n" + lines.last!)
            texts.append(odd + lines[0] + "\n" + body.joined(separator: "\n") + "\n" + lines.last!)
            texts.append(lines[0] + "\n" + odd + body.joined(separator: "\n") + "\n" + lines.last!)
            texts.append(lines[0] + "\n" + body.joined(separator: "\n" + odd) + "\n" + lines.last!)
            texts.append(lines[0] + "\n" + body.joined(separator: odd + "\n") + "\n" + lines.last!)
            texts.append(lines[0] + "\n" + body.joined(separator: "\n") + "\n" + odd + lines.last!)
            texts.append(lines[0] + "\n" + body.joined(separator: "\n") + "\n" + lines.last! + odd)
        }
        var unwrapped = 0
        for text in texts {
            let fast = Result { () throws(TrustError) in try Armor.unwrap(text, label: label) { .malformedSignatureArmor($0) } }
            let straight = Result { () throws(TrustError) in try Self.unwrapByCharacters(text, label: label) { .malformedSignatureArmor($0) } }
            XCTAssertEqual(fast, straight, text.debugDescription)
            if case .success = fast { unwrapped += 1 }
        }
        XCTAssertGreaterThan(unwrapped, 6, "most texts above hold a readable signature")
    }

    /// `Armor.unwrap` as it was before it worked on bytes: lines split and trimmed as Characters.
    private static func unwrapByCharacters(_ text: String, label: String, failure: (String) -> TrustError) throws(TrustError) -> [UInt8] {
        let lines = text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }.map { line in
            var line = line
            while let first = line.first, first == " " || first == "\t" { line = line.dropFirst() }
            while let last = line.last, last == " " || last == "\t" { line = line.dropLast() }
            return line
        }
        guard let begin = lines.firstIndex(where: { $0 == "-----BEGIN \(label)-----" }) else {
            throw failure("no '-----BEGIN \(label)-----' line")
        }
        guard let end = lines[(begin + 1)...].firstIndex(where: { $0 == "-----END \(label)-----" }) else {
            throw failure("no '-----END \(label)-----' line; the text is truncated")
        }
        let body = lines[(begin + 1)..<end].joined()
        guard !body.isEmpty else { throw failure("empty body") }
        guard let data = Data(base64Encoded: body) else { throw failure("invalid base64 body") }
        return Array(data)
    }
}
