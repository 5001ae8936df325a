// This file touches the libgit2 C API.
internal import CLibgit2

extension ObjectPack {
    /// Writes the pack and its index into `repository`'s `objects/pack`; with `durable` (the
    /// default) both files and the directory are fsynced first. A quarantine's pack is written
    /// without, and fsynced when it is admitted. libgit2 then looks at the pack directory again.
    public func write(into repository: Repository, durable: Bool = true) throws {
        guard try write(toPackDirectory: repository.gitDirectory + "objects/pack/", durable: durable) != nil else { return }
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, repository.handle))
        defer { git_odb_free(odb) }
        try check("git_odb_refresh", git_odb_refresh(odb))
    }
}
