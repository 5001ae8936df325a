/// What a fetch from a path remote read, hashed against their ids and found while copying objects
/// in (`fetchObjectsFromLocalRepository`): a value the sync hands from its transport step to the
/// steps that read those objects next (the check of the new commits, the merge and checkout), so
/// they are not read and inflated again (the bench's sync and clone rows, G6). Ids name content and each
/// object kept here matched its id, so what was read from the quarantine is the same object in
/// the profile once admitted. Empty for a fetch over ssh or a prefetched pack.
public struct FetchedObjects: Sendable {
    /// Trees read from the remote, by id, up to `ObjectTransfer.treesKept` bytes.
    package var trees = [ObjectID: RawTree]()
    /// Blobs copied, by id, up to `ObjectTransfer.blobsKept` bytes.
    package var blobs = [ObjectID: [UInt8]]()
    /// What changed between each new commit's first parent's tree and its own, found from trees
    /// whose bytes matched their ids, up to `ObjectTransfer.changesKept` bytes (`treeChanges`
    /// answers from here and reads no tree for these).
    package var changes = [TreePair: [TreeChange]]()

    /// Nothing kept.
    public init() {}

    /// Nothing kept: every read goes to the repository.
    public static let none = FetchedObjects()

    /// True when nothing is kept.
    public var isEmpty: Bool { trees.isEmpty && blobs.isEmpty && changes.isEmpty }
}

extension Repository {
    /// Runs `body` — one step of a sync that was handed `objects` — with this repository reading
    /// trees and blobs from `objects` before its own database (`rawTree`, `blob`, `objectHeader`,
    /// `treeChanges`). What was lent before is put back when `body` returns or throws: nothing
    /// outlives the step that was given the value, so no later step finds it.
    package func reading<T>(_ objects: FetchedObjects, _ body: () throws -> T) rethrows -> T {
        let previous = lent
        lent = objects
        defer { lent = previous }
        return try body()
    }
}
