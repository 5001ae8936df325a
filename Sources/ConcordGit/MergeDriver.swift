// This file touches the libgit2 C API.
internal import CLibgit2
import Foundation

/// One conflicting file handed to a merge resolver: modify/modify or add/add (no ancestor).
public struct MergeFileInput: Sendable {
    public let path: String
    public let ancestor: [UInt8]?
    public let ours: [UInt8]
    public let theirs: [UInt8]
    /// The blob ids of `ours` and `theirs`.
    public let oursBlob: ObjectID
    public let theirsBlob: ObjectID
}

/// What a resolver decided for one file.
public enum MergeFileResolution: Sendable {
    /// Use these bytes.
    case merged([UInt8])
    /// Leave the file conflicted in the merge index (the caller deals with it).
    case conflict
    /// Not ours to decide: let git's text merge handle it.
    case passthrough
}

public typealias MergeResolver = (MergeFileInput) -> MergeFileResolution

/// The process-wide libgit2 merge driver named "concord". libgit2 keeps a pointer to the driver
/// struct forever, so it is registered once and never freed. Each merge registers its resolver
/// under its repository handle for the duration of the merge, so concurrent merges of different
/// repositories on different threads each reach their own resolver.
enum ConcordMergeDriver {
    static let name = "concord"

    private final class Registry: @unchecked Sendable {   // unchecked: `resolvers` under `lock`; each is called on the thread that registered it
        let lock = NSLock()
        var resolvers: [UInt: MergeResolver] = [:]
    }

    private static let registry = Registry()

    private static let registered: Bool = {
        Libgit2.ensure()
        let driver = UnsafeMutablePointer<git_merge_driver>.allocate(capacity: 1)
        driver.initialize(to: git_merge_driver(
            version: UInt32(GIT_MERGE_DRIVER_VERSION), initialize: nil, shutdown: nil, apply: concordMergeApply))
        return git_merge_driver_register(name, driver) == 0
    }()

    static func ensureRegistered() throws {
        guard registered else {
            throw GitError(function: "git_merge_driver_register", code: .other(-1), message: "cannot register the concord merge driver")
        }
    }

    static func withResolver<T>(for repository: OpaquePointer, _ resolver: @escaping MergeResolver, _ body: () throws -> T) rethrows -> T {
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(repository)))
        registry.lock.lock()
        registry.resolvers[key] = resolver
        registry.lock.unlock()
        defer {
            registry.lock.lock()
            registry.resolvers[key] = nil
            registry.lock.unlock()
        }
        return try body()
    }

    static func resolver(for repository: OpaquePointer?) -> MergeResolver? {
        guard let repository else { return nil }
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(repository)))
        registry.lock.lock()
        defer { registry.lock.unlock() }
        return registry.resolvers[key]
    }
}

/// The driver's `apply`: reads the three sides, asks the merge's resolver, hands libgit2 the result.
private func concordMergeApply(
    _ driver: UnsafeMutablePointer<git_merge_driver>?,
    _ pathOut: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
    _ modeOut: UnsafeMutablePointer<UInt32>?,
    _ mergedOut: UnsafeMutablePointer<git_buf>?,
    _ filterName: UnsafePointer<CChar>?,
    _ source: OpaquePointer?
) -> Int32 {
    let repository = git_merge_driver_source_repo(source)
    guard let resolver = ConcordMergeDriver.resolver(for: repository),
          let ours = git_merge_driver_source_ours(source),
          let theirs = git_merge_driver_source_theirs(source),
          let path = ours.pointee.path else { return GIT_PASSTHROUGH.rawValue }
    func content(_ entry: UnsafePointer<git_index_entry>?) -> [UInt8]? {
        guard let entry else { return nil }
        var blob: OpaquePointer?
        var oid = entry.pointee.id
        guard git_blob_lookup(&blob, repository, &oid) == 0 else { return nil }
        defer { git_blob_free(blob) }
        let size = Int(git_blob_rawsize(blob))
        guard size > 0, let raw = git_blob_rawcontent(blob) else { return [] }
        return Array(UnsafeRawBufferPointer(start: raw, count: size))
    }
    guard let ourBytes = content(ours), let theirBytes = content(theirs) else { return GIT_EMERGECONFLICT.rawValue }
    let input = MergeFileInput(path: String(cString: path), ancestor: content(git_merge_driver_source_ancestor(source)),
                               ours: ourBytes, theirs: theirBytes, oursBlob: ObjectID(ours.pointee.id), theirsBlob: ObjectID(theirs.pointee.id))
    switch resolver(input) {
    case .passthrough:
        return GIT_PASSTHROUGH.rawValue
    case .conflict:
        return GIT_EMERGECONFLICT.rawValue
    case .merged(let bytes):
        // libgit2 frees the buffer with free(): hand it malloc'd memory.
        guard let mergedOut, let memory = malloc(bytes.count + 1) else { return -1 }
        bytes.withUnsafeBytes { memory.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        memory.storeBytes(of: 0, toByteOffset: bytes.count, as: UInt8.self)
        mergedOut.pointee.ptr = memory.assumingMemoryBound(to: CChar.self)
        mergedOut.pointee.size = bytes.count
        mergedOut.pointee.reserved = bytes.count + 1
        pathOut?.pointee = path
        modeOut?.pointee = ours.pointee.mode
        return 0
    }
}
