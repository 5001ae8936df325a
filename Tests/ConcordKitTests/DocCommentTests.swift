import Foundation
import XCTest

/// What apps see is documented: every `public` (or `open`) declaration in ConcordKit and the modules
/// it re-exports (ConcordEngine, ConcordModel, ConcordTrust, ConcordRules) has a `///` (or `/** … */`) doc comment directly above it, attributes such as
/// `@discardableResult` allowed in between; DocC shows it (`make docs`). Read from the sources.
///
/// The rule, as `undocumented` applies it: a declaration is a line whose first words, after any
/// attributes and modifiers (`override`, `static`, `final`, …), are `public` or `open`; a
/// multi-line declaration is judged by its first line. Exempt: `public import`, `public extension`
/// (an extension is not a symbol: its members are checked one by one), and what carries no
/// `public` of its own, such as an enum's cases and a protocol's requirements, which DocC lists
/// under their documented type. Lines inside block comments and multi-line string literals are not code.
final class DocCommentTests: XCTestCase {
    /// The package's `Sources/` directory, found from this file's path.
    private let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    func testEveryPublicDeclarationAppsSeeHasADocComment() throws {
        var checked = 0
        var missing = [String]()
        for target in ["ConcordKit", "ConcordEngine", "ConcordModel", "ConcordTrust", "ConcordRules"] {
            let root = sources.appendingPathComponent(target)
            guard let walker = FileManager.default.enumerator(atPath: root.path) else {
                return XCTFail("no sources under \(root.path)")
            }
            while let relative = walker.nextObject() as? String {
                guard relative.hasSuffix(".swift") else { continue }
                let text = try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
                checked += 1
                missing += Self.undocumented(in: text).map { "Sources/\(target)/\(relative):\($0.line): \($0.text)" }
            }
        }
        XCTAssertGreaterThan(checked, 50, "the sources were not found")
        XCTAssertEqual(missing.sorted(), [], "public declarations without a /// doc comment (say what it is or does)")
    }

    /// The checker itself, on text made to trip it.
    func testTheCheckerFindsWhatItShouldAndOnlyThat() {
        let text = """
            /// Documented.
            public struct A {
                public let undocumentedField: Int
                /// Documented, with an attribute between.
                @discardableResult
                public func f() -> Int { 1 }
                public init(
                    x: Int
                ) {}
                /// A documented multi-line one.
                public static func g(
                    y: Int) {}
                @MainActor public var attributed: Int { 1 }
                override public var description: String { "" }
                public private(set) var counted = 0
            }
            public enum E { case exempt, alsoExempt }
            public extension A { }
            @_exported public import Foundation
            /** A block doc comment. */
            public typealias T = Int
            /* public var inComment: Int */
            let literal = \"\"\"
                public var inString: Int
                \"\"\"
            """
        let found = Self.undocumented(in: text).map(\.line)
        // undocumentedField, init, attributed, description, counted, E.
        XCTAssertEqual(found, [3, 7, 13, 14, 15, 17])
    }

    /// The declaration starts that need a doc comment and lack one, as (1-based line, trimmed text).
    static func undocumented(in text: String) -> [(line: Int, text: String)] {
        let declaration = try! NSRegularExpression(
            pattern: #"^((@[\w.]+(\([^)]*\))?|override|final|nonisolated|static|class|convenience|required|indirect|mutating|dynamic|lazy)\s+)*(public|open)\b(\(set\))?\s"#)
        let exempt = try! NSRegularExpression(pattern: #"\b(public|open)\s+(import|extension)\b"#)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        var found = [(line: Int, text: String)]()
        var inBlockComment = false, inString = false
        for (index, line) in lines.enumerated() {
            if inBlockComment {
                if line.contains("*/") { inBlockComment = false }
                continue
            }
            if inString {
                if line.hasPrefix("\"\"\"") { inString = false }
                continue
            }
            if line.hasPrefix("/*"), !line.contains("*/") {
                inBlockComment = true
                continue
            }
            if line.hasSuffix("\"\"\""), line.components(separatedBy: "\"\"\"").count == 2 {
                inString = true
            }
            let range = NSRange(line.startIndex..., in: line)
            guard declaration.firstMatch(in: line, range: range) != nil, exempt.firstMatch(in: line, range: range) == nil else { continue }
            var above = index - 1
            // Attribute lines (not a declaration of their own, like `@MainActor public var x`) may stand between.
            while above >= 0, lines[above].hasPrefix("@"),
                  declaration.firstMatch(in: lines[above], range: NSRange(lines[above].startIndex..., in: lines[above])) == nil {
                above -= 1
            }
            let comment = above >= 0 ? lines[above] : ""
            if !(comment.hasPrefix("///") || comment.hasSuffix("*/")) { found.append((index + 1, line)) }
        }
        return found
    }
}
