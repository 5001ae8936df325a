/// Where a record's file lives in the repository (data format 2).
///
/// A record of kind `k` with id `x` is `<k.directory>/<bucket>/<x>.json`, where `<bucket>` is two
/// lower-case hex digits: the low byte of the 32-bit FNV-1a hash of the id's UTF-8 bytes. The
/// 256 buckets keep every tree small: with one flat directory, a kind of 100,000 records is a
/// 4 MB tree that every commit, fetch and checkout rewrites, reads or compares in full; with
/// buckets a one-record change rewrites a 10 KB kind tree and one ~16 KB bucket tree.
/// (Format 1 was one flat directory per kind.) Log kinds keep their per-day files directly in
/// the kind's directory: there are few of them.
public enum RecordPaths {
    /// The bucket directory name of record id `id`, e.g. "3f".
    public static func bucket(_ id: String) -> String {
        bucket(ofBytes: id.utf8)
    }

    /// The bucket directory name of the record id whose UTF-8 bytes are `id`.
    static func bucket(ofBytes id: some Sequence<UInt8>) -> String {
        var hash: UInt32 = 0x811C_9DC5
        for byte in id {
            hash ^= UInt32(byte)
            hash = hash &* 0x0100_0193
        }
        return buckets[Int(hash & 0xFF)]
    }

    /// All 256 bucket directory names, "00" to "ff".
    public static let buckets: [String] = (0..<256).map { value in
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[value >> 4], digits[value & 0xF]], as: UTF8.self)
    }

    /// The path of record `id` in `directory`, e.g. `vocabulary/3f/puzzle.json`.
    public static func file(directory: String, id: String) -> String {
        let (bucketDirectory, name) = location(directory: directory, id: id)
        return bucketDirectory + "/" + name
    }

    /// The same path as its directory and file name, e.g. (`vocabulary/3f`, `puzzle.json`).
    public static func location(directory: String, id: String) -> (directory: String, name: String) {
        (directory + "/" + bucket(id), id + ".json")
    }

    /// Whether `name` has a bucket's shape: two lower-case hex digits.
    public static func isBucket(_ name: some StringProtocol) -> Bool {
        name.utf8.count == 2 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
