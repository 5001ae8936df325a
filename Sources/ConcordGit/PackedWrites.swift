// This file touches the libgit2 C API.
internal import CLibgit2

extension Repository {
    /// Runs `body` with a second handle on this repository whose new objects are collected in memory
    /// and written as ONE pack file when `body` returns (instead of one loose file per object).
    /// Use it for bulk writes such as importing thousands of records. The pack holds exactly the
    /// objects `body` wrote through the handle (blobs, trees, commits), not whole snapshots.
    /// Objects are visible to this handle once the call returns.
    public func withPackedWrites<T>(_ body: (Repository) throws -> T) throws -> T {
        let batch = try Repository.open(gitDirectory)
        var backend: UnsafeMutablePointer<git_odb_backend>?
        try check("git_mempack_new", git_mempack_new(&backend))
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, batch.handle))
        defer { git_odb_free(odb) }
        // The odb owns the backend from here on; highest priority so every write lands in it.
        try check("git_odb_add_backend", git_odb_add_backend(odb, backend, 1000))
        batch.batchWritten = []
        let result = try body(batch)
        try batch.flushBatch(to: odb)
        try check("git_mempack_reset", git_mempack_reset(backend))
        // This handle may have cached the list of packs: make it see the new one.
        var mine: OpaquePointer?
        if git_repository_odb(&mine, handle) == 0 {
            _ = git_odb_refresh(mine)
            git_odb_free(mine)
        }
        return result
    }

    /// Packs every object this batch handle wrote and stores the pack in the repository.
    private func flushBatch(to odb: OpaquePointer?) throws {
        guard let written = batchWritten, !written.isEmpty else { return }
        var builder: OpaquePointer?
        try check("git_packbuilder_new", git_packbuilder_new(&builder, handle))
        defer { git_packbuilder_free(builder) }
        var seen = Set<ObjectID>()
        for id in written where seen.insert(id).inserted {
            var oid = id.raw
            try check("git_packbuilder_insert", git_packbuilder_insert(builder, &oid, nil))
        }
        var pack = git_buf()
        defer { git_buf_dispose(&pack) }
        try check("git_packbuilder_write_buf", git_packbuilder_write_buf(&pack, builder))
        var writer: UnsafeMutablePointer<git_odb_writepack>?
        try check("git_odb_write_pack", git_odb_write_pack(&writer, odb, nil, nil))
        guard let writer else { throw GitError(function: "git_odb_write_pack", code: .other(-1), message: "no pack writer") }
        defer { writer.pointee.free(writer) }
        var stats = git_indexer_progress()
        try check("git_odb_writepack_append", writer.pointee.append(writer, pack.ptr, pack.size, &stats))
        try check("git_odb_writepack_commit", writer.pointee.commit(writer, &stats))
        batchWritten = nil
    }
}
