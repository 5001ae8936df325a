// This file touches the libgit2 C API.
internal import CLibgit2

/// Copies the objects one repository on this machine has and another lacks, for fetches from and
/// pushes to path remotes, with a cost that follows the change rather than the profile.
///
/// libgit2's local transport builds a pack with its packbuilder, which walks every entry of every
/// tree it sends and deflates at zlib's default level, then runs the indexer over it. Bench rows
/// G5 (commit e9b7ede, 5 runs on 2 shared cores), here vs `git_remote_fetch`/`git_remote_push` on
/// the path: one new commit at 100k records fetched in 1.2 vs 43.3 ms and pushed in 1.9 vs
/// 20.3 ms; a 10k-record profile fetched into an empty repository (a clone) in 101 vs 995 ms.
/// Here the new commits are found by walking
/// back from the tip until commits the destination has, and each new tree is compared with its
/// first parent's tree entry by entry, so only the entries that changed are looked at. Everything
/// copied is re-hashed and must match its id, so a damaged or forged source cannot slip content in
/// under another object's name; a remote's files are read by `SourceObjects`, never by libgit2's
/// loose-object code. The objects land as one pack (see `ObjectPack`). (Kept over libgit2's local
/// transport for safety whatever the speed: that transport parses the untrusted remote with
/// libgit2 1.5.1, which overflows its heap or spins on a forged loose object (`SourceObjects`), and
/// its push forces the remote ref with no compare-and-swap.) A class: as a struct, the closure its
/// walk hands each tree entry to copied the whole transfer (every set and dictionary retained and
/// released) per entry.
final class ObjectTransfer {
    let source: ObjectSource
    let destination: Repository
    /// The destination has no objects yet (a clone): nothing is looked up there, thousands of
    /// times, only to be missed.
    let destinationIsEmpty: Bool
    private var pack = ObjectPack()
    /// The trees read from the source whose bytes hash to their ids, up to `treesKept` bytes,
    /// returned in the copy's `FetchedObjects` (the merge finds the changed files with them next).
    private var trees = [ObjectID: RawTree]()
    private var treeBytes = 0
    private static let treesKept = 16 << 20
    /// The blobs copied, up to `blobsKept` bytes, returned likewise.
    private var blobs = [ObjectID: [UInt8]]()
    private var blobBytes = 0
    static let blobsKept = 64 << 20
    /// The blobs to copy, in the order met, read once every tree is walked: on every core when
    /// there are many and the source can be read from several threads.
    private var blobQueue = [ObjectID]()
    /// The most bytes each queued blob may hold, from its file name (`blobLimit`).
    private var blobLimits = [Int]()
    private var queued = Set<ObjectID>()
    /// The most bytes a file of this name may hold: a blob over it is refused from the size it
    /// declares, unread (`OversizedFile`). By default, `SourceObjects.maxObjectBytes` for any.
    var blobLimit: (ArraySlice<UInt8>) -> Int = { _ in SourceObjects.maxObjectBytes }
    /// The commits copied and their trees, in order (to name the file of a refused blob).
    private var copiedCommits = [(id: ObjectID, tree: ObjectID)]()
    /// The trees used last whose bytes are known to match their ids (added to the pack, or read
    /// from the destination): a commit's first parent is most often the commit copied just
    /// before it, and the directory a commit changes was most often written by a recent commit,
    /// so their trees are not read (and inflated) again, here or by the check.
    private var verified = RecentlyUsedTrees(bytesPerGeneration: 8 << 20)
    /// What changed between each new commit's first parent's tree and its own, found from those
    /// trees alone, up to `changesKept` bytes (`TreeChange.heldBytes` each), returned likewise
    /// for the check of the new commits (`FetchedObjects.changes`).
    private var keepsChanges = false
    private var commitCopied: (([UInt8]) -> Void)?
    /// Ends the copy between two commits when cancelled (`TransferCancellation.whileCurrent`).
    private let cancellation = TransferCancellation.current
    private var changes = [TreePair: [TreeChange]]()
    private var changeBytes = 0
    static let changesKept = 16 << 20

    init(from source: ObjectSource, to destination: Repository, destinationIsEmpty: Bool = false) {
        self.source = source
        self.destination = destination
        self.destinationIsEmpty = destinationIsEmpty
    }

