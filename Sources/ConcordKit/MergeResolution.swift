import ConcordGit
import ConcordModel
import Foundation

/// A file a merge could not resolve by policy: ours stays in place, theirs is saved beside it.
public struct UnresolvedFile: Sendable, Equatable {
    public let path: String
    /// Where the other side's version was saved (relative to the profile), if it had one.
    public let savedAs: String?
    public let reason: String
}

/// Chooses the policy for each conflicting path of one merge and collects what it decided.
/// Used as the in-process libgit2 driver's resolver and, file by file, by `concord merge-driver`.
final class MergePlanner {
    let kinds: KindsTable
    private(set) var resolved: [ResolvedConflict] = []
    private(set) var failures: [String: String] = [:]

    init(kinds: KindsTable) {
        self.kinds = kinds
    }

    /// The kinds table of a merge: the three-way merge of `.concord/kinds.json`, falling back to
    /// ours when that cannot be read.
    static func mergedKinds(base: [UInt8]?, ours: [UInt8]?, theirs: [UInt8]?) -> KindsTable {
        let oursTable = ours.flatMap { try? KindsTable.decode($0) }
        guard let ours, let theirs else { return oursTable ?? theirs.flatMap { try? KindsTable.decode($0) } ?? .empty }
        if case .merged(let bytes, _) = RecordMerge.mergeKindsFile(base: base, ours: ours, theirs: theirs),
           let table = try? KindsTable.decode(bytes) {
            return table
        }
        return oursTable ?? .empty
    }

    /// Decides one file. Files outside any kind and outside `.concord/` go to git's text merge.
    func resolve(_ input: MergeFileInput) -> MergeFileResolution {
        guard let outcome = outcome(path: input.path, base: input.ancestor, ours: input.ours, theirs: input.theirs) else {
            return .passthrough
        }
        switch outcome {
        case .merged(let bytes, let conflicts):
            resolved += conflicts
            return .merged(bytes)
        case .unresolved(let reason):
            failures[input.path] = reason
            return .conflict
        }
    }

    /// The policy outcome for `path`, or nil when no Concord policy covers it.
    func outcome(path: String, base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) -> FileMergeOutcome? {
        if path == KindsTable.path { return RecordMerge.mergeKindsFile(base: base, ours: ours, theirs: theirs) }
        if path == ProfilePaths.profile || (path.hasPrefix(ProfilePaths.membersDirectory + "/") && path.hasSuffix(".json")) {
            return RecordMerge.mergeDocument(base: base, ours: ours, theirs: theirs)
        }
        guard let (kind, fileName) = kinds.kind(forPath: path), fileName.hasSuffix("." + kind.policy.fileExtension) else {
            return nil
        }
        return RecordMerge.merge(policy: kind.policy, base: base, ours: ours, theirs: theirs)
    }

    /// Where the other side of an unresolved `path` is kept: `.concord/conflicts/<dir>/<name>.<commit>.<ext>`.
    static func conflictCopyPath(for path: String, theirs: ObjectID) -> String {
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension
        let stem = ext.isEmpty ? path : String(path.dropLast(ext.count + 1))
        return ".concord/conflicts/\(stem).\(theirs.short)" + (ext.isEmpty ? "" : ".\(ext)")
    }
}
