/// git's own rules for the names in a path (libgit2's `verify_path`, git's `verify_path`): the
/// rule a fetched tree must pass before anything is checked out, and the working-tree writer's
/// second line of defence.
public enum GitPath {
    /// Whether `name` (one path component) is safe on every file system git supports: not empty,
    /// `.` or `..`; no `/`, `\`, NUL or other control character; not `.git` in any spelling git
    /// treats as `.git` (any case; trailing dots and spaces, which Windows drops; the 8.3 short
    /// name `git~1`).
    public static func isSafeName(_ name: some Collection<UInt8>) -> Bool {
        guard !name.isEmpty, !name.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == 0x2F || $0 == 0x5C }) else { return false }
        var trimmed = Array(name)
        while let last = trimmed.last, last == 0x2E || last == 0x20 { trimmed.removeLast() }
        if trimmed.isEmpty { return false }   // ".", "..", "...", " "
        let lower = trimmed.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        return lower != Array(".git".utf8) && lower != Array("git~1".utf8)
    }

    /// Whether every component of relative `path` is safe (`isSafeName`), and it has at least one.
    public static func isSafe(_ path: some Collection<UInt8>) -> Bool {
        let components = path.split(separator: 0x2F, omittingEmptySubsequences: false)
        return !components.isEmpty && components.allSatisfy(isSafeName)
    }
}