    /// Copies what `tip` needs and the destination lacks; returns how many objects were copied and
    /// the trees, blobs and changes read on the way (`FetchedObjects`).
    /// `keepingChanges`: a fetch, whose new commits are checked next (`FetchedObjects.changes`).
    /// `commitCopied` is given each commit copied, parents first, once its bytes matched its id.
    static func copy(_ tip: ObjectID, from source: ObjectSource, to destination: Repository, durable: Bool = true,
                     destinationIsEmpty: Bool = false, keepingChanges: Bool = false,
                     commitCopied: (([UInt8]) -> Void)? = nil,
                     blobLimit: ((ArraySlice<UInt8>) -> Int)? = nil) throws -> (count: Int, objects: FetchedObjects) {
        let transfer = ObjectTransfer(from: source, to: destination, destinationIsEmpty: destinationIsEmpty)
        transfer.keepsChanges = keepingChanges
        transfer.commitCopied = commitCopied
        if let blobLimit { transfer.blobLimit = blobLimit }
        try transfer.copyCommits(from: tip)
        PerformanceTrace.step("commits and trees copied")
        try transfer.copyQueuedBlobs()
        PerformanceTrace.step("blobs read and hashed")
        try transfer.pack.write(into: destination, durable: durable)
        PerformanceTrace.step("pack written")
        var objects = FetchedObjects()
        objects.trees = transfer.trees
        objects.blobs = transfer.blobs
        objects.changes = transfer.changes
        return (transfer.pack.count, objects)
    }

    private func readTree(_ id: ObjectID) throws -> RawTree {
        if let tree = verifiedTree(id) { return tree }
        // A base tree the destination has is read there: the source's copy could be forged.
        if destinationHas(id) {
            let tree = try RawTree(destination.object(id, type: .tree), id: id)
            verified.add(tree, id)
            return tree
        }
        let tree = try readSourceTree(id).tree
        if ObjectPack.id(of: tree.bytes, type: .tree) == id { keep(tree, id) }
        return tree
    }

    /// Tree `id` as read from the source, not hashed yet, with the zlib stream it was inflated
    /// from when it was stored whole in a pack.
    private func readSourceTree(_ id: ObjectID) throws -> (tree: RawTree, compressed: [UInt8]?) {
        let stored: StoredObject
        do { stored = try source.storedObject(id, type: .tree, limit: SourceObjects.maxObjectBytes) } catch let error as WrongObjectType {
            // A sound blob under that id: the commit's tree names a file as a directory (invalid). Else the
            // remote's objects lie about it (damage).
            guard let blob = try? source.storedObject(id, type: .blob, limit: SourceObjects.maxObjectBytes),
                  ObjectPack.id(of: blob.bytes, type: .blob) == id else { throw SourceObjects.refusal(error.description) }
            throw NotATree(reason: "\(error): it is a file, named as a directory")
        }
        do { return (try RawTree(stored.bytes, id: id), stored.compressed) } catch {
            // Malformed but what its id says: the commit names a tree git cannot read (invalid); else damage.
            guard ObjectPack.id(of: stored.bytes, type: .tree) == id else { throw error }
            throw NotATree(reason: "tree \(id) has entries git cannot read (an empty name or a malformed mode)")
        }
    }

    /// A tree the walk met that is not one (see `InvalidTree`); `path` is filled in on the way up.
    private struct NotATree: Error {
        let reason: String
        var path: [String] = []
    }

    /// Keeps a tree read from the source whose bytes hash to `id`, up to `treesKept`.
    private func keep(_ tree: RawTree, _ id: ObjectID) {
        let size = tree.heldBytes
        guard trees[id] == nil, treeBytes + size <= Self.treesKept else { return }
        trees[id] = tree
        treeBytes += size
    }

    /// Tree `id` if it is held here with bytes that match its id.
    private func verifiedTree(_ id: ObjectID) -> RawTree? { verified.tree(id) ?? trees[id] }

    private func has(_ id: ObjectID) -> Bool { pack.contains(id) || queued.contains(id) || destinationHas(id) }

    private func destinationHas(_ id: ObjectID) -> Bool { !destinationIsEmpty && destination.containsWithoutRefresh(id) }

