/// A zlib stream of `data` in stored (uncompressed) deflate blocks: what a test needs to write a
/// git object file by hand, exactly as it wants it (a header that lies about the size, a stream
/// cut short), with no compressor in the way.
public func zlibStored(_ data: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [0x78, 0x01]
    var offset = 0
    repeat {
        let count = min(65_535, data.count - offset)
        let final: UInt8 = offset + count == data.count ? 1 : 0
        out += [final, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
        out += data[offset..<(offset + count)]
        offset += count
    } while offset < data.count
    var a: UInt32 = 1, b: UInt32 = 0
    for byte in data { a = (a + UInt32(byte)) % 65_521; b = (b + a) % 65_521 }
    let adler = b << 16 | a
    return out + [UInt8(adler >> 24), UInt8((adler >> 16) & 0xFF), UInt8((adler >> 8) & 0xFF), UInt8(adler & 0xFF)]
}
