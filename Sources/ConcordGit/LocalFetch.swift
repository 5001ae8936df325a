/// What `fetchObjectsFromLocalRepository` brought: the remote's tip and what was read on the way.
public struct LocalFetch: Sendable {
    public let tip: ObjectID
    public let objects: FetchedObjects
}

extension Repository {
    /// Fetches `ref` of the repository at `path` on this machine into `trackingRef` (moved as a
    /// fetch moves it, without compare-and-swap: it only mirrors the remote). Returns the remote's
    /// tip, or nil when the remote has no such branch yet; what the copy read and hashed on the
    /// way is dropped (`fetchObjectsFromLocalRepository` returns it).
    @discardableResult
    public func fetchFromLocalRepository(at path: String, ref: String, into trackingRef: String, durable: Bool = true,
                                         intoEmpty: Bool = false, commitCopied: (([UInt8]) -> Void)? = nil,
                                         blobLimit: ((ArraySlice<UInt8>) -> Int)? = nil) throws -> ObjectID? {
        try fetchObjectsFromLocalRepository(at: path, ref: ref, into: trackingRef, durable: durable, intoEmpty: intoEmpty,
                                            commitCopied: commitCopied, blobLimit: blobLimit)?.tip
    }

    /// `fetchFromLocalRepository`, returning with the tip the trees, blobs and changes the copy
    /// read and hashed (`FetchedObjects`), for the steps that read them next.
    /// `intoEmpty`: this repository has no objects yet (a clone's quarantine). `commitCopied` is
    /// given the bytes of each new commit, parents first, once they matched its id. `blobLimit`:
    /// the most bytes a file of each name may hold (`OversizedFile` otherwise, the blob unread).
    public func fetchObjectsFromLocalRepository(at path: String, ref: String, into trackingRef: String, durable: Bool = true,
                                                intoEmpty: Bool = false, commitCopied: (([UInt8]) -> Void)? = nil,
                                                blobLimit: ((ArraySlice<UInt8>) -> Int)? = nil) throws -> LocalFetch? {
        // The branch first, then the pack list: every object the branch needs was stored before it moved.
        guard let tip = try SourceObjects.reference(ref, gitDirectory: SourceObjects.gitDirectory(of: path)) else { return nil }
        let source = try SourceObjects(repositoryAt: path, scratch: gitDirectory)   // copies for libgit2 go into this quarantine
        var objects = FetchedObjects.none
        if intoEmpty || !contains(tip) {
            do {
                objects = try ObjectTransfer.copy(tip, from: source, to: self, durable: durable, destinationIsEmpty: intoEmpty,
                                                  keepingChanges: true, commitCopied: commitCopied, blobLimit: blobLimit).objects
            } catch let error as WrongObjectType {
                throw SourceObjects.refusal(error.description)   // the remote's objects disagree with what names them
            } catch let error as OversizedObject {
                throw SourceObjects.refusal(error.description)   // a tree or commit over the bound no object comes near
            }
        }
        let current = try resolveReference(trackingRef)
        if current != tip {
            try updateReference(trackingRef, to: tip, expected: current, message: "concord: fetch from \(path)")
        }
        return LocalFetch(tip: tip, objects: objects)
    }
}
