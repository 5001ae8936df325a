import ConcordGit
import ConcordKit
import Foundation

/// G6: a clone's checkout: the parallel working-tree writer and index patch vs `git_checkout_tree`.
enum CheckoutRows {
    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let small = try context.sharedProfile(records: 10_000)
        let origin = context.path("origin.git")
        context.progress("G6 preparing: a bare copy of the 10k-record profile")
        try Pieces.bareCopy(of: small.profile, at: origin)
        /// A new working repository holding the profile's objects and `main`, nothing checked out (untimed).
        func prepared(_ name: String) throws -> (repository: Repository, tree: ObjectID, url: URL) {
            let url = context.path(name)
            let repository = try Repository.create(at: url.path, bare: false)
            guard let tip = try repository.fetchFromLocalRepository(at: origin.path, ref: "refs/heads/main", into: "refs/heads/main",
                                                                    intoEmpty: true) else { throw BenchError("G6: no main") }
            repository.releaseCaches()
            return (repository, try repository.commit(tip).tree, url)
        }
        var checkedOut = [URL]()
        let samples = try Pieces.alternate(runs: context.runs, context.progress, label: "G6 checkout 10k", hand: { run in
            let target = try prepared("hand-\(run)")
            let changes = try Pieces.files(of: target.tree, in: target.repository).map {
                WorkingTreeChange(path: try TreePath($0.path), bytes: try target.repository.blob($0.blob), blob: $0.blob)
            }
            checkedOut.append(target.url)
            return try timed { try target.repository.applyToWorkingTree(changes, rebuildingDamagedIndexFrom: target.tree) }
        }, libgit2: { run in
            let target = try prepared("libgit2-\(run)")
            checkedOut.append(target.url)
            return try timed { try target.repository.checkoutUsingLibgit2(target.tree) }
        })
        for url in checkedOut.suffix(2) {
            let status = try context.git.status(url)
            guard status.isEmpty else { throw BenchError("G6: git status in \(url.lastPathComponent) is not clean:\n\(status.prefix(500))") }
        }
        return Pieces.oneRowResult(
            context, label: "G6 check out 10k records into an empty working tree, files + index (hand-written vs libgit2)", samples: samples,
            hand: "`applyToWorkingTree`: paths checked and directories made, then files written, "
                + "each by one thread per core (`FileIO.writeAllInside`), then the index from their stat data",
            libgit2: "`checkoutUsingLibgit2`: `git_checkout_tree` with `GIT_CHECKOUT_FORCE`, which reads "
                + "each blob from the pack, writes the files one by one and writes the index",
            notes: [
                "Each run: a new repository with the shared 10k profile's objects and `main` (untimed), then the checkout of "
                    + "its tree. The hand-written side gets the record bytes in memory, as a clone has them from its fetch "
                    + "(`FetchedObjects`); libgit2 reads them from the pack. Check: `git status` is clean in the last of each.",
            ])
    }
}
