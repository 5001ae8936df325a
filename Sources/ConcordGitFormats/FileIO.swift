import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Plain POSIX file writes for the working tree.
public enum FileIO {
    public struct Failure: Error, CustomStringConvertible {
        public let path: String
        public let operation: String
        public let code: Int32

        package init(path: String, operation: String, code: Int32 = errno) {
            self.path = path
            self.operation = operation
            self.code = code
        }

        public var description: String { "cannot \(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// Writes `bytes` to `path` through a temporary file and a rename, creating parent directories.
    /// With `durable`, the file is fsynced before the rename (for objects that refs will point at).
    /// `temporary` names the temporary file (default: `path` + `.concord-tmp-<pid>`).
    public static func write(_ bytes: [UInt8], to path: String, makingParents: Bool = true,
                             mode: UInt32 = 0o644, durable: Bool = false, temporary: String? = nil) throws(Failure) {
        if makingParents { try makeParents(of: path) }
        let temporary = temporary ?? path + ".concord-tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw Failure(path: temporary, operation: "create") }
        let ok = writeAll(fd, bytes) && (!durable || fsync(fd) == 0)
        close(fd)
        guard ok else { unlink(temporary); throw Failure(path: path, operation: "write") }
        guard rename(temporary, path) == 0 else { unlink(temporary); throw Failure(path: path, operation: "rename into place") }
    }

    /// Writes working-tree files (see `writeReturningStat`) and returns their stat data, in order;
    /// in one contiguous share per core (of at least 256 files). Each share opens a file's directory
    /// once for the files after it in the same directory and creates them relative to it (`openat`),
    /// so the kernel does not walk the whole path again for every file: B5's clone (10,000 files in
    /// 256 directories) spent ~6.7 ms of CPU in that walk. No link is followed at the last step.
    private static func writeAll(_ files: [(path: String, bytes: [UInt8])]) throws(Failure) -> [stat] {
        let parts = Parallel.shares(of: files.count) { range in
            Result { () throws(Failure) -> [stat] in
                var directory = OpenDirectory()
                defer { directory.close() }
                return try range.map { index throws(Failure) in
                    try writeReturningStat(files[index].bytes, to: files[index].path, directory: &directory)
                }
            }
        }
        var out: [stat] = []
        out.reserveCapacity(files.count)
        for part in parts { out += try part.get() }
        return out
    }

    /// The directory of the last file written by one share of `writeAll`, opened once.
    private struct OpenDirectory {
        var path: Substring = ""
        var fd: Int32 = -1

        /// The descriptor of `path`'s directory and `path`'s last name (opening the directory unless it is the
        /// last one; a link there is refused, as `checkInside` refuses one).
        mutating func open(for path: String) throws(Failure) -> (fd: Int32, name: String) {
            let utf8 = path.utf8
            guard let slash = utf8.lastIndex(of: 0x2F) else { throw Failure(path: path, operation: "create (not an absolute path)", code: EINVAL) }
            let parent = path[..<slash]
            if fd < 0 || !parent.utf8.elementsEqual(self.path.utf8) {
                close()
                fd = Glibc.open(parent.isEmpty ? "/" : String(parent), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { throw Failure(path: String(parent), operation: "open directory") }
                self.path = parent
            }
            return (fd, String(path[utf8.index(after: slash)...]))
        }

        mutating func close() {
            if fd >= 0 { _ = Glibc.close(fd) }
            fd = -1
        }
    }

    /// Writes a working-tree file and returns its stat data for the index. A new file is created
    /// in place (one `open`, as git's checkout does); an existing one is replaced through a
    /// temporary file and a rename, so a reader never sees it half-written.
    private static func writeReturningStat(_ bytes: [UInt8], to path: String, directory: inout OpenDirectory) throws(Failure) -> stat {
        var info = stat()
        let (directoryFD, name) = try directory.open(for: path)
        let fd = openat(directoryFD, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        if fd < 0 {
            guard errno == EEXIST else { throw Failure(path: path, operation: "create") }
            try write(bytes, to: path, makingParents: false)
            guard stat(path, &info) == 0 else { throw Failure(path: path, operation: "stat") }
            return info
        }
        defer { close(fd) }
        guard writeAll(fd, bytes) else {
            let failure = Failure(path: path, operation: "write")
            unlinkat(directoryFD, name, 0)
            throw failure
        }
        guard fstat(fd, &info) == 0 else { throw Failure(path: path, operation: "stat") }
        return info
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeAll(fd, $0) }
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var written = 0
        while written < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + written, bytes.count - written)
            if n < 0 { if errno == EINTR { continue }; return false }
            if n == 0 { return false }
            written += n
        }
        return true
    }

