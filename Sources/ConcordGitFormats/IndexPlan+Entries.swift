import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension IndexPlan {
    /// The 40 bytes of stat data an entry starts with: ctime, mtime, dev, ino, mode, uid, gid, size.
    static func appendStat(_ info: stat, to out: inout [UInt8]) {
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_ctim.tv_sec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_ctim.tv_nsec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_mtim.tv_sec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_mtim.tv_nsec))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_dev))
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_ino))
        out.appendBigEndian(0o100644)
        out.appendBigEndian(info.st_uid)
        out.appendBigEndian(info.st_gid)
        out.appendBigEndian(UInt32(truncatingIfNeeded: info.st_size))
    }

    /// A version 2 entry (no extended flags, stage 0), padded with NULs to a multiple of 8 bytes.
    static func appendEntry(path: [UInt8], info: stat, blob: ObjectID, to out: inout [UInt8]) {
        let start = out.count
        appendStat(info, to: &out)
        blob.append(to: &out)
        let flags = min(path.count, 0xFFF)
        out.append(UInt8(flags >> 8))
        out.append(UInt8(flags & 0xFF))
        out.append(contentsOf: path)
        let length = (62 + path.count + 8) & ~7
        out.append(contentsOf: repeatElement(0, count: start + length - out.count))
    }

    /// The first of the sorted `updates` whose path is not below `key` in byte order.
    static func lowerBound(_ key: UnsafeRawBufferPointer, in updates: [IndexPatch.Update]) -> Int {
        var low = 0, high = updates.count
        while low < high {
            let middle = (low + high) / 2
            if compare(updates[middle].path, key) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Whether the sorted `updates` write a file at exactly `path`.
    static func hasUpsert(at path: UnsafeRawBufferPointer, in updates: [IndexPatch.Update]) -> Bool {
        let index = lowerBound(path, in: updates)
        return index < updates.count && compare(updates[index].path, path) == 0 && updates[index].file != nil
    }

    /// Whether the sorted `updates` write a file below directory `directory`.
    static func hasUpsert(under directory: UnsafeRawBufferPointer, in updates: [IndexPatch.Update]) -> Bool {
        let prefix = Array(directory) + [0x2F]
        return prefix.withUnsafeBytes { prefix in
            var index = lowerBound(prefix, in: updates)
            while index < updates.count, updates[index].path.starts(with: prefix) {
                if updates[index].file != nil { return true }
                index += 1
            }
            return false
        }
    }

    @inline(__always)
    static func compare(_ path: [UInt8], _ name: UnsafeRawBufferPointer) -> Int {
        path.withUnsafeBytes { compare($0, name) }
    }

    /// Byte order of two paths (git's index order for stage-0 entries), with `memcmp`.
    @inline(__always)
    static func compare(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
        let common = min(first.count, second.count)
        let order = common > 0 ? memcmp(first.baseAddress!, second.baseAddress!, common) : 0
        return order != 0 ? Int(order) : first.count - second.count
    }

    static func uint32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}
