// This file touches the libgit2 C API.
internal import CLibgit2

/// Puts every pack libgit2 writes into a repository (an ssh fetch's, the one a `concord-wait …
/// pack` answer brings: `indexPack`) through `ArrivingPack`'s bounds before its indexer rebuilds
/// any delta. An object database backend of concord's, first in line, takes libgit2's pack writes
/// (`git_odb_write_pack` asks the first backend that writes packs): it hands the bytes to libgit2's
/// indexer as they come, which only stores and hashes them then, keeps a copy, and checks that
/// copy when the pack is complete, before the indexer resolves the deltas (`git_indexer_commit`,
/// where a ~3 KB pack rebuilt 1 GiB). A refused pack is never resolved, and the indexer's files
/// are removed with it. The copy costs the pack's size in memory for the fetch's duration.
enum PackWriteBounds {
    /// Adds the backend to `repository`'s object database, unless it is there already (the
    /// database is a new one after `releaseCaches`).
    static func install(in repository: Repository) throws {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, repository.handle))
        defer { git_odb_free(odb) }
        for position in 0..<git_odb_num_backends(odb) {
            var backend: UnsafeMutablePointer<git_odb_backend>?
            if git_odb_get_backend(&backend, odb, position) == 0, let backend, isOurs(backend) { return }
        }
        let backend = UnsafeMutablePointer<concord_odb_backend>.allocate(capacity: 1)
        backend.initialize(to: concord_odb_backend())
        try check("git_odb_init_backend", git_odb_init_backend(&backend.pointee.parent, UInt32(GIT_ODB_BACKEND_VERSION)))
        backend.pointee.context = Unmanaged.passRetained(PackFolder(repository.gitDirectory + "objects/pack")).toOpaque()
        backend.pointee.parent.writepack = startWrite
        backend.pointee.parent.free = freeBackend
        // Above libgit2's own backends (loose objects 1, packs 2): the first asked to write a pack.
        let added = git_odb_add_backend(odb, &backend.pointee.parent, 100)
        if added < 0 {
            freeBackend(&backend.pointee.parent)
            try check("git_odb_add_backend", added)
        }
    }

    private static func isOurs(_ backend: UnsafeMutablePointer<git_odb_backend>) -> Bool {
        guard let free = backend.pointee.free else { return false }
        return unsafeBitCast(free, to: UnsafeRawPointer.self) == unsafeBitCast(freeBackend, to: UnsafeRawPointer.self)
    }

    /// Where the backend's indexers write (the repository's `objects/pack`).
    private final class PackFolder {
        let path: String
        init(_ path: String) { self.path = path }
    }

    /// One pack being written: libgit2's indexer and the copy checked before it resolves anything.
    private final class Write {
        let indexer: OpaquePointer
        let odb: OpaquePointer?
        var bytes = [UInt8]()

        init(indexer: OpaquePointer, odb: OpaquePointer?) {
            self.indexer = indexer
            self.odb = odb
        }

        deinit { git_indexer_free(indexer) }

        /// The size of object `id` in the repository, if it has it (a thin pack's base).
        func size(of id: ObjectID) -> Int? {
            var oid = id.raw
            var size = 0
            var type = GIT_OBJECT_INVALID
            return git_odb_read_header(&size, &type, odb, &oid) == 0 ? size : nil
        }
    }

    private static let freeBackend: @convention(c) (UnsafeMutablePointer<git_odb_backend>?) -> Void = { backend in
        guard let backend else { return }
        let ours = UnsafeMutableRawPointer(backend).assumingMemoryBound(to: concord_odb_backend.self)
        if let context = ours.pointee.context { Unmanaged<PackFolder>.fromOpaque(context).release() }
        ours.deinitialize(count: 1)
        ours.deallocate()
    }

    private static let startWrite: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<git_odb_writepack>?>?,
                                                   UnsafeMutablePointer<git_odb_backend>?, OpaquePointer?,
                                                   git_indexer_progress_cb?, UnsafeMutableRawPointer?) -> Int32 = { out, backend, odb, progress, payload in
        guard let out, let backend else { return -1 }
        let context = UnsafeMutableRawPointer(backend).assumingMemoryBound(to: concord_odb_backend.self).pointee.context
        guard let context else { return -1 }
        let folder = Unmanaged<PackFolder>.fromOpaque(context).takeUnretainedValue()
        var options = git_indexer_options()
        guard git_indexer_options_init(&options, UInt32(GIT_INDEXER_OPTIONS_VERSION)) == 0 else { return -1 }
        options.progress_cb = progress
        options.progress_cb_payload = payload
        var indexer: OpaquePointer?
        let made = git_indexer_new(&indexer, folder.path, 0, odb, &options)
        guard made == 0, let indexer else { return made < 0 ? made : -1 }
        let writer = UnsafeMutablePointer<concord_odb_writepack>.allocate(capacity: 1)
        writer.initialize(to: concord_odb_writepack())
        writer.pointee.parent.backend = backend
        writer.pointee.context = Unmanaged.passRetained(Write(indexer: indexer, odb: odb)).toOpaque()
        writer.pointee.parent.append = { writepack, data, size, stats in
            guard let write = PackWriteBounds.write(writepack) else { return -1 }
            if let data, size > 0 { write.bytes += UnsafeRawBufferPointer(start: data, count: size) }
            return git_indexer_append(write.indexer, data, size, stats)
        }
        writer.pointee.parent.commit = { writepack, stats in
            guard let write = PackWriteBounds.write(writepack) else { return -1 }
            do {
                try write.bytes.withUnsafeBytes { try ArrivingPack.refuseUnsoundDeltas($0, baseSize: write.size(of:)) }
            } catch {
                git_error_set_str(Int32(GIT_ERROR_ODB.rawValue), (error as? GitError)?.message ?? "\(error)")
                return -1
            }
            write.bytes = []
            return git_indexer_commit(write.indexer, stats)
        }
        writer.pointee.parent.free = { writepack in
            guard let writepack else { return }
            let ours = UnsafeMutableRawPointer(writepack).assumingMemoryBound(to: concord_odb_writepack.self)
            if let context = ours.pointee.context { Unmanaged<Write>.fromOpaque(context).release() }
            ours.deinitialize(count: 1)
            ours.deallocate()
        }
        out.pointee = UnsafeMutableRawPointer(writer).assumingMemoryBound(to: git_odb_writepack.self)
        return 0
    }

    private static func write(_ writepack: UnsafeMutablePointer<git_odb_writepack>?) -> Write? {
        guard let writepack else { return nil }
        let context = UnsafeMutableRawPointer(writepack).assumingMemoryBound(to: concord_odb_writepack.self).pointee.context
        return context.map { Unmanaged<Write>.fromOpaque($0).takeUnretainedValue() }
    }
}
