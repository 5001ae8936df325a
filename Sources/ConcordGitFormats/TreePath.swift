/// A relative path of a file in a repository's tree and working tree, made only by checking it
/// against git's path rules (`GitPath.isSafe`): every component safe on every file system git
/// supports, so no `.`, `..`, `.git` in any spelling, no control character, `\` or empty
/// component. The working-tree writer, the index patch, tree edits and changed-file lists take
/// only this type, so a name that came from a remote cannot reach them unchecked.
public struct TreePath: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The path as text, components separated by `/`.
    public let string: String

    /// Why text is not a `TreePath`.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let path: String
        public var description: String {
            "\(path.debugDescription) is not a safe path inside a repository: git refuses names such as . .. .git, "
                + "control characters, \\ and empty components"
        }
    }

    /// Checks `text`; throws `Invalid` when git's rules refuse it.
    public init(_ text: String) throws(Invalid) {
        guard GitPath.isSafe(text) else { throw Invalid(path: text) }
        string = text
    }

    /// Checks the UTF-8 `bytes` (a name read from a tree or an index).
    public init(bytes: some Collection<UInt8>) throws(Invalid) {
        guard GitPath.isSafe(bytes) else { throw Invalid(path: String(decoding: bytes, as: UTF8.self)) }
        string = String(decoding: bytes, as: UTF8.self)
    }

    /// This path with one more component; throws when `name` is not a safe name.
    public func appending(_ name: String) throws(Invalid) -> TreePath {
        try TreePath(string + "/" + name)
    }

    /// The path's UTF-8 bytes.
    public var utf8: String.UTF8View { string.utf8 }

    public var description: String { string }

    /// git's order for files: by bytes (the index's order).
    public static func < (lhs: TreePath, rhs: TreePath) -> Bool {
        var (left, right) = (lhs.string, rhs.string)
        return left.withUTF8 { a in right.withUTF8 { b in IndexPlan.compare(UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(b)) < 0 } }
    }
}

extension TreePath {
    /// The most directories a path in a tree from a remote may be nested in (a profile's paths use
    /// a few: a kind's directory, a bucket): every walk over a fetched tree refuses a directory
    /// deeper than this, as an invalid commit, before going into it. A remote's tree 10,000
    /// directories deep crashed sync and clone (SIGSEGV: the walks recursed, one stack frame per
    /// directory); git's own bound (`core.maxTreeDepth`) is 2,048.
    public static let maxDepth = 256

    /// `path` (bytes, components separated by `/`) for a one-line message: its first components
    /// and how many more, when it has more than a few.
    public static func shortened(_ path: some Collection<UInt8>, keeping kept: Int = 4) -> String {
        let components = path.split(separator: 0x2F)
        let text = components.prefix(kept).map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
        return components.count > kept ? text + "/… (\(components.count) directories in all)" : String(decoding: path, as: UTF8.self)
    }
}
