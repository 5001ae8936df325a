// This file touches the libgit2 C API.
internal import CLibgit2
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libgit2's own way of doing what a hand-written piece of Concord does, so `make bench` can time
/// both on the same data in the same run (rows G1–G6, docs/benchmarks.md). Each function here is
/// what Concord would call if it dropped its own piece; which one Concord uses is decided by the
/// row, and written next to the piece it keeps.
extension Repository {
    /// G1 and G2: `git_tree_create_updated` bare, without the checks `writeTree` adds: the new
    /// trees go wherever this repository's object database writes (loose objects, or a mempack).
    public func writeTreeUsingLibgit2(base: ObjectID?, edits: [(path: String, blob: ObjectID?)]) throws -> ObjectID {
        try createUpdatedTree(base: base, edits: edits)
    }

    /// G3: the index update of `applyToWorkingTree` through libgit2 (`git_index_read`,
    /// `git_index_add` per path, `git_index_write`) instead of `IndexPatch`.
    package func updateIndexUsingLibgit2(_ updates: [IndexPatch.Update]) throws {
        try updateIndexWithLibgit2(updates)
    }

    /// Restores the index's checksum if `IndexPatch` skipped it (libgit2 1.5 refuses such an
    /// index): done outside G3's libgit2 timing, as an index only libgit2 wrote would have one.
    package func restoreIndexChecksumForLibgit2() throws {
        try prepareIndexForLibgit2()
    }

    /// G6: checks `tree` out into the (empty) working tree with `git_checkout_tree` (forced), which
    /// also writes the index, instead of `applyToWorkingTree`'s parallel writer and index patch.
    public func checkoutUsingLibgit2(_ tree: ObjectID) throws {
        var options = git_checkout_options()
        try check("git_checkout_options_init", git_checkout_options_init(&options, UInt32(GIT_CHECKOUT_OPTIONS_VERSION)))
        options.checkout_strategy = GIT_CHECKOUT_FORCE.rawValue
        var oid = tree.raw
        var object: OpaquePointer?
        try check("git_object_lookup", git_object_lookup(&object, handle, &oid, GIT_OBJECT_TREE))
        defer { git_object_free(object) }
        try check("git_checkout_tree", git_checkout_tree(handle, object, &options))
    }

    /// G5: pushes `refspec` to the configured remote `name` through libgit2's transport, whatever
    /// its URL (for a path remote: libgit2's local transport, which forces the remote ref and
    /// reads nothing back; see docs/benchmarks.md, G5).
    public func pushUsingLibgit2(remote name: String, refspec: String) throws {
        _ = try push(remote: name, refspec: refspec, options: TransportOptions())
    }
}

/// G2: a bulk write the libgit2 way: a second handle on the repository whose new objects go to
/// memory (`git_mempack_new`, added to its object database above every other backend), then to
/// one pack through libgit2's packbuilder and indexer.
public final class Libgit2MempackWriter {
    public let repository: Repository
    /// Owned by the object database once added.
    private let backend: UnsafeMutablePointer<git_odb_backend>

    public init(repositoryAt path: String) throws {
        repository = try Repository.open(path)
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, repository.handle))
        defer { git_odb_free(odb) }
        var backend: UnsafeMutablePointer<git_odb_backend>?
        try check("git_mempack_new", git_mempack_new(&backend))
        guard let backend else { throw GitError(function: "git_mempack_new", code: .other(-1), message: "no backend") }
        try check("git_odb_add_backend", git_odb_add_backend(odb, backend, 999))
        self.backend = backend
    }

    /// Writes `blobs` (to memory) with `git_odb_write`, which first asks every backend whether it has each.
    public func writeBlobs(_ blobs: [[UInt8]]) throws -> [ObjectID] {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, repository.handle))
        defer { git_odb_free(odb) }
        return try blobs.map { bytes in
            var oid = git_oid()
            try check("git_odb_write", bytes.withUnsafeBytes { git_odb_write(&oid, odb, $0.baseAddress, $0.count, GIT_OBJECT_BLOB) })
            return ObjectID(oid)
        }
    }

    /// Stores tree `tree` and everything below it (from memory) as one pack through libgit2's
    /// packbuilder (`git_packbuilder_insert_tree`, `git_packbuilder_write`: delta search, zlib at
    /// the default level, then the indexer). (`git_mempack_dump` packs only what commits reach.)
    public func writePack(tree: ObjectID) throws {
        var builder: OpaquePointer?
        try check("git_packbuilder_new", git_packbuilder_new(&builder, repository.handle))
        defer { git_packbuilder_free(builder) }
        var oid = tree.raw
        try check("git_packbuilder_insert_tree", git_packbuilder_insert_tree(builder, &oid))
        try check("git_packbuilder_write", git_packbuilder_write(builder, nil, 0, nil, nil))
        try check("git_mempack_reset", git_mempack_reset(backend))
    }
}
