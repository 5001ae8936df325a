// This file touches the libgit2 C API (and zlib through the same module).
internal import CLibgit2
internal import CShims
import Foundation

/// Where `ObjectTransfer` reads the objects it copies.
protocol ObjectSource {
    /// The bytes of object `id`, which must be a `type` object.
    func object(_ id: ObjectID, type: ObjectType) throws -> [UInt8]
    /// The same, with the zlib stream they were read from when the source has one at hand (a
    /// pack entry stored whole), which a pack may hold as it is once the bytes match their id;
    /// throws `OversizedObject`, from the size the object declares, when it is over `limit` bytes.
    func storedObject(_ id: ObjectID, type: ObjectType, limit: Int) throws -> StoredObject
    /// Opens another reader of the same objects for another thread (libgit2's objects are used
    /// from one thread at a time); nil when this source is read from one thread only.
    var opener: (@Sendable () throws -> any ObjectSource)? { get }
}

/// An object's bytes and, when read from a pack entry stored whole, that entry's zlib stream.
struct StoredObject {
    let bytes: [UInt8]
    var compressed: [UInt8]? = nil
}

extension ObjectSource {
    func storedObject(_ id: ObjectID, type: ObjectType, limit: Int) throws -> StoredObject {
        let bytes = try object(id, type: type)
        guard bytes.count <= limit else { throw OversizedObject(id: id, size: bytes.count, limit: limit) }
        return StoredObject(bytes: bytes, compressed: nil)
    }
}

/// An object over the size its place allows, known from the size it declares (it is not read).
/// `ObjectTransfer` names the file of a blob over its path's limit (`OversizedFile`); any other
/// leaving a fetch, like `WrongObjectType`, is a damaged remote (`SourceObjects.refusal`).
struct OversizedObject: Error, CustomStringConvertible {
    let id: ObjectID
    let size: Int
    let limit: Int

    var description: String { "object \(id) is \(size) bytes, over the \(limit)-byte limit" }
}

/// An object of another type than the tree entry or commit naming it says.
struct WrongObjectType: Error, CustomStringConvertible {
    let id: ObjectID
    let expected: ObjectType

    var description: String { "object \(id) is not a \(expected.name)" }
}

/// A commit copied from a remote whose tree at `path` ("" for its root tree) is not one: a sound
/// blob, or a tree with entries git cannot read (an empty name, a malformed mode) whose bytes are
/// what its id says. The commit is invalid; objects whose bytes are not what their ids say are
/// damage, reported as such.
public struct InvalidTree: Error, CustomStringConvertible {
    public let commit: ObjectID
    public let path: String
    public let reason: String

    public var description: String { "commit \(commit.short): \(path.isEmpty ? "its tree" : path): \(reason)" }
}

/// A file of a commit copied from a remote that is over the size its path allows
/// (`ObjectTransfer`'s `blobLimit`), refused from the size its object declares, unread.
public struct OversizedFile: Error, CustomStringConvertible {
    public let commit: ObjectID
    public let path: String
    public let size: Int
    public let limit: Int

    public var description: String { "\(path) in commit \(commit.short) is \(size) bytes, over the \(limit)-byte limit" }
}

extension Repository: ObjectSource {
    func object(_ id: ObjectID, type: ObjectType) throws -> [UInt8] {
        try rawObject(id, type: git_object_t(rawValue: Int32(type.rawValue)))
    }

    var opener: (@Sendable () throws -> any ObjectSource)? { nil }   // this device's own objects: a push reads few
}

/// The objects of a bare repository on this machine that this device does not trust: a path
/// remote (a shared folder, a USB stick) that anyone with write access may have tampered with.
///
/// libgit2 1.5.1 must not parse such a repository's files: it overflows its heap reading a loose
/// object whose header understates its size, spins forever inflating a truncated one, and blocks
/// opening a FIFO put where a file should be. So: the branch is read from the ref files here;
/// loose objects are inflated here with the size their header declares as a hard bound
/// (`concord_inflate_loose`); a pack entry stored whole is read by `UntrustedPack` (bounded by
/// the size it declares); the rest (deltas) by a libgit2 object database holding only copies of
/// the remote's pack files (no loose objects, no alternates, no config), each copied index checked
/// before libgit2 reads it (`snapshotPacks`), and each packed object's size is read before the
/// object. `ObjectTransfer` hashes every object it keeps against its id before anyone uses it.
final class SourceObjects: ObjectSource {
    /// No object of a profile comes near this (records are ≤ 1 MiB, log day files ≤ 32 MiB).
    static let maxObjectBytes = 64 << 20