    /// Finds the commits the destination lacks, then copies them parents first: each commit's tree
    /// is copied as far as it differs from its first parent's, so that parent's tree must already
    /// be complete in the destination or in this pack. (Copying a child first, against a parent
    /// tree not copied yet, and then skipping that parent's tree as "already queued" lost the
    /// parent's changed subtrees: a remote left missing a tree.)
    private func copyCommits(from tip: ObjectID) throws {
        var commits = [ObjectID: (raw: [UInt8], header: CommitLinks)]()
        var order = [ObjectID]()
        var stack = [(id: tip, parentsDone: false)]
        while let (id, parentsDone) = stack.popLast() {
            if parentsDone { order.append(id); continue }
            guard commits[id] == nil, !destinationHas(id) else { continue }
            let raw = try source.object(id, type: .commit)
            let header = try CommitLinks(raw, id: id)
            commits[id] = (raw, header)
            stack.append((id, true))
            stack += header.parents.reversed().map { ($0, false) }
        }
        for id in order {
            try cancellation?.checkpoint()
            guard let (raw, header) = commits[id] else { continue }
            let baseTree = try header.parents.first.map { parent in
                try commits[parent]?.header.tree ?? destination.commitLinks(parent).tree
            }
            copiedCommits.append((id, header.tree))
            do { try copyTree(header.tree, base: baseTree) } catch let error as NotATree {
                throw InvalidTree(commit: id, path: error.path.reversed().joined(separator: "/"), reason: error.reason)
            }
            try pack.add(raw, type: .commit, expected: id)
            commitCopied?(raw)
            keepChanges(from: baseTree, to: header.tree)
        }
    }

    /// Reads the queued blobs and hashes each against its id (in shares on every core, each with
    /// its own reader, when there are many and the source allows), then adds them to the pack:
    /// all are refused unless each matches its id.
    private func copyQueuedBlobs() throws {
        guard !blobQueue.isEmpty else { return }
        let ids = blobQueue, limits = blobLimits, source = source
        @Sendable func hashed(_ index: Int, from reader: any ObjectSource) throws -> ObjectPack.HashedBlob {
            let stored = try reader.storedObject(ids[index], type: .blob, limit: limits[index])
            // A pack entry's zlib stream is stored as it is (it was just inflated to these bytes).
            return try ObjectPack.HashedBlob(bytes: stored.bytes, expected: ids[index], compressed: stored.compressed)
        }
        var read = [ObjectPack.HashedBlob]()
        read.reserveCapacity(ids.count)
        do {
            if let opener = source.opener, ids.count >= Self.blobsPerShare * 2 {
                let shares = Parallel.shares(of: ids.count, minimumPerShare: Self.blobsPerShare) { range in
                    Result { () throws -> [ObjectPack.HashedBlob] in
                        let reader = try opener()
                        return try range.map { try hashed($0, from: reader) }
                    }
                }
                for share in shares { read += try share.get() }
            } else {
                for index in ids.indices { read.append(try hashed(index, from: source)) }
            }
        } catch let oversized as OversizedObject {
            let (commit, path) = try locate(oversized.id)
            throw OversizedFile(commit: commit, path: path, size: oversized.size, limit: oversized.limit)
        }
        pack.add(hashed: read)
        blobs.reserveCapacity(blobs.count + ids.count)
        for (id, blob) in zip(ids, read) where blobs[id] == nil && blobBytes + blob.bytes.count <= Self.blobsKept {
            blobs[id] = blob.bytes
            blobBytes += blob.bytes.count
        }
        blobQueue = []
        blobLimits = []
        queued = []
    }

    /// The first commit copied whose tree holds `blob`, and the blob's path there (for a refusal).
    /// Its trees were all walked by the copy (none deeper than `TreePath.maxDepth`); walked here
    /// with a stack of its own, each tree's files before its directories.
    private func locate(_ blob: ObjectID) throws -> (commit: ObjectID, path: String) {
        for (commit, root) in copiedCommits {
            var trees = [(id: root, prefix: "")]
            while let (treeID, prefix) = trees.popLast() {
                let tree = try readTree(treeID)
                var subtrees = [(id: ObjectID, prefix: String)]()
                for entry in tree.entries {
                    let name = prefix + String(decoding: tree.name(entry), as: UTF8.self)
                    switch tree.kind(entry) {
                    case .blob where tree.id(entry) == blob: return (commit, name)
                    case .tree: subtrees.append((tree.id(entry), name + "/"))
                    default: break
                    }
                }
                trees += subtrees.reversed()
            }
        }
        return (copiedCommits.last?.id ?? blob, blob.hex)
    }

