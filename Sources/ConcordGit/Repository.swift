// This file touches the libgit2 C API.
internal import CLibgit2
import Crypto

/// An open git repository. Owns its libgit2 handle and frees it exactly once.
///
/// Use one `Repository` from one thread at a time (libgit2's rule); open another for another thread.
public final class Repository {
    let handle: OpaquePointer
    /// What the step running now was handed by a fetch (`reading(_:_:)`), read before the object
    /// database; empty outside such a step. Set and put back only by `reading`.
    var lent = FetchedObjects.none
    /// git's `index.lock` while a sequence holds it (`holdingIndexLock`): every index write made
    /// meanwhile goes through it. Nil otherwise; set and put back only by `withIndexLock`.
    var heldIndexLock: IndexLock?
    /// Seconds a write waits for git's `index.lock` before failing with `IndexLockHeld`.
    public var indexLockTimeout: Double = 10
    /// Test-only fault (`ConcordEnvironment.failIndexAfterBranchMove`): a reference updated while
    /// git's `index.lock` is held (the branch moved by a write, merge or set-aside) makes every
    /// later index install in that hold fail (`IndexLock.failsInstalls`).
    package var failIndexAfterBranchMove = false

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        git_repository_free(handle)
    }

    /// Lets go of what libgit2 keeps for this repository between calls — its object cache (every
    /// commit a merge-base walk parsed, every tree read), the open pack files and their mapped
    /// indexes, the loaded config, index and ref database; libgit2
    /// loads each again when next used (`git_repository__cleanup`).
    ///
    /// For a repository kept open for weeks (`watch`): called after every sync, it bounds what is
    /// held between syncs by what one sync reads instead of letting it grow with each sync (the
    /// object cache alone grew ~80 KB per sync round, up to its process-wide bound, and each new
    /// pack stayed mapped).
    public func releaseCaches() {
        _ = git_repository__cleanup(handle)
    }

    /// Opens the repository at exactly `path` (a working directory or a bare repository); parents are not searched.
    public static func open(_ path: String) throws -> Repository {
        Libgit2.ensure()
        var repo: OpaquePointer?
        try check("git_repository_open_ext",
                  git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue, nil))
        guard let repo else { throw GitError(function: "git_repository_open_ext", code: .notFound, message: "no repository at \(path)") }
        return Repository(handle: repo)
    }

    /// Creates a repository whose HEAD points at `refs/heads/<initialBranch>`.
    public static func create(at path: String, bare: Bool, initialBranch: String = "main") throws -> Repository {
        Libgit2.ensure()
        var options = git_repository_init_options()
        try check("git_repository_init_options_init",
                  git_repository_init_options_init(&options, UInt32(GIT_REPOSITORY_INIT_OPTIONS_VERSION)))
        options.flags = GIT_REPOSITORY_INIT_MKPATH.rawValue | GIT_REPOSITORY_INIT_NO_REINIT.rawValue
        if bare { options.flags |= GIT_REPOSITORY_INIT_BARE.rawValue }
        var repo: OpaquePointer?
        let result = initialBranch.withCString { branch -> Int32 in
            options.initial_head = branch
            return git_repository_init_ext(&repo, path, &options)
        }
        try check("git_repository_init_ext", result)
        guard let repo else { throw GitError(function: "git_repository_init_ext", code: .other(-1), message: "no repository created") }
        return Repository(handle: repo)
    }

    /// The working directory (with a trailing slash), or nil for a bare repository.
    public var workdir: String? {
        git_repository_workdir(handle).map { String(cString: $0) }
    }

    /// The `.git` directory (or the bare repository itself), with a trailing slash.
    public var gitDirectory: String {
        String(cString: git_repository_path(handle))
    }

    public var isBare: Bool { git_repository_is_bare(handle) == 1 }

    // MARK: Configuration

    /// Sets `key` in the repository's own config file (`.git/config`).
    public func setConfig(_ key: String, _ value: String) throws {
        try withConfig { (config) in
            try check("git_config_set_string", git_config_set_string(config, key, value))
        }
    }

    public func setConfig(_ key: String, _ value: Bool) throws {
        try withConfig { (config) in
            try check("git_config_set_bool", git_config_set_bool(config, key, value ? 1 : 0))
        }
    }

    /// Reads `key` from the repository's config (with the global and system files behind it), or nil.
    public func configString(_ key: String) throws -> String? {
        try withConfig { (config) -> String? in
            var buffer = git_buf()
            defer { git_buf_dispose(&buffer) }
            let result = git_config_get_string_buf(&buffer, config, key)
            if result == GIT_ENOTFOUND.rawValue { return nil }
            try check("git_config_get_string_buf", result)
            return String(cString: buffer.ptr)
        }
    }

    /// Reads a boolean `key` from the whole config (repository, global and system files), or nil
    /// when it is not set or not a boolean.
    public func configBool(_ key: String) -> Bool? {
        var config: OpaquePointer?
        guard git_repository_config_snapshot(&config, handle) == 0, let config else { return nil }
        defer { git_config_free(config) }
        var value: Int32 = 0
        return git_config_get_bool(&value, config, key) == 0 ? value != 0 : nil
    }

    /// Removes `key` from the repository's config; missing keys are not an error.
    public func removeConfig(_ key: String) throws {
        try withConfig { (config) in
            let result = git_config_delete_entry(config, key)
            if result != GIT_ENOTFOUND.rawValue { try check("git_config_delete_entry", result) }
        }
    }

    private func withConfig<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        var config: OpaquePointer?
        try check("git_repository_config", git_repository_config(&config, handle))
        guard let config else { throw GitError(function: "git_repository_config", code: .notFound, message: "no config") }
        defer { git_config_free(config) }
        var local: OpaquePointer?
        // Writes go to the repository's own file, never to ~/.gitconfig.
        if git_config_open_level(&local, config, GIT_CONFIG_LEVEL_LOCAL) == 0, let local {
            defer { git_config_free(local) }
            return try body(local)
        }
        return try body(config)
    }

    // MARK: References

    /// The commit `name` points at (following symbolic refs such as HEAD), or nil if it does not exist yet.
    public func resolveReference(_ name: String) throws -> ObjectID? {
        var oid = git_oid()
        let result = git_reference_name_to_id(&oid, handle, name)
        if result == GIT_ENOTFOUND.rawValue || result == GIT_EUNBORNBRANCH.rawValue { return nil }
        try check("git_reference_name_to_id", result)
        return ObjectID(oid)
    }

    /// The full name of the branch HEAD points at, e.g. `refs/heads/main`, even when it has no commit yet.
    public func headBranch() throws -> String {
        var ref: OpaquePointer?
        try check("git_reference_lookup", git_reference_lookup(&ref, handle, "HEAD"))
        guard let ref else { return "refs/heads/main" }
        defer { git_reference_free(ref) }
        if let target = git_reference_symbolic_target(ref) { return String(cString: target) }
        return "HEAD"
    }

    /// Compare-and-swap: points `name` at `id` only if it currently points at `expected`
    /// (or does not exist, when `expected` is nil). Throws `GitError` with code `.modified`
    /// (or `.exists`) when another writer moved it first.
    public func updateReference(_ name: String, to id: ObjectID, expected: ObjectID?, message: String) throws {
        var ref: OpaquePointer?
        var target = id.raw
        if let expected {
            var current = expected.raw
            try check("git_reference_create_matching",
                      git_reference_create_matching(&ref, handle, name, &target, 1, &current, message))
        } else {
            try check("git_reference_create", git_reference_create(&ref, handle, name, &target, 0, message))
        }
        git_reference_free(ref)
        if failIndexAfterBranchMove, let heldIndexLock { heldIndexLock.failsInstalls = true }
    }

    /// Deletes reference `name` if it exists.
    public func deleteReference(_ name: String) throws {
        var ref: OpaquePointer?
        let result = git_reference_lookup(&ref, handle, name)
        if result == GIT_ENOTFOUND.rawValue { return }
        try check("git_reference_lookup", result)
        defer { git_reference_free(ref) }
        try check("git_reference_delete", git_reference_delete(ref))
    }

    // MARK: Objects

    /// Writes `bytes` as a blob and returns its id.
    public func writeBlob(_ bytes: [UInt8]) throws -> ObjectID {
        var oid = git_oid()
        let result = bytes.withUnsafeBytes { git_blob_create_from_buffer(&oid, handle, $0.baseAddress, $0.count) }
        try check("git_blob_create_from_buffer", result)
        return ObjectID(oid)
    }

    /// The id `bytes` would have as a blob, without writing anything.
    /// (SHA-1 in software with the CPU's SHA extensions, several times faster than libgit2's SHA-1DC.)
    public static func blobID(of bytes: [UInt8]) throws -> ObjectID {
        ObjectPack.id(of: bytes, type: .blob)
    }

    /// The content of blob `id`.
    public func blob(_ id: ObjectID) throws -> [UInt8] {
        if let bytes = lent.blobs[id] { return bytes }   // read and hashed by the fetch
        var oid = id.raw
        var blob: OpaquePointer?
        try check("git_blob_lookup", git_blob_lookup(&blob, handle, &oid))
        defer { git_blob_free(blob) }
        let size = Int(git_blob_rawsize(blob))
        guard size > 0, let raw = git_blob_rawcontent(blob) else { return [] }
        return Array(UnsafeRawBufferPointer(start: raw, count: size))
    }

    /// True when the object database has `id`.
    public func contains(_ id: ObjectID) -> Bool {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, handle) == 0, let odb else { return false }
        defer { git_odb_free(odb) }
        var oid = id.raw
        return git_odb_exists(odb, &oid) == 1
    }

    /// `contains` without libgit2's rescan of the pack directories on a miss: for a transfer that
    /// asks about thousands of objects the repository does not have (each miss would rescan),
    /// into a repository no other process adds packs to meanwhile (a quarantine, or a remote
    /// whose new packs only this transfer writes).
    func containsWithoutRefresh(_ id: ObjectID) -> Bool {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, handle) == 0, let odb else { return false }
        defer { git_odb_free(odb) }
        var oid = id.raw
        return git_odb_exists_ext(odb, &oid, GIT_ODB_LOOKUP_NO_REFRESH.rawValue) == 1
    }
}

extension Repository {
    /// Makes objects in `directory` (an `objects` directory: loose objects and `pack/`) readable
    /// through this repository, after its own: how a `pre-receive` hook sees what a push brought,
    /// which git keeps in a quarantine directory (`GIT_QUARANTINE_PATH`) until the hook accepts it.
    /// libgit2 reads git's `GIT_OBJECT_DIRECTORY` and `GIT_ALTERNATE_OBJECT_DIRECTORIES` only for a
    /// repository opened "from the environment"; Concord names the directory instead.
    public func addObjectDirectory(_ directory: String) throws {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, handle))
        defer { git_odb_free(odb) }
        try check("git_odb_add_disk_alternate", git_odb_add_disk_alternate(odb, directory))
    }
}
