import ConcordGit
import ConcordKit
import Foundation

extension Scenario {
    /// G1: tree writes: `RawTree` splicing (`Repository.writeTree`) vs `git_tree_create_updated`.
    static let treeWrites = Scenario(id: "G1", title: "tree writes: RawTree splicing vs git_tree_create_updated",
                                     targetRatio: .nan, run: TreeWriteRows.run)
}

private enum TreeWriteRows {
    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let large = try context.shared.profile(records: 100_000) { context.progress("G1 \($0)") }
        let small = try context.shared.profile(records: 10_000) { context.progress("G1 \($0)") }

        // One put's tree write at 100k: one edited record, new trees as loose objects (as a put writes them).
        context.progress("G1 preparing: a bare copy of the 100k-record profile")
        let repository = try Pieces.bareCopy(of: large.profile, at: context.path("put-100k.git"))
        guard let head = try repository.resolveReference("refs/heads/main") else { throw BenchError("no main") }
        let base = try repository.commit(head).tree
        func edit(_ run: Int, side: Int) throws -> (path: String, blob: ObjectID) {
            let index = (run * 7_919 + side * 50_021 + 13) % 100_000
            let blob = try repository.writeBlob(JSONValue.object(VocabularyData.data(index, revision: 1_000 + run)).canonicalLine())
            return (RecordPaths.file(directory: VocabularyData.kind, id: VocabularyData.id(index)), blob)
        }
        var handTrees = [(edit: (path: String, blob: ObjectID), tree: ObjectID)]()
        let put = try Pieces.alternate(runs: context.runs, context.progress, label: "G1 put tree write at 100k", hand: { run in
            let change = try edit(run, side: 0)
            return try timed { handTrees.append((change, try repository.writeTree(base: base, edits: [change.path: .some(change.blob)]))) }
        }, libgit2: { run in
            let change = try edit(run, side: 1)
            return try timed { _ = try repository.writeTreeUsingLibgit2(base: base, edits: [(change.path, change.blob)]) }
        })
        for (change, tree) in handTrees {
            guard try repository.writeTreeUsingLibgit2(base: base, edits: [(change.path, change.blob)]) == tree else {
                throw BenchError("G1: libgit2 and the hand-written writer made different trees for \(change.path)")
            }
        }

        // A whole put at 100k, the user-visible operation the tree write is part of.
        context.progress("G1 concord put at 100k (the whole operation)")
        var puts = Samples()
        for run in 0...context.runs {
            let index = (run * 6_007 + 777) % 100_000
            let id = VocabularyData.id(index)
            let json = String(decoding: JSONValue.object(VocabularyData.data(index, revision: 2_000 + run)).canonicalLine(), as: UTF8.self)
            let seconds = try context.concord.run(["put", "-C", large.profile.path, "\(VocabularyData.kind)/\(id)", "--json", json],
                                                  home: large.home, what: "concord put").seconds
            if run > 0 { puts.append(seconds) }
        }
        var withLibgit2 = Samples()
        for (index, seconds) in puts.values.enumerated() {
            withLibgit2.append(seconds - put.hand.values[index] + put.libgit2.values[index])
        }

        // A bulk write's trees: 10k records into an empty tree, into memory (a pack), as an import does.
        context.progress("G1 preparing: the 10k-record profile's records")
        let records = try Pieces.records(of: small.profile)
        var bulkTrees = [ObjectID]()
        let bulk = try Pieces.alternate(runs: context.runs, context.progress, label: "G1 import tree write 10k", hand: { run in
            let target = try Repository.create(at: context.path("bulk-hand-\(run).git").path, bare: true)
            var pack = ObjectPack()
            let blobs = pack.addBlobs(records.files.map(\.bytes))
            let edits = zip(records.files, blobs).map { (path: $0.0.path, blob: Optional($0.1)) }
            return try timed { bulkTrees.append(try target.writeTree(base: nil, edits: edits, into: &pack)) }
        }, libgit2: { run in
            let path = context.path("bulk-libgit2-\(run).git").path
            _ = try Repository.create(at: path, bare: true)
            let writer = try Libgit2MempackWriter(repositoryAt: path)
            let blobs = try writer.writeBlobs(records.files.map(\.bytes))
            let edits = zip(records.files, blobs).map { (path: $0.0.path, blob: Optional($0.1)) }
            return try timed { bulkTrees.append(try writer.repository.writeTreeUsingLibgit2(base: nil, edits: edits)) }
        })
        guard Set(bulkTrees).count == 1, bulkTrees.first == records.tree else {
            throw BenchError("G1: the bulk tree writes disagree with each other or with the profile's tree")
        }
        let (bulkHand, bulkLibgit2) = bulk
        var importNow = Samples(), importWithLibgit2 = Samples()
        importNow.append(small.importSeconds)
        importWithLibgit2.append(small.importSeconds - bulkHand.median + bulkLibgit2.median)

        return ScenarioResult(
            scenario: .treeWrites,
            rows: [
                ResultRow(label: "G1 tree write of one put at 100k (hand-written vs libgit2)", concord: put.hand, git: put.libgit2),
                ResultRow(label: "G1 whole put at 100k: concord put, and the same with libgit2's tree write (put − hand + libgit2)",
                          concord: puts, git: withLibgit2),
                ResultRow(label: "G1 trees of a 10k-record import, into memory (hand-written vs libgit2 + mempack)",
                          concord: bulkHand, git: bulkLibgit2),
                ResultRow(label: "G1 whole 10k import: concord import, and the same with libgit2's trees (import − hand + libgit2)",
                          concord: importNow, git: importWithLibgit2),
            ],
            notes: [
                Pieces.columnsNote("`Repository.writeTree(base:edits:)`: `RawTree.applying` splices the raw bytes of the trees "
                                   + "on the edited paths", "`Repository.writeTreeUsingLibgit2`: `git_tree_create_updated`"),
                "Put row: a bare copy of the shared 100k profile; each run writes one changed record's blob (untimed) and "
                    + "times the tree write of that one edit over HEAD's tree, new trees as loose objects (fsync on). Each side "
                    + "edits its own record; afterwards libgit2 redoes every hand-written edit and must give the same tree id.",
                "Whole-put row: `concord put` into the shared 100k profile (process launch to exit; today's put, which uses "
                    + "the hand-written writer), and in the git column the same put with its tree write swapped for libgit2's "
                    + "(put − hand-written tree write + libgit2 tree write, run by run): the share of a put the piece decides.",
                "Import row: the 10k profile's records; hand-written: `ObjectPack` + `writeTree(base: nil, edits:, into:)`; "
                    + "libgit2: a mempack-backed handle (`git_mempack_new`) + `git_tree_create_updated` from the empty tree. "
                    + "Only the tree write is timed (blobs are added before, untimed); both must give the profile's tree.",
                "Whole-import row: the one `concord import` that built the shared 10k profile (timed at set-up, one run), "
                    + "and in the git column the same with the median tree-write times of the row above swapped.",
                "Runs: put hand \(Format.runs(put.hand)); libgit2 \(Format.runs(put.libgit2)). Whole put \(Format.runs(puts)). "
                    + "Import trees hand \(Format.runs(bulkHand)); libgit2 \(Format.runs(bulkLibgit2)).",
            ])
    }
}
