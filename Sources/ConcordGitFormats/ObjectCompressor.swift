// This file touches zlib.
internal import CShims

/// How object bytes are compressed, in packs and loose objects alike. Up to 32 KiB (records,
/// bucket trees): `SmallDeflater` (bench rows G4: ~6× faster than zlib level 1 on records). Over 1 MiB (a kind tree of ~25,000 entries and up): zlib's
/// stored blocks, as level 1 manages only ~50 MB/s on tree bytes (80 ms for 4 MB) to save a third
/// of the size, and `git gc` later packs successive versions as small deltas. The rest: zlib level
/// 1 through one reused stream (`compress2` sets up ~256 KiB of state per call).
package final class ObjectCompressor {
    private var small = SmallDeflater()
    private var deflater: UnsafeMutablePointer<concord_deflater>?

    /// Small objects through zlib level 1 too, as libgit2 would (bench row G4 only).
    private let smallThroughZlib: Bool

    package init(smallObjectsThroughZlib: Bool = false) {
        smallThroughZlib = smallObjectsThroughZlib
    }

    deinit { concord_deflater_free(deflater) }

    /// Appends the zlib stream of `bytes` to `out`.
    package func append(_ bytes: [UInt8], to out: inout [UInt8]) throws {
        if !smallThroughZlib && bytes.count <= SmallDeflater.maximumInput {
            bytes.withUnsafeBytes { small.append($0, to: &out) }
            return
        }
        let stored = bytes.count > 1 << 20
        if !stored && deflater == nil {
            deflater = concord_deflater_new(1)
            guard deflater != nil else {
                throw GitError(function: "deflateInit", code: .other(-1), message: "zlib could not set up a compressor")
            }
        }
        var length = concord_deflate_bound(UInt(bytes.count))
        let start = out.count
        out += repeatElement(0, count: Int(length))
        let result = bytes.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { target in
                stored
                    ? concord_deflate(source.baseAddress, UInt(bytes.count), target.baseAddress! + start, &length, 0)
                    : concord_deflater_run(deflater, source.baseAddress, UInt(bytes.count), target.baseAddress! + start, &length)
            }
        }
        guard result == Z_OK else {
            throw GitError(function: "compress2", code: .other(result), message: "zlib failed to compress an object")
        }
        out.removeLast(out.count - start - Int(length))
    }
}
