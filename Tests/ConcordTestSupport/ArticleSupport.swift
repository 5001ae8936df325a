import ConcordKit
import Foundation
#if canImport(XCTest)
import XCTest
#endif

/// The DocC articles' `Symbol` (Sources/ConcordKit/ConcordKit.docc), declared as the articles
/// declare it: the tests that run the articles' code use this one (`articleDeclaration` is what
/// every article must show).
package struct Symbol: ConcordRecord, Equatable {
    package static let fields: FieldNames<Symbol> = [\.page: "page", \.position: "position", \.label: "label"]
    package static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor, indexed: fields.names)
    package var id: String
    package var label: String
    package var page: Int
    package var position: Int

    package init(id: String, label: String, page: Int, position: Int) {
        (self.id, self.label, self.page, self.position) = (id, label, page, position)
    }

    /// The two declaration lines above, as an article shows them.
    package static let articleDeclaration = [
        #"    static let fields: FieldNames<Symbol> = [\.page: "page", \.position: "position", \.label: "label"]"#,
        #"    static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor, indexed: fields.names)"#,
    ].joined(separator: "\n")
}

/// Getting Started's log entry, as the article declares it.
package struct Tap: ConcordLogEntry {
    package static let kind = Kind("taps", policy: .append, writers: .user)
    package var symbol: String

    package init(symbol: String) { self.symbol = symbol }
}

/// The text of the DocC article `name` (e.g. `GettingStarted.md`).
package func articleText(_ name: String) throws -> String {
    let docc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/ConcordKit/ConcordKit.docc")
    return try String(contentsOf: docc.appendingPathComponent(name), encoding: .utf8)
}

#if canImport(XCTest)
/// Fails the test for each of `lines` the article `name` no longer shows (a test running its code
/// then runs what the article says).
package func assertArticle(_ name: String, shows lines: [String], file: StaticString = #filePath, line: UInt = #line) throws {
    let text = try articleText(name)
    for shown in lines { XCTAssertTrue(text.contains(shown), "\(name) no longer shows: \(shown)", file: file, line: line) }
}
#endif
