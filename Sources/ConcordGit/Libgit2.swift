// This file touches the libgit2 C API.
internal import CLibgit2
internal import CLibgit2Startup

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
        // Bounds for a process that runs for weeks (`watch`); both are process-wide.
        _ = concord_git_opts_cache_max_size(objectCacheBytes)
        _ = concord_git_opts_mwindow_file_limit(openPackFiles)
        // Like git, trust the object database on reads: re-hashing a 4 MB tree with SHA-1DC on every
        // read costs ~10 ms. Received objects are still hashed by the indexer when they arrive.
        _ = concord_git_opts_int(Int32(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION.rawValue), 0)
        return true
    }()

    /// The most bytes libgit2's object caches (commits, and trees up to 64 MiB each, read through
    /// any repository of this process) hold at once: 32 MiB. libgit2's default is 256 MiB, which a
    /// `watch` would fill over weeks of syncs, one new commit and its changed trees at a time;
    /// past the bound libgit2 evicts entries. A one-record sync in a 100,000-record profile reads
    /// ~4 MiB of trees, so one command's working set still fits.
    static let objectCacheBytes = 32 << 20

    /// The most pack files libgit2 keeps open at once, per process: 64 (the least recently used is
    /// closed past it). Every sync adds a pack to the profile (fetches and pushes write one pack
    /// each), and libgit2's default (0, no limit) kept a descriptor per pack open in a long-lived
    /// `Repository`: a `watch` took two more descriptors per sync round and would have hit the
    /// usual 1,024-descriptor limit after a few hundred.
    static let openPackFiles = 64

    /// Call before any other libgit2 function; cheap after the first call.
    static func ensure() {
        _ = initialized
    }
}

/// How this process's libgit2 starts.
public enum Libgit2Startup {
    /// True when libgit2's start-up skips parsing the system's CA certificates (CLibgit2Startup:
    /// HTTPS only, which Concord never uses; ~6 ms of every concord process).
    public static var skipsCACertificates: Bool { concord_libgit2_skips_ca_certificates() == 1 }
}
