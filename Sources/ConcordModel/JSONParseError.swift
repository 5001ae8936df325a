/// Why and where a JSON document failed to parse.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The 1-based line of the offending input.
    public let line: Int
    /// The 1-based column (in Unicode scalars) of the offending input within its line.
    public let column: Int
    /// What was wrong, e.g. `expected ',' or '}' after object member`.
    public let message: String

    /// Creates an error at `line`, `column` (both 1-based).
    public init(line: Int, column: Int, message: String) {
        (self.line, self.column, self.message) = (line, column, message)
    }

    /// `line 3, column 7: expected ',' or '}' after object member`.
    public var description: String { "line \(line), column \(column): \(message)" }
}
