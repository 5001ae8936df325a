// This file touches the libgit2 C API.
internal import CLibgit2

extension Repository {
    /// Runs `body` with a second handle on this repository whose new objects are collected in memory
    /// and written as ONE pack file when `body` returns (instead of one loose file per object).
    /// Use it for bulk writes such as importing thousands of records. Objects are visible to this
    /// handle once the call returns.
    public func withPackedWrites<T>(_ body: (Repository) throws -> T) throws -> T {
        let batch = try Repository.open(gitDirectory)
        var backend: UnsafeMutablePointer<git_odb_backend>?
        try check("git_mempack_new", git_mempack_new(&backend))
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, batch.handle))
        defer { git_odb_free(odb) }
        // The odb owns the backend from here on; highest priority so every write lands in it.
        try check("git_odb_add_backend", git_odb_add_backend(odb, backend, 1000))
        let result = try body(batch)
        try batch.flush(mempack: backend, odb: odb)
        // This handle may have cached "pack list" state: make it see the new pack.
        var mine: OpaquePointer?
        if git_repository_odb(&mine, handle) == 0 {
            _ = git_odb_refresh(mine)
            git_odb_free(mine)
        }
        return result
    }

    private func flush(mempack: UnsafeMutablePointer<git_odb_backend>?, odb: OpaquePointer?) throws {
        var pack = git_buf()
        defer { git_buf_dispose(&pack) }
        try check("git_mempack_dump", git_mempack_dump(&pack, handle, mempack))
        var writer: UnsafeMutablePointer<git_odb_writepack>?
        try check("git_odb_write_pack", git_odb_write_pack(&writer, odb, nil, nil))
        guard let writer else { return }
        defer { writer.pointee.free(writer) }
        var stats = git_indexer_progress()
        try check("git_odb_writepack_append", writer.pointee.append(writer, pack.ptr, pack.size, &stats))
        try check("git_odb_writepack_commit", writer.pointee.commit(writer, &stats))
        try check("git_mempack_reset", git_mempack_reset(mempack))
    }
}
