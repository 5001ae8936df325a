// This file touches the libgit2 C API.
internal import CLibgit2

/// `ObjectID` to and from libgit2's `git_oid`.
extension ObjectID {
    init(_ oid: git_oid) {
        var copy = oid
        self = withUnsafeBytes(of: &copy.id) { ObjectID(raw: $0) }
    }

    init(_ pointer: UnsafePointer<git_oid>) {
        self.init(pointer.pointee)
    }

    var raw: git_oid {
        var oid = git_oid()
        let bytes = self.bytes
        withUnsafeMutableBytes(of: &oid.id) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        return oid
    }
}

extension Optional where Wrapped == ObjectID {
    /// Calls `body` with a pointer to the raw oid, or nil.
    func withRaw<T>(_ body: (UnsafePointer<git_oid>?) throws -> T) rethrows -> T {
        guard let id = self else { return try body(nil) }
        var oid = id.raw
        return try withUnsafePointer(to: &oid) { pointer in try body(pointer) }
    }
}
