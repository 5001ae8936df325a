import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What identifies the index file this code last wrote.
struct IndexStamp {
    let inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int
    let checksum: [UInt8]

    init(_ info: stat, checksum: [UInt8]) {
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
        self.checksum = checksum
    }

    func matches(_ info: stat, checksum trailer: UnsafeRawBufferPointer.SubSequence) -> Bool {
        inode == UInt64(info.st_ino) && size == Int64(info.st_size) && seconds == Int(info.st_mtim.tv_sec)
            && nanoseconds == Int(info.st_mtim.tv_nsec) && trailer.elementsEqual(checksum)
    }

    static func read(_ path: String) -> IndexStamp? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count == 5, let inode = UInt64(fields[0]), let size = Int64(fields[1]), let seconds = Int(fields[2]),
              let nanoseconds = Int(fields[3]), let checksum = ObjectID(hex: String(fields[4].prefix(40))) else { return nil }
        var info = stat()
        info.st_ino = .init(inode)
        info.st_size = .init(size)
        info.st_mtim.tv_sec = .init(seconds)
        info.st_mtim.tv_nsec = .init(nanoseconds)
        return IndexStamp(info, checksum: checksum.bytes)
    }

    /// Best effort: without a stamp the next patch simply verifies the checksum.
    func write(_ path: String) {
        let text = "\(inode) \(size) \(seconds) \(nanoseconds) \(ObjectID(bytes: checksum).hex)\n"
        try? FileIO.write(Array(text.utf8), to: path, makingParents: false)
    }
}
