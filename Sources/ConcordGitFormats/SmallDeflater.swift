// This file touches zlib (Adler-32).
internal import CShims

/// Compresses small objects (record files, bucket trees) into zlib streams of ONE fixed-Huffman
/// deflate block: greedy LZ77 matching on a 4-byte hash, the fixed codes of RFC 1951, Adler-32.
///
/// zlib at level 1 spends ~26 µs on a 325-byte record, most of it building and sizing Huffman
/// trees for a block it barely fills. Bench row "G4 deflate 10k records one by one" (commit
/// e9b7ede, 5 runs on 2 shared cores): 44.7 ms here vs 263 ms through zlib level 1 for the 10k
/// profile's records; row "G4 write a pack of 10k record blobs": 24.5 vs 158 ms, of a 422 ms
/// import. The output is ~13% larger (2.31 vs 2.04 MiB). Any inflater reads the result:
/// it is ordinary deflate, which git's `inflate` and `git fsck` check like any other object.
package struct SmallDeflater {
    /// Larger inputs go to zlib: matches reach back at most 32 KiB, the whole input here.
    package static let maximumInput = 32 * 1024

    private static let maximumHashBits = 13
    /// Most recent position + 1 of each 4-byte hash (0: none); grown to the largest input's size,
    /// and only the first `1 << bits` entries are used (and cleared) per input.
    private var table = [Int32]()

    package init() {}

    /// Appends the zlib stream of `input` (at most `maximumInput` bytes) to `out`.
    package mutating func append(_ input: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        precondition(input.count <= Self.maximumInput, "SmallDeflater takes at most \(Self.maximumInput) bytes")
        let count = input.count
        var hashBits = 8
        while hashBits < Self.maximumHashBits && 1 << hashBits < count { hashBits += 1 }
        let start = out.count
        // Worst case: 9 bits per byte, the block header, end-of-block code and 8 bytes of slack
        // for the 64-bit stores, plus the 2-byte header and 4-byte checksum.
        out += repeatElement(0, count: count + count / 8 + 24)
        if table.count < 1 << hashBits { table = [Int32](repeating: 0, count: 1 << hashBits) }
        let written = table.withUnsafeMutableBufferPointer { table in
            out.withUnsafeMutableBytes { buffer in
                let target = buffer.baseAddress! + start
                table.baseAddress!.update(repeating: 0, count: 1 << hashBits)
                return Self.encode(input, hashBits: hashBits, table: table.baseAddress!, into: target)
            }
        }
        out.removeLast(out.count - start - written)
    }

    /// Writes header, block and checksum at `target`; returns the byte count.
    private static func encode(_ input: UnsafeRawBufferPointer, hashBits: Int, table: UnsafeMutablePointer<Int32>,
                               into target: UnsafeMutableRawPointer) -> Int {
        target.storeBytes(of: 0x78, toByteOffset: 0, as: UInt8.self)   // deflate, 32 KiB window
        target.storeBytes(of: 0x01, toByteOffset: 1, as: UInt8.self)   // fastest; (0x7801 % 31 == 0)
        var writer = BitWriter(target + 2, literals: FixedCodes.literalTable, lengths: FixedCodes.lengthTable)
        writer.put(0b011, 3)   // BFINAL = 1, BTYPE = 01 (fixed Huffman)
        let count = input.count
        if let bytes = input.baseAddress, count > 0 {
            var position = 0
            if count >= 4 {
                let shift = UInt32(32 - hashBits)
                while position + 4 <= count {
                    let word = bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)
                    let slot = Int((word &* 2_654_435_761) >> shift)
                    let candidate = Int(table[slot]) - 1
                    table[slot] = Int32(position + 1)
                    if candidate >= 0, bytes.loadUnaligned(fromByteOffset: candidate, as: UInt32.self) == word {
                        let length = matchLength(bytes, candidate, position, longest: min(258, count - position))
                        writer.putMatch(length: length, distance: position - candidate)
                        position += length
                    } else {
                        writer.putLiteral(bytes.load(fromByteOffset: position, as: UInt8.self))
                        position += 1
                    }
                }
            }
            while position < count {
                writer.putLiteral(bytes.load(fromByteOffset: position, as: UInt8.self))
                position += 1
            }
        }
        writer.put(0, 7)   // end of block: symbol 256, seven zero bits
        var length = 2 + writer.finish()
        let checksum = UInt32(truncatingIfNeeded: concord_adler32(1, input.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                                                  UInt32(count)))
        for shift in [24, 16, 8, 0] {
            target.storeBytes(of: UInt8(truncatingIfNeeded: checksum >> UInt32(shift)), toByteOffset: length, as: UInt8.self)
            length += 1
        }
        return length
    }

    /// How many bytes from `position` repeat those from `candidate` (at least the 4 already
    /// known to), up to `longest`: eight bytes at a time, then the first differing byte.
    @inline(__always)
    private static func matchLength(_ bytes: UnsafeRawPointer, _ candidate: Int, _ position: Int, longest: Int) -> Int {
        var length = 4
        while length + 8 <= longest {
            let difference = bytes.loadUnaligned(fromByteOffset: candidate + length, as: UInt64.self).littleEndian
                ^ bytes.loadUnaligned(fromByteOffset: position + length, as: UInt64.self).littleEndian
            if difference != 0 { return length + difference.trailingZeroBitCount / 8 }
            length += 8
        }
        while length < longest,
              bytes.load(fromByteOffset: candidate + length, as: UInt8.self) == bytes.load(fromByteOffset: position + length, as: UInt8.self) {
            length += 1
        }
        return length
    }

    /// Deflate's bit order: values least significant bit first; Huffman codes are stored
    /// bit-reversed in the tables below so they can be written the same way.
    private struct BitWriter {
        let base: UnsafeMutableRawPointer
        /// `FixedCodes.literals` and `FixedCodes.lengths`, read without a check per symbol.
        let literals: UnsafePointer<(bits: UInt16, count: UInt8)>
        let lengths: UnsafePointer<(bits: UInt32, count: UInt8)>
        var offset = 0
        var bits: UInt64 = 0
        var filled = 0

        init(_ base: UnsafeMutableRawPointer, literals: UnsafePointer<(bits: UInt16, count: UInt8)>,
             lengths: UnsafePointer<(bits: UInt32, count: UInt8)>) {
            self.base = base
            self.literals = literals
            self.lengths = lengths
        }

        @inline(__always)
        mutating func put(_ value: UInt32, _ count: Int) {
            bits |= UInt64(value) << UInt64(filled)
            filled += count
            if filled >= 32 {
                base.storeBytes(of: UInt32(truncatingIfNeeded: bits).littleEndian, toByteOffset: offset, as: UInt32.self)
                offset += 4
                bits >>= 32
                filled -= 32
            }
        }

        @inline(__always)
        mutating func putLiteral(_ byte: UInt8) {
            let code = literals[Int(byte)]
            put(UInt32(code.bits), Int(code.count))
        }

        @inline(__always)
        mutating func putMatch(length: Int, distance: Int) {
            let lengthCode = lengths[length]
            put(lengthCode.bits, Int(lengthCode.count))
            // Distance: 5-bit code (reversed), then its extra bits.
            let x = distance - 1
            if x < 4 {
                put(UInt32(FixedCodes.reversedFive[x]), 5)
            } else {
                let top = (Int.bitWidth - 1) - x.leadingZeroBitCount
                let code = 2 * top + ((x >> (top - 1)) & 1)
                let extra = top - 1
                put(UInt32(FixedCodes.reversedFive[code]) | UInt32(x & ((1 << extra) - 1)) << 5, 5 + extra)
            }
        }

        /// Flushes the last partial byte; returns the bytes written.
        mutating func finish() -> Int {
            while filled > 0 {
                base.storeBytes(of: UInt8(truncatingIfNeeded: bits), toByteOffset: offset, as: UInt8.self)
                offset += 1
                bits >>= 8
                filled = max(0, filled - 8)
            }
            return offset
        }
    }
}

