import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value handed to concurrent workers that each touch it at a different time (the hasher and
/// the writer read the same immutable mapping; each result is written by one worker only).
final class UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// A file mapped read-only; unmapped when released.
final class MappedFile {
    package let bytes: UnsafeRawBufferPointer
    package let info: stat

    init?(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 32,
              let base = mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0), base != MAP_FAILED
        else { return nil }
        bytes = UnsafeRawBufferPointer(start: base, count: Int(info.st_size))
        self.info = info
        mapped = true
    }

    private let mapped: Bool

    /// An empty version 2 index: header, no entries, checksum.
    init(emptyIndex: Void) {
        var header: [UInt8] = Array("DIRC".utf8) + [0, 0, 0, 2, 0, 0, 0, 0]
        header += Array(Insecure.SHA1.hash(data: header))
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: header.count, alignment: 1)
        copy.copyBytes(from: header)
        bytes = UnsafeRawBufferPointer(copy)
        info = stat()
        mapped = false
    }

    deinit {
        if mapped { munmap(UnsafeMutableRawPointer(mutating: bytes.baseAddress), bytes.count) }
        else { UnsafeMutableRawBufferPointer(mutating: bytes).deallocate() }
    }
}
