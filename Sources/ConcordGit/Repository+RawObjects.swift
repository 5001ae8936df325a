// This file touches the libgit2 C API.
internal import CLibgit2
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Repository {
    /// The raw bytes of object `id`, checking that it is a `type` object.
    func rawObject(_ id: ObjectID, type expected: git_object_t) throws -> [UInt8] {
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, handle))
        defer { git_odb_free(odb) }
        var oid = id.raw
        var object: OpaquePointer?
        try check("git_odb_read", git_odb_read(&object, odb, &oid))
        defer { git_odb_object_free(object) }
        guard git_odb_object_type(object) == expected else {
            throw GitError(function: "git_odb_read", code: .other(-1), message: "object \(id) has the wrong type")
        }
        let size = git_odb_object_size(object)
        guard size > 0, let data = git_odb_object_data(object) else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: size))
    }

    /// The tree `id`. A sync reads the trees a fetch just compared (the new ones and their
    /// parents') once more to find the changed files: within a step handed the fetch's objects
    /// (`reading(_:_:)`), those come from them. Ids name content, and each kept tree was hashed,
    /// so a tree read from another repository is the same tree.
    func rawTree(_ id: ObjectID) throws -> RawTree {
        if let tree = lent.trees[id] { return tree }
        return try RawTree(rawObject(id, type: GIT_OBJECT_TREE), id: id)
    }

    /// Writes `bytes` as a loose object of `type` unless the database already has it: SHA-1 in
    /// software with the CPU's SHA extensions, compressed as `ObjectCompressor` says, fsynced file
    /// and directory.
    func writeLooseObject(_ bytes: [UInt8], type: ObjectType) throws -> ObjectID {
        let id = ObjectPack.id(of: bytes, type: type)
        if contains(id) { return id }
        var deflated = [UInt8]()
        try ObjectCompressor().append(ObjectPack.header(type: type, size: bytes.count) + bytes, to: &deflated)
        let hex = id.hex
        let directory = gitDirectory + "objects/" + hex.prefix(2)
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            throw GitError(function: "mkdir", code: .other(-1), message: "cannot create \(directory)")
        }
        do {
            // git's own temporary name: `git fsck` ignores it and `git prune` removes a stale one.
            try FileIO.write(deflated, to: directory + "/" + hex.dropFirst(2), makingParents: false, mode: 0o444,
                             durable: true, temporary: directory + "/tmp_obj_concord_\(getpid())")
            try FileIO.syncDirectory(directory)
        } catch {
            throw GitError(function: "write object", code: .other(-1), message: error.description)
        }
        return id
    }
}
