import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Small POSIX file helpers for key material: atomic writes with an exact mode, mode checks.
enum SecureFile {
    /// Writes `text` to `url` atomically: a temporary file in the same directory created with
    /// `mode`, written, fsynced, renamed over `url`, then the directory fsynced.
    static func write(_ text: String, to url: URL, mode: mode_t) throws(TrustError) {
        let directory = url.deletingLastPathComponent()
        let temp = directory.appendingPathComponent(".\(url.lastPathComponent).tmp-\(UInt32.random(in: 0 ... .max))")
        let fd = open(temp.path, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard fd >= 0 else { throw failure(temp, "create") }
        var written = false
        defer { if !written { unlink(temp.path) } }
        do {
            defer { close(fd) }
            // open() applies the umask; set the exact mode we want.
            guard fchmod(fd, mode) == 0 else { throw failure(temp, "set the mode of") }
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { posixWrite(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw failure(temp, "write") }
                offset += n
            }
            guard fsync(fd) == 0 else { throw failure(temp, "sync") }
        }
        guard rename(temp.path, url.path) == 0 else { throw failure(url, "rename a temporary file to") }
        written = true
        syncDirectory(directory)
    }

    /// Creates `url` (and missing parents) as a directory with mode 0700 if it does not exist.
    static func createPrivateDirectory(_ url: URL) throws(TrustError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw .fileSystem(url, operation: "use as a directory", reason: "it is a file")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(
                at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .fileSystem(url, operation: "create directory", reason: error.localizedDescription)
        }
        guard chmod(url.path, 0o700) == 0 else { throw failure(url, "set the mode of") }
    }

    /// The permission bits of `url`, or nil if it does not exist.
    static func mode(of url: URL) throws(TrustError) -> UInt16? {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw failure(url, "inspect")
        }
        return UInt16(info.st_mode & 0o7777)
    }

    /// The contents of `url` as UTF-8 text.
    static func read(_ url: URL) throws(TrustError) -> String {
        do {
            let data = try Data(contentsOf: url)
            guard let text = String(data: data, encoding: .utf8) else {
                throw TrustError.fileSystem(url, operation: "read", reason: "not UTF-8 text")
            }
            return text
        } catch let error as TrustError {
            throw error
        } catch {
            throw .fileSystem(url, operation: "read", reason: error.localizedDescription)
        }
    }

    static func exists(_ url: URL) -> Bool {
        var info = stat()
        return lstat(url.path, &info) == 0
    }

    private static func syncDirectory(_ url: URL) {
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    private static func failure(_ url: URL, _ operation: String) -> TrustError {
        .fileSystem(url, operation: operation, reason: String(cString: strerror(errno)))
    }
}

/// POSIX `write(2)`, named so it does not clash with Swift's own `write` methods.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    write(fd, buffer, count)
}
