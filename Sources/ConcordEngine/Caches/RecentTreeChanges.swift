import ConcordGit
import Synchronization

/// The files a merge or fast-forward just found between two trees (`SyncMerge` lists them to
/// update the working tree), kept for the record index's next catch-up over the same two trees: a
/// sync's index update then reads only the changed blobs, without comparing the trees again. Trees
/// are named by their content, so the list holds for any repository of the engine.
final class RecentTreeChanges: Sendable {
    typealias Files = [(path: TreePath, before: ObjectID?, blob: ObjectID?)]
    private let last = Mutex<(from: ObjectID?, to: ObjectID, files: Files)?>(nil)

    /// Keeps `files`, the difference from tree `from` to tree `to` (one pair at a time; small lists only).
    func remember(from: ObjectID?, to: ObjectID, files: Files) {
        guard files.count <= 10_000 else { return }
        last.withLock { $0 = (from, to, files) }
    }

    /// The files kept for exactly these two trees, if any.
    func files(from: ObjectID?, to: ObjectID) -> Files? {
        last.withLock { kept in kept.flatMap { $0.from == from && $0.to == to ? $0.files : nil } }
    }
}