/// RFC 1951's fixed Huffman codes, bit-reversed for least-significant-first output.
private enum FixedCodes {
    package static func reversed(_ code: UInt32, _ count: Int) -> UInt32 {
        var result: UInt32 = 0
        for bit in 0..<count where code & (1 << UInt32(bit)) != 0 { result |= 1 << UInt32(count - 1 - bit) }
        return result
    }

    /// Literal/length symbol 0…287 → (code, bit count).
    package static func symbol(_ symbol: Int) -> (bits: UInt32, count: Int) {
        switch symbol {
        case 0...143: (reversed(0x30 + UInt32(symbol), 8), 8)
        case 144...255: (reversed(0x190 + UInt32(symbol - 144), 9), 9)
        case 256...279: (reversed(UInt32(symbol - 256), 7), 7)
        default: (reversed(0xC0 + UInt32(symbol - 280), 8), 8)
        }
    }

    package static let literals: [(bits: UInt16, count: UInt8)] = (0..<256).map { byte in
        let code = symbol(byte)
        return (UInt16(code.bits), UInt8(code.count))
    }

    /// Match length 3…258 → its length symbol's code followed by the extra bits, as one value.
    package static let lengths: [(bits: UInt32, count: UInt8)] = (0...258).map { length in
        guard length >= 3 else { return (0, 0) }
        if length == 258 {
            let code = symbol(285)
            return (code.bits, UInt8(code.count))
        }
        let x = length - 3
        if x < 8 {
            let code = symbol(257 + x)
            return (code.bits, UInt8(code.count))
        }
        let top = (Int.bitWidth - 1) - x.leadingZeroBitCount
        let index = 4 * (top - 1) + ((x >> (top - 2)) & 3)
        let extra = top - 2
        let code = symbol(257 + index)
        return (code.bits | UInt32(x & ((1 << extra) - 1)) << UInt32(code.count), UInt8(code.count + extra))
    }

    package static let reversedFive: [UInt8] = (0..<32).map { UInt8(reversed(UInt32($0), 5)) }

    /// `literals` and `lengths` copied once into memory that lives as long as the process, so
    /// the encoder reads them through plain pointers. Unchecked, and safe to share: written once, by
    /// the lazy initialisation of the static (which Swift runs once), and only read after.
    package nonisolated(unsafe) static let literalTable: UnsafePointer<(bits: UInt16, count: UInt8)> = permanentCopy(literals)
    package nonisolated(unsafe) static let lengthTable: UnsafePointer<(bits: UInt32, count: UInt8)> = permanentCopy(lengths)

    private static func permanentCopy<T>(_ values: [T]) -> UnsafePointer<T> {
        let storage = UnsafeMutablePointer<T>.allocate(capacity: values.count)
        storage.initialize(from: values, count: values.count)
        return UnsafePointer(storage)
    }
}
