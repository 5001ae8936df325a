import ConcordGit
import ConcordKit
import Foundation

/// G2: bulk object writes: `ObjectPack` vs libgit2's mempack, dumped and stored through the indexer.
enum PackWriteRows {
    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let small = try context.sharedProfile(records: 10_000)
        context.progress("G2 preparing: the 10k-record profile's records")
        let records = try Pieces.records(of: small.profile)
        let paths = records.files.map(\.path), contents = records.files.map(\.bytes)
        var made = [(path: String, tree: ObjectID)]()
        let write = try Pieces.alternate(runs: context.runs, context.progress, label: "G2 import objects 10k", hand: { run in
            let path = context.path("hand-\(run).git").path
            let target = try Repository.create(at: path, bare: true)
            return try timed {
                var blobPack = ObjectPack(), treePack = ObjectPack()
                let blobs = blobPack.addBlobs(contents)
                try blobPack.write(into: target)   // the blobs first, as a bulk write stores them
                let tree = try target.writeTree(base: nil, edits: try zip(paths, blobs).map { (try TreePath($0), Optional($1)) }, into: &treePack)
                try treePack.write(into: target)
                made.append((path, tree))
            }
        }, libgit2: { run in
            let path = context.path("libgit2-\(run).git").path
            _ = try Repository.create(at: path, bare: true)
            return try timed {
                let writer = try Libgit2MempackWriter(repositoryAt: path)
                let blobs = try writer.writeBlobs(contents)
                let tree = try writer.repository.writeTreeUsingLibgit2(base: nil, edits: zip(paths, blobs).map { ($0, Optional($1)) })
                try writer.writePack(tree: tree)
                made.append((path, tree))
            }
        })
        // Each repository, opened afresh, must hold the profile's tree and its every record (read back from the pack).
        for (path, tree) in made {
            guard tree == records.tree else { throw BenchError("G2: \(path) got tree \(tree), the profile has \(records.tree)") }
            let reopened = try Repository.open(path)
            for file in records.files.prefix(200) {
                guard let entry = try reopened.entry(at: file.path, inTree: tree), try reopened.blob(entry.id) == file.bytes else {
                    throw BenchError("G2: \(path) does not give back \(file.path)")
                }
            }
        }
        let packBytes = { (path: String) -> Int in
            let directory = path + "/objects/pack"
            return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).reduce(0) { sum, name in
                sum + (((try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size]) as? Int) ?? 0)
            }
        }
        let sizes = (hand: packBytes(context.path("hand-1.git").path), libgit2: packBytes(context.path("libgit2-1.git").path))
        return Pieces.oneRowResult(
            context, label: "G2 objects of a 10k-record import: blobs, trees, one pack (hand-written vs libgit2 mempack)", samples: write,
            hand: "`ObjectPack`: blobs hashed on every core, the trees (built by libgit2 in memory, "
                + "`writeTree(into:)`) copied into it, `.pack` and `.idx` written directly (fsynced) with `SmallDeflater`",
            libgit2: "`Libgit2MempackWriter`: `git_odb_write` of each blob and `git_tree_create_updated` into a "
                + "mempack backend, then `git_packbuilder_insert_tree` + `git_packbuilder_write` (delta "
                + "search, zlib default level, the indexer writes `.pack` and `.idx`, fsync on). "
                + "`git_mempack_dump` was tried first: in 1.5.1 it packs only what the mempack's commits "
                + "reach, so a tree-only write dumps an empty pack",
            notes: [
                "Each run writes the shared 10k profile's \(Format.count(records.files.count)) record files (bytes in memory) "
                    + "and their trees into a new empty bare repository: the object-database part of `concord import`. Checks: "
                    + "both give the profile's tree id, and 200 records read back from a freshly opened repository.",
                "Pack + index on disk: hand-written \(Format.bytes(sizes.hand)), libgit2 \(Format.bytes(sizes.libgit2)).",
            ])
    }
}
