import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value handed to concurrent workers that each touch it at a different time (the hasher and
/// the writer read the same immutable mapping; each result is written by one worker only).
final class UncheckedBox<Value>: @unchecked Sendable {   // unchecked: its workers read it, or one of them writes it, and it is read after they have joined
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
              let base = mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE | Self.populate, fd, 0), base != MAP_FAILED
        else { return nil }
        bytes = UnsafeRawBufferPointer(start: base, count: Int(info.st_size))
        self.info = info
        mapped = true
    }

    private let mapped: Bool

    /// Linux's `MAP_POPULATE` (the pages read in by `mmap` itself, not one fault each); elsewhere,
    /// and built with `-DCONCORD_PORTABLE`, nothing: the pages are read in as they are touched.
    #if os(Linux) && !CONCORD_PORTABLE
    private static let populate = MAP_POPULATE
    #else
    private static let populate: Int32 = 0
    #endif

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
