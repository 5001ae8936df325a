import ConcordGit
import ConcordKit
import Foundation

/// G4: small-object deflate: `SmallDeflater` vs zlib level 1, per record and on a pack write.
enum DeflateRows {
    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let small = try context.sharedProfile(records: 10_000)
        context.progress("G4 preparing: the 10k-record profile's records")
        let records = try Pieces.records(of: small.profile).files.map(\.bytes)
        var sizes = (hand: 0, zlib: 0)
        func deflateAll(zlib: Bool) throws -> Double {
            let compressor = ObjectCompressor(smallObjectsThroughZlib: zlib)
            var total = 0
            let seconds = try timed {
                for record in records {
                    var out = [UInt8]()
                    try compressor.append(record, to: &out)
                    total += out.count
                }
            }
            if zlib { sizes.zlib = total } else { sizes.hand = total }
            return seconds
        }
        let perRecord = try Pieces.alternate(runs: context.runs, context.progress, label: "G4 deflate 10k records",
                                             hand: { _ in try deflateAll(zlib: false) }, libgit2: { _ in try deflateAll(zlib: true) })

        var packSizes = (hand: 0, zlib: 0)
        func writePack(run: Int, zlib: Bool) throws -> Double {
            let directory = context.path("\(zlib ? "zlib" : "hand")-\(run)/objects/pack").path + "/"
            var pack = ObjectPack()
            pack.smallObjectsThroughZlib = zlib
            _ = pack.addBlobs(records)
            let seconds = try timed { _ = try pack.write(toPackDirectory: directory, durable: true) }
            let size = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
                .filter { $0.hasSuffix(".pack") }
                .reduce(0) { $0 + (((try? FileManager.default.attributesOfItem(atPath: directory + $1)[.size]) as? Int) ?? 0) }
            if zlib { packSizes.zlib = size } else { packSizes.hand = size }
            return seconds
        }
        let pack = try Pieces.alternate(runs: context.runs, context.progress, label: "G4 pack write 10k blobs",
                                        hand: { try writePack(run: $0, zlib: false) }, libgit2: { try writePack(run: $0, zlib: true) })
        // A pack each way must read back through git: index-pack --verify checks every object.
        for name in ["hand-1", "zlib-1"] {
            let directory = context.path("\(name)/objects/pack")
            guard let packFile = try FileManager.default.contentsOfDirectory(atPath: directory.path).first(where: { $0.hasSuffix(".pack") }) else {
                throw BenchError("G4: no pack written in \(directory.path)")
            }
            try context.git.run(["index-pack", "--verify", directory.appendingPathComponent(packFile).path], in: nil,
                                what: "git index-pack --verify (\(name))")
        }
        var perRecordHand = Samples(), perRecordZlib = Samples()
        perRecord.hand.values.forEach { perRecordHand.append($0 / Double(records.count)) }
        perRecord.libgit2.values.forEach { perRecordZlib.append($0 / Double(records.count)) }
        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                ResultRow(label: "G4 deflate 10k records one by one (SmallDeflater vs zlib level 1)",
                          concord: perRecord.hand, git: perRecord.libgit2),
                ResultRow(label: "G4 write a pack of 10k record blobs (SmallDeflater vs zlib level 1)", concord: pack.hand, git: pack.libgit2),
            ],
            notes: [
                Pieces.columnsNote("`ObjectCompressor()`: `SmallDeflater`, one fixed-Huffman block per object",
                                   "`ObjectCompressor(smallObjectsThroughZlib: true)`: zlib level 1 through one reused "
                                   + "stream, as libgit2 and git compress (git at level 1 with `core.compression=1`)"),
                "Data: the shared 10k profile's record files (~\(Format.bytes(records.reduce(0) { $0 + $1.count } / max(records.count, 1))) each). "
                    + "Per record: \(microseconds(perRecordHand.median)) hand-written, \(microseconds(perRecordZlib.median)) zlib "
                    + "(medians of the row above divided by \(Format.count(records.count))). Deflated total: hand-written "
                    + "\(Format.bytes(sizes.hand)), zlib \(Format.bytes(sizes.zlib)).",
                "Pack row: `ObjectPack.write(toPackDirectory:durable: true)` of the same blobs (hashing done before, untimed) "
                    + "each way; `.pack` sizes: hand-written \(Format.bytes(packSizes.hand)), zlib \(Format.bytes(packSizes.zlib)); "
                    + "both packs pass `git index-pack --verify`.",
                "Runs: records hand \(Format.runs(perRecord.hand)); zlib \(Format.runs(perRecord.libgit2)). Pack hand "
                    + "\(Format.runs(pack.hand)); zlib \(Format.runs(pack.libgit2)).",
            ])
    }
}
