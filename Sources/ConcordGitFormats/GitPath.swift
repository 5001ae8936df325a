/// git's own rules for the names in a path (libgit2's `verify_path`, git's `verify_path`): the
/// rule a fetched tree must pass before anything is checked out, and the working-tree writer's
/// second line of defence.
public enum GitPath {
    /// Whether `name` (one path component) is safe on every file system git supports: not empty,
    /// `.` or `..`; no `/`, `\`, NUL or other control character; not `.git` in any spelling git
    /// treats as `.git` (any case; trailing dots and spaces, which Windows drops; the 8.3 short
    /// name `git~1`).
    public static func isSafeName(_ name: some Collection<UInt8>) -> Bool {
        Array(name).withUnsafeBufferPointer { isSafeName($0[...]) }
    }

    /// Whether every component of relative `path` is safe (`isSafeName`), and it has at least one.
    public static func isSafe(_ path: some Collection<UInt8>) -> Bool {
        if let result = path.withContiguousStorageIfAvailable({ isSafe(buffer: $0) }) { return result }
        return Array(path).withUnsafeBufferPointer { isSafe(buffer: $0) }
    }

    /// `isSafe(_:)` for a path's UTF-8 (a path is checked for every file a checkout writes).
    public static func isSafe(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { isSafe(buffer: $0) }
    }

    private static func isSafe(buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var start = 0
        for index in 0...buffer.count where index == buffer.count || buffer[index] == 0x2F {
            guard isSafeName(buffer[start..<index]) else { return false }
            start = index + 1
        }
        return true
    }

    private static func isSafeName(_ name: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard !name.isEmpty else { return false }
        for byte in name where byte < 0x20 || byte == 0x7F || byte == 0x5C || byte == 0x2F { return false }
        var end = name.endIndex
        while end > name.startIndex, name[end - 1] == 0x2E || name[end - 1] == 0x20 { end -= 1 }
        let trimmed = name[name.startIndex..<end]
        if trimmed.isEmpty { return false }   // ".", "..", "...", " "
        func lowered(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }
        if trimmed.count == 4, trimmed.elementsEqual(".git".utf8, by: { lowered($0) == $1 }) { return false }
        if trimmed.count == 5, trimmed.elementsEqual("git~1".utf8, by: { lowered($0) == $1 }) { return false }
        return true
    }
}