    /// The bytes of the file at `path`, or nil when it cannot be read (missing, a directory,
    /// unreadable): one `open`, `fstat` and `read`, for checking many working-tree files.
    package static func contents(atPath path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return readAll(fd, count: Int(info.st_size))
    }

    /// Exactly `count` bytes read from `fd`, retrying short reads and EINTR; nil when the file
    /// ends sooner or a read fails.
    package static func readAll(_ fd: Int32, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return bytes
    }

    /// fsyncs a directory, so the names just renamed into it survive a crash.
    public static func syncDirectory(_ path: String) throws(Failure) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(path: path, operation: "open directory") }
        defer { close(fd) }
        _ = fsync(fd)
    }

    /// Refuses relative `path` unless writing it stays inside the working tree `root`: every name
    /// safe by git's rules (`GitPath`), so no `..` and nothing in `.git`, and no directory on the
    /// way a symbolic link or a file (a link would lead the write anywhere). With `creating`, a
    /// missing directory on the way is made (and one made meanwhile by another thread is checked
    /// like any other). The second line of defence behind the check of every fetched commit.
    /// `checked` remembers the directories seen.
    package static func checkInside(_ path: String, root: String, creating: Bool = false,
                                    checked: inout CheckedDirectories) throws(Failure) {
        guard GitPath.isSafe(path) else { throw Failure(path: root + path, operation: "write outside the profile or into .git:", code: EPERM) }
        let utf8 = path.utf8
        let parent = path[..<(utf8.lastIndex(of: 0x2F) ?? path.startIndex)]
        if parent.utf8.elementsEqual(checked.last.utf8) { return }   // so were the directories above it
        checked.last = parent
        var end = path.startIndex
        while let slash = utf8[end...].firstIndex(of: 0x2F) {
            let directory = path[..<slash]
            end = utf8.index(after: slash)
            guard checked.seen.insert(directory).inserted else { continue }
            let full = root + directory
            var info = stat()
            if lstat(full, &info) != 0 {
                guard errno == ENOENT else { throw Failure(path: full, operation: "inspect") }
                guard creating else { continue }
                if mkdir(full, 0o755) == 0 { continue }   // made here: a plain directory
                guard errno == EEXIST, lstat(full, &info) == 0 else { throw Failure(path: full, operation: "create directory") }
            }
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw Failure(path: full, operation: "write through (not a plain directory)", code: ENOTDIR)
            }
        }
    }

    /// The directories `checkInside` has checked, and the last file's one.
    package struct CheckedDirectories {
        var seen = Set<Substring>()
        var last: Substring = ""

        package init() {}
    }

    /// Writes working-tree files (paths relative to `root`, which ends with `/`) and returns their
    /// stat data, in order. Every path is checked (`checkInside`) and its directories made before
    /// any file is written, so a batch with one path refused writes no file. Both passes run on
    /// every core: bench row B5's clone (10,000 files in 257 directories) spent ~13 ms checking
    /// and making directories on one thread before the files were written, ~3.5 ms this way.
    package static func writeAllInside(_ files: [(path: String, bytes: [UInt8])], root: String) throws(Failure) -> [stat] {
        let checked = Parallel.shares(of: files.count) { range in
            Result { () throws(Failure) -> [(path: String, bytes: [UInt8])] in
                var seen = CheckedDirectories()
                return try range.map { index throws(Failure) in
                    try checkInside(files[index].path, root: root, creating: true, checked: &seen)
                    return (root + files[index].path, files[index].bytes)
                }
            }
        }
        var writes = [(path: String, bytes: [UInt8])]()
        writes.reserveCapacity(files.count)
        for part in checked { writes += try part.get() }
        return try writeAll(writes)
    }

    package static func makeParents(of path: String) throws(Failure) {
        var components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        var missing = [String]()
        while !components.isEmpty {
            let directory = components.joined(separator: "/")
            if directory.isEmpty || access(directory, F_OK) == 0 { break }
            missing.append(directory)
            components = components.dropLast()
        }
        for directory in missing.reversed() where mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw Failure(path: directory, operation: "create directory")
        }
    }

    package static func removeEmptyParents(of path: String, below root: String) {
        var components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        while !components.isEmpty {
            let directory = components.joined(separator: "/")
            if directory.count < root.count || directory + "/" == root { return }
            if rmdir(directory) != 0 { return }
            components = components.dropLast()
        }
    }
}