    /// Below twice this many blobs, they are read on one thread (opening another reader costs more).
    private static let blobsPerShare = 512

    /// Compares the two trees as the check of the new commits will (`Repository.treeChanges`),
    /// with only the trees held here whose bytes matched their ids; keeps nothing when another
    /// tree is needed or a tree is refused (the check then reads them itself and says why).
    private func keepChanges(from old: ObjectID?, to new: ObjectID) {
        guard keepsChanges, changeBytes < Self.changesKept, changes[TreePair(old: old, new: new)] == nil else { return }
        var found = [TreeChange]()
        var read = RecentTrees()
        let compared: ()? = try? Repository.collectTreeChanges(from: old, to: new, prefix: [], tree: { id in
            guard let tree = verifiedTree(id) else {
                throw GitError(function: "tree changes", code: .notFound, message: "tree \(id) is not held")
            }
            return tree
        }, read: &read, into: &found)
        guard compared != nil else { return }
        let size = found.reduce(0) { $0 + $1.heldBytes }
        guard changeBytes + size <= Self.changesKept else {
            changeBytes = Self.changesKept   // full: the check reads the rest itself
            return
        }
        changes[TreePair(old: old, new: new)] = found
        changeBytes += size
    }

    /// Copies tree `id` and whatever under it differs from `base` (a tree the destination has in
    /// full, or this pack holds in full) and is missing there: each tree after every tree under
    /// it, in the order the recursive walk took them. Iterative, with the trees left to copy on a
    /// stack of its own: a remote's tree 10,000 directories deep overflowed the thread's stack
    /// (SIGSEGV). A directory nested deeper than `TreePath.maxDepth` is refused (`NotATree`).
    private func copyTree(_ id: ObjectID, base: ObjectID?) throws {
        enum Step {
            /// Tree `id` (named `name` in its parent) to copy, as far as it differs from `base`.
            case visit(id: ObjectID, base: ObjectID?, name: String?)
            /// Tree `id`, everything under it copied: added to the pack last.
            case finish(tree: RawTree, id: ObjectID, compressed: [UInt8]?, held: Bool)
        }
        var path = [String]()   // the names of the trees being copied, down to the one on top
        var steps = [Step.visit(id: id, base: base, name: nil)]
        while let step = steps.popLast() {
            switch step {
            case .finish(let tree, let id, let compressed, let held):
                try pack.add(tree.bytes, type: .tree, expected: id, compressed: compressed)
                if !held { keep(tree, id) }   // hashed by the line above (once: it was hashed twice)
                verified.add(tree, id)
                if !path.isEmpty { path.removeLast() }
            case .visit(let id, let base, let name):
                if has(id) { continue }
                if let name { path.append(name) }
                guard path.count <= TreePath.maxDepth else {
                    // Its first directories only: the line stays short however deep the tree goes.
                    throw NotATree(reason: "directories nested deeper than \(TreePath.maxDepth)", path: (path.prefix(4) + ["…"]).reversed())
                }
                // Not in the destination: has(id) just said so. A tree read from a pack keeps its zlib
                // stream, stored as it is (it was just inflated to these bytes): recompressing a clone's
                // trees was most of writing its pack.
                let held = verifiedTree(id)
                let tree: RawTree, compressed: [UInt8]?
                do { (tree, compressed) = try held.map { ($0, nil) } ?? readSourceTree(id) } catch var error as NotATree {
                    error.path = path.reversed()
                    throw error
                }
                let old = try base.map { try readTree($0) } ?? RawTree([], id: nil)
                steps.append(.finish(tree: tree, id: id, compressed: compressed, held: held != nil))
                var children = [Step]()
                RawTree.forEachDifference(from: old, to: tree) { baseEntry, entry in
                    guard let entry else { return }   // removed: nothing to copy
                    let child = tree.id(entry)
                    switch tree.kind(entry) {
                    case .tree:
                        children.append(.visit(id: child, base: baseEntry.flatMap { $0.isTree ? old.id($0) : nil },
                                               name: String(decoding: tree.name(entry), as: UTF8.self)))
                    case .blob where !has(child):
                        blobQueue.append(child)
                        blobLimits.append(blobLimit(tree.name(entry)))
                        queued.insert(child)
                    default: break   // a blob already there, or a submodule link (no object to copy)
                    }
                }
                steps += children.reversed()
            }
        }
    }
}
