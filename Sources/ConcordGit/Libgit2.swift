// This file touches the libgit2 C API.
internal import CLibgit2
internal import CLibgit2Startup
#if canImport(Glibc)
import Glibc
/// Glibc's `RLIMIT_NOFILE` is an enum case (`__rlimit_resource`), Darwin's an `Int32`.
private let RLIMIT_NOFILE_VALUE = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#elseif canImport(Darwin)
import Darwin
private let RLIMIT_NOFILE_VALUE = RLIMIT_NOFILE
#endif

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
        // A bound for a process that runs for weeks (`watch`); process-wide.
        _ = concord_git_opts_cache_max_size(objectCacheBytes)
        _ = concord_git_opts_mwindow_file_limit(openPackFiles)
        raiseDescriptorLimit()
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

    /// The most pack files libgit2 keeps open at once, per process: no limit (0, libgit2's default).
    /// A limit (64 until issue 43) makes libgit2 1.5.1 close the least recently used pack of any
    /// repository of the process when a thread opens one more, and that close races with another
    /// thread reading that pack through its own repository: four threads reading four repositories
    /// of 120 packs each failed within a minute ("failed to mmap ... Bad file descriptor", or a
    /// corrupted heap: glibc's "free(): corrupted unsorted chunks" and a pthread mutex assertion),
    /// and ran clean without a limit. That was the intermittent heap corruption of the test suite
    /// (a store's queues and watcher, a sync engine's profiles, the convergence tests' two threads
    /// each hold repositories of their own). The descriptors stay bounded otherwise: a sync lets go
    /// of its repository's packs when it ends (`git_repository__cleanup`), and the soft limit on
    /// descriptors is raised to the hard one (`raiseDescriptorLimit`) for the long-lived handles
    /// of a store in a profile of many packs.
    static let openPackFiles = 0

    /// The pack-file limit libgit2 applies (for tests).
    static var packFileLimit: Int {
        ensure()
        return Int(concord_git_opts_get_mwindow_file_limit())
    }

    /// Raises this process's soft limit on open descriptors to its hard limit (at most 65,536), as
    /// Go's runtime does: libgit2 keeps each pack a repository read open until the repository lets
    /// go of its object database. Nothing changes when the soft limit is already there or higher.
    private static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(RLIMIT_NOFILE_VALUE, &limit) == 0 else { return }
        let wanted = min(limit.rlim_max, 65_536)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = wanted
        _ = setrlimit(RLIMIT_NOFILE_VALUE, &limit)
    }


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
