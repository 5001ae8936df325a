import ConcordGitFormats

/// Tests write paths as literals; a literal git's rules refuse stops the test at once. (The
/// library has no such initializer: there a path is made only by checking it.)
extension TreePath: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        do { try self.init(value) } catch { fatalError("\(error)") }
    }
}