    /// The repository's git directory, with a trailing slash.
    let gitDirectory: String
    private let objectsDirectory: String
    /// libgit2's reader of copies of the same packs, opened when first needed (`packs()`): most
    /// reads never need it.
    private var openedPacks: OpaquePointer?
    /// Where this reader makes those copies: a directory of its own under `scratch`, made when
    /// first needed and removed with the reader.
    private let scratch: String
    private var snapshot: String?
    /// The packs copied there and checked, by name (`pack-<checksum>`).
    private var copiedPacks = Set<String>()
    /// The same packs read here for objects stored whole (libgit2 reads the rest).
    private let packReaders: [UntrustedPackReader]
    private var lastPack = 0

    /// Opens the objects of the repository at `path` (bare, or a working tree with `.git`);
    /// `scratch`: a directory of this device's where copies of the remote's packs may be made for
    /// libgit2 (a fetch gives its quarantine); `sharing`: the pack files another reader of the
    /// same repository opened (`opener`).
    init(repositoryAt path: String, scratch: String = NSTemporaryDirectory(), sharing shared: [UntrustedPack]? = nil) throws {
        Libgit2.ensure()
        self.scratch = scratch
        gitDirectory = Self.gitDirectory(of: path)
        let directory = gitDirectory + "objects/"
        objectsDirectory = directory
        var found = [UntrustedPack]()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory + "pack")) ?? []
        where name.hasSuffix(".pack") || name.hasSuffix(".idx") {
            guard Self.isRegularFile(directory + "pack/" + name) else {
                throw Self.refusal("\(directory)pack/\(name) is not a regular file")
            }
            if shared == nil, name.hasSuffix(".pack") {
                found.append(UntrustedPack(packPath: directory + "pack/" + name, indexPath: directory + "pack/" + name.dropLast(5) + ".idx"))
            }
        }
        packReaders = (shared ?? found).map(UntrustedPackReader.init)
    }

    deinit {
        if let openedPacks { git_odb_free(openedPacks) }
        if let snapshot { try? FileManager.default.removeItem(atPath: snapshot) }
    }

    /// libgit2's object database over copies of the repository's packs (not its loose objects:
    /// those are read here, bounded), opened on first use.
    private func packs() throws -> OpaquePointer {
        if let openedPacks { return openedPacks }
        let directory = try snapshotPacks()
        var odb: OpaquePointer?
        try check("git_odb_new", git_odb_new(&odb))
        guard let odb else { throw Self.refusal("no object database") }
        var backend: UnsafeMutablePointer<git_odb_backend>?
        let made = git_odb_backend_pack(&backend, directory)
        if made < 0 {
            git_odb_free(odb)
            throw GitError.last("git_odb_backend_pack", made)
        }
        let added = git_odb_add_backend(odb, backend, 1)
        if added < 0 {
            backend?.pointee.free(backend)
            git_odb_free(odb)
            throw GitError.last("git_odb_add_backend", added)
        }
        openedPacks = odb
        return odb
    }

    /// Copies every pack of the remote not copied yet, index and pack file, into this reader's own
    /// directory and checks each copied index as `git verify-pack` would (`UntrustedPack.refuseIfDamaged`);
    /// libgit2 reads only these copies. So a writer changing the remote's files meanwhile cannot
    /// hand libgit2 an index other than the one checked (libgit2 1.5.1 crashed on a remote index
    /// with garbage among its ids). An index without its pack file is skipped, as libgit2 skips it.
    /// Returns the directory (an objects directory: the copies are in its `pack/`).
    private func snapshotPacks() throws -> String {
        let directory: String
        if let snapshot {
            directory = snapshot
        } else {
            var template = Array((scratch + (scratch.hasSuffix("/") ? "" : "/") + "remote-packs-XXXXXX").utf8CString)
            guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
                throw FileIO.Failure(path: scratch, operation: "make a directory for copies of the remote's packs in")
            }
            directory = String(cString: made) + "/"
            snapshot = directory
            guard mkdir(directory + "pack", 0o700) == 0 else { throw FileIO.Failure(path: directory + "pack", operation: "create directory") }
        }
        let remote = objectsDirectory + "pack/"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: remote)) ?? [] where name.hasSuffix(".idx") {
            let base = String(name.dropLast(4))
            guard !copiedPacks.contains(base) else { continue }
            let index = directory + "pack/" + name, pack = directory + "pack/" + base + ".pack"
            guard try Self.copyRegularFile(remote + name, to: index), try Self.copyRegularFile(remote + base + ".pack", to: pack) else {
                unlink(index)
                continue
            }
            let copy = UntrustedPack(packPath: pack, indexPath: index)
            try copy.refuseIfDamaged(naming: remote + name)
            try copy.refuseUnsoundDeltas(naming: remote + base + ".pack")
            copiedPacks.insert(base)
        }
        return directory
    }

    /// Copies the regular file at `source` (`openRegularFile`) to a new file at `target`, as many
    /// bytes as it had when opened; false when `source` is missing.
    private static func copyRegularFile(_ source: String, to target: String) throws -> Bool {
        guard let (input, size) = try openRegularFile(source) else { return false }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o400)
        guard output >= 0 else { throw FileIO.Failure(path: target, operation: "create") }
        defer { close(output) }
        var left = size
        var buffer = [UInt8](repeating: 0, count: min(left, 1 << 20))
        while left > 0 {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress!, min(left, $0.count)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw refusal("\(source) changed while it was read") }
            guard buffer.withUnsafeBytes({ FileIO.writeAll(output, UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) else {
                throw FileIO.Failure(path: target, operation: "write")
            }
            left -= n
        }
        return true
    }

    var opener: (@Sendable () throws -> any ObjectSource)? {
        let directory = gitDirectory, scratch = scratch, shared = packReaders.map(\.pack)
        return { try SourceObjects(repositoryAt: directory, scratch: scratch, sharing: shared) }
    }

    func object(_ id: ObjectID, type: ObjectType) throws -> [UInt8] {
        try readObject(id, type: type, withStream: false).bytes
    }

    func storedObject(_ id: ObjectID, type: ObjectType, limit: Int) throws -> StoredObject {
        try readObject(id, type: type, withStream: true, limit: min(limit, Self.maxObjectBytes))
    }

    private func readObject(_ id: ObjectID, type: ObjectType, withStream: Bool, limit: Int = maxObjectBytes) throws -> StoredObject {
        // Not hashed here: `ObjectTransfer`, the only reader, adds every object it keeps to its
        // pack with its expected id (refused on a mismatch), and a tree it only walks and does
        // not keep can at most lead it to read more objects, each bounded.
        // The pack that held the last object first: objects written together are read together.
        for position in packReaders.indices {
            let reader = packReaders[(position + lastPack) % packReaders.count]
            guard let offset = reader.offset(of: id) else { continue }
            lastPack = (position + lastPack) % packReaders.count
            if let stored = try reader.object(at: offset, type: type, id: id, limit: limit, withStream: withStream) {
                return stored
            }
            break
        }
        let packs = try packs()
        var oid = id.raw   // made only here: most objects are read above
        if git_odb_exists_ext(packs, &oid, GIT_ODB_LOOKUP_NO_REFRESH.rawValue) == 1 { return StoredObject(bytes: try packed(id, type: type, limit: limit)) }
        if let bytes = try loose(id, type: type, limit: limit) { return StoredObject(bytes: bytes) }
        // In a pack written after the pack list was read (another device pushed meanwhile): copy it, look again once.
        _ = try snapshotPacks()
        _ = git_odb_refresh(packs)
        if git_odb_exists_ext(packs, &oid, GIT_ODB_LOOKUP_NO_REFRESH.rawValue) == 1 { return StoredObject(bytes: try packed(id, type: type, limit: limit)) }
        // Not "not found": that would read as a remote that is not there (offline), but this one is damaged.
        throw Self.refusal("object \(id) is missing from the remote (its object files are damaged or incomplete)")
    }

    /// `ref` of the repository whose git directory is `gitDirectory`, read from its files without
    /// libgit2 (which would block on a FIFO or follow a link): a regular loose ref file holding an
    /// id, else the line in a regular `packed-refs`. nil when it has no such branch.
    static func reference(_ ref: String, gitDirectory root: String) throws -> ObjectID? {
        if let text = try smallFile(root + ref, limit: 4096) {
            guard let id = ObjectID(hex: String(decoding: text.prefix(40), as: UTF8.self)),
                  text.dropFirst(40).allSatisfy({ $0 == 0x0A || $0 == 0x0D }) else {
                throw refusal("\(root)\(ref) does not hold a commit id")
            }
            return id
        }
        guard let packed = try smallFile(root + "packed-refs", limit: 64 << 20) else { return nil }
        for line in packed.split(separator: 0x0A) where line.count == 41 + ref.utf8.count {
            if line.dropFirst(41).elementsEqual(ref.utf8), line[line.startIndex + 40] == 0x20 {
                return ObjectID(hex: String(decoding: line.prefix(40), as: UTF8.self))
            }
        }
        return nil
    }

    /// The git directory of the repository at `path` (bare, or a working tree with `.git`), with
    /// a trailing slash.
    static func gitDirectory(of path: String) -> String {
        let root = path.hasSuffix("/") ? path : path + "/"
        var isDirectory: ObjCBool = false
        let bare = FileManager.default.fileExists(atPath: root + "objects", isDirectory: &isDirectory) && isDirectory.boolValue
        return bare ? root : root + ".git/"
    }

    /// Refuses a repository whose files libgit2 would block on or be led astray by when it opens
    /// it (a push opens the target): each of these must be a regular file or absent.
    static func refuseIrregularFiles(inRepositoryAt path: String) throws {
        let root = gitDirectory(of: path)
        for name in ["HEAD", "config", "packed-refs", "refs/heads/main", "objects/info/alternates", "commondir"] {
            var info = stat()
            if lstat(root + name, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG {
                throw refusal("\(root)\(name) is not a regular file")
            }
        }
    }

    /// Object `id` from the remote's packs through libgit2 (deltas, and entries `UntrustedPack`
    /// leaves alone). libgit2's failures here, "not found" among them (a delta whose base is
    /// gone), mean a damaged pack, never a remote that is not there.
    private func packed(_ id: ObjectID, type: ObjectType, limit: Int) throws -> [UInt8] {
        do {
            return try packedThroughLibgit2(id, type: type, limit: limit)
        } catch let error as GitError where error.function != "remote object" {
            throw Self.refusal("object \(id) cannot be read from the remote's pack (damaged: \(error.message))")
        }
    }

    private func packedThroughLibgit2(_ id: ObjectID, type: ObjectType, limit: Int) throws -> [UInt8] {
        var oid = id.raw
        var size = 0
        var found = GIT_OBJECT_INVALID
        let packs = try packs()
        try check("git_odb_read_header", git_odb_read_header(&size, &found, packs, &oid))
        guard found.rawValue == Int32(type.rawValue) else { throw WrongObjectType(id: id, expected: type) }
        guard size <= limit else { throw OversizedObject(id: id, size: size, limit: limit) }
        var object: OpaquePointer?
        try check("git_odb_read", git_odb_read(&object, packs, &oid))
        defer { git_odb_object_free(object) }
        let length = git_odb_object_size(object)
        guard length > 0, let data = git_odb_object_data(object) else { return [] }
        return Array(UnsafeRawBufferPointer(start: data, count: length))
    }

    /// The loose object `id`, or nil when there is no such file.
    private func loose(_ id: ObjectID, type: ObjectType, limit: Int) throws -> [UInt8]? {
        let hex = id.hex
        let path = objectsDirectory + hex.prefix(2) + "/" + hex.dropFirst(2)
        guard let compressed = try Self.smallFile(path, limit: Self.maxObjectBytes + (1 << 20)) else { return nil }
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        let result = compressed.withUnsafeBufferPointer { buffer in
            concord_inflate_loose(buffer.baseAddress, buffer.count, limit, &out, &length)
        }
        guard result == 0, let out else {
            if result == -2 { throw OversizedObject(id: id, size: length, limit: limit) }
            throw Self.refusal("object \(id) is damaged (bad compression, size or header)")
        }
        defer { free(out) }
        let all = UnsafeBufferPointer(start: out, count: length)
        guard let nul = all.firstIndex(of: 0),
              all[..<nul].elementsEqual(ObjectPack.header(type: type, size: length - nul - 1).dropLast()) else {
            throw WrongObjectType(id: id, expected: type)
        }
        return Array(all[(nul + 1)...])
    }

    /// The bytes of the regular file at `path`, or nil when there is none; refuses anything that
    /// is not a regular file (a FIFO would block, a link could point anywhere) or is over `limit`.
    static func smallFile(_ path: String, limit: Int) throws -> [UInt8]? {
        guard let (descriptor, size) = try openRegularFile(path) else { return nil }
        defer { close(descriptor) }
        guard size <= limit else { throw refusal("\(path) is \(size) bytes, over the \(limit)-byte limit") }
        guard let bytes = FileIO.readAll(descriptor, count: size) else { throw refusal("\(path) changed while it was read") }
        return bytes
    }

    /// The regular file at `path` opened for reading, not followed if a link and never blocking
    /// on a FIFO, with its size; nil when there is none. The caller closes it.
    private static func openRegularFile(_ path: String) throws -> (descriptor: Int32, size: Int)? {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw refusal("\(path) cannot be read (\(String(cString: strerror(errno))))")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            throw refusal("\(path) is not a regular file")
        }
        return (descriptor, Int(info.st_size))
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    static func refusal(_ message: String) -> GitError {
        GitError(function: "remote object", code: .other(-1), message: message)
    }
}
