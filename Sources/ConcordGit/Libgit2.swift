// This file touches the libgit2 C API.
internal import CLibgit2

/// One-time process-wide libgit2 set-up: `git_libgit2_init` and the options Concord relies on.
enum Libgit2 {
    private static let initialized: Bool = {
        git_libgit2_init()
        // A write acknowledged to the user must be on disk: fsync objects, packs and refs.
        _ = concord_git_opts_int(Int32(GIT_OPT_ENABLE_FSYNC_GITDIR.rawValue), 1)
        // Profiles may sit in folders owned by another user (shared folders, USB sticks, tests run as root).
        _ = concord_git_opts_int(Int32(GIT_OPT_SET_OWNER_VALIDATION.rawValue), 0)
        // A record kind is one directory: its tree can hold 100,000 entries (4 MB). libgit2 caches
        // only trees under 4 KiB by default, so every lookup would inflate and parse it again.
        _ = concord_git_opts_cache_limit(Int32(GIT_OBJECT_TREE.rawValue), 64 << 20)
        // Like git, trust the object database on reads: re-hashing a 4 MB tree with SHA-1DC on every
        // read costs ~10 ms. Received objects are still hashed by the indexer when they arrive.
        _ = concord_git_opts_int(Int32(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION.rawValue), 0)
        return true
    }()

    /// Call before any other libgit2 function; cheap after the first call.
    static func ensure() {
        _ = initialized
    }
}
