import ConcordGitFormats
import Foundation

/// A pack file and its index written by hand, entry by entry, exactly as a test wants them
/// (deltas whose bases lead nowhere or back to themselves, sizes that lie), with no git in the way.
public enum HandPack {
    public enum Entry {
        /// An object stored whole: `type` 1 commit, 2 tree, 3 blob.
        case whole(type: UInt8, bytes: [UInt8])
        /// A delta on the object with id `base`: `data` is the delta as stored (its own header
        /// declaring the base's size and the size it rebuilds, then its instructions).
        case refDelta(base: ObjectID, data: [UInt8])
    }

    /// A delta's data: the two sizes it declares, then one insert of `inserted` (at most 127 bytes).
    public static func delta(baseSize: Int, resultSize: Int, inserting inserted: [UInt8]) -> [UInt8] {
        varint(baseSize) + varint(resultSize) + [UInt8(inserted.count)] + inserted
    }

    /// Writes `pack-<name>.pack` and `.idx` into `directory` (an `objects/pack` directory), each
    /// entry listed under the id given for it.
    public static func write(_ entries: [(id: ObjectID, entry: Entry)], name: String, into directory: URL) throws {
        var pack = Array("PACK".utf8)
        pack.appendBigEndian(2)
        pack.appendBigEndian(UInt32(entries.count))
        var listed = [(id: ObjectID, offset: Int, crc: UInt32)]()
        for (id, entry) in entries {
            listed.append((id, pack.count, 0))
            switch entry {
            case .whole(let type, let bytes):
                pack += header(type: type, size: bytes.count) + zlibStored(bytes)
            case .refDelta(let base, let data):
                pack += header(type: 7, size: data.count)
                base.append(to: &pack)
                pack += zlibStored(data)
            }
        }
        // A checksum of the pack's bytes (any 20 bytes the index repeats would do for a reader).
        var checksum = [UInt8]()
        ObjectPack.id(of: pack, type: .blob).append(to: &checksum)
        pack += checksum
        try Data(pack).write(to: directory.appendingPathComponent("pack-\(name).pack"))
        try Data(ObjectPack.indexFile(entries: listed, packChecksum: checksum)).write(to: directory.appendingPathComponent("pack-\(name).idx"))
    }

    private static func header(type: UInt8, size: Int) -> [UInt8] {
        var out = [UInt8]()
        ObjectPack.appendHeader(type: type, size: size, to: &out)
        return out
    }

    /// `value` as a delta's size varint (seven bits a byte, low first, high bit: more follows).
    public static func varint(_ value: Int) -> [UInt8] {
        var out = [UInt8](), rest = value
        repeat {
            let byte = UInt8(rest & 0x7F)
            rest >>= 7
            out.append(rest > 0 ? byte | 0x80 : byte)
        } while rest > 0
        return out
    }
}
