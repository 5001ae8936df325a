import ConcordGit
import ConcordModel
import Foundation

/// A file a merge could not resolve by policy: ours stays in place, theirs is saved beside it.
public struct UnresolvedFile: Sendable, Equatable {
    /// The file, relative to the profile.
    public let path: String
    /// Where the other side's version was saved (relative to the profile), if it had one.
    public let savedAs: String?
    /// Why the policy could not merge it.
    public let reason: String
}

/// Chooses the policy for each conflicting path of one merge and collects what it decided.
/// Used as the in-process libgit2 driver's resolver and, file by file, by `concord merge-driver`.
final class MergePlanner {
    let kinds: KindsTable
    private(set) var failures: [String: String] = [:]
    /// Every call that resolved conflicts: its path, the blobs of its two sides and the conflicts, in call order.
    private var decisions: [(path: String, ours: ObjectID, theirs: ObjectID, conflicts: [ResolvedConflict])] = []

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

    /// While set, a file a policy covers is not decided when libgit2 asks: it is left conflicted
    /// and queued, and `decideQueued` decides them all on every core once libgit2 is done. Only
    /// for a merge with one merge base: with several, libgit2 first merges the bases into a
    /// virtual one, and that merge needs its answers at once.
    var queueing = false
    private var queued: [MergeFileInput] = []

    /// Decides one file. Files outside any kind and outside `.concord/` go to git's text merge.
    func resolve(_ input: MergeFileInput) -> MergeFileResolution {
        if queueing, Self.merger(for: input.path, kinds: kinds) != nil {
            queued.append(input)
            return .conflict
        }
        return record(input, outcome(path: input.path, base: input.ancestor, ours: input.ours, theirs: input.theirs))
    }

    /// The queued files (in the order libgit2 asked) with what was decided for each, outcomes
    /// worked out on every core: the same as deciding each when asked, since an outcome depends
    /// only on the file's three versions and the kinds.
    func decideQueued() -> [(input: MergeFileInput, resolution: MergeFileResolution)] {
        let kinds = kinds, files = queued
        queued = []
        let outcomes = Parallel.map(files, minimumPerShare: 64) { file in
            Self.outcome(path: file.path, base: file.ancestor, ours: file.ours, theirs: file.theirs, kinds: kinds)
        }
        return zip(files, outcomes).map { ($0, record($0, $1)) }
    }

    /// Keeps what was decided for `input` (conflicts resolved, or why it could not be) and
    /// returns it as the driver's answer.
    private func record(_ input: MergeFileInput, _ outcome: FileMergeOutcome?) -> MergeFileResolution {
        guard let outcome else { return .passthrough }
        switch outcome {
        case .merged(let bytes, let conflicts):
            if !conflicts.isEmpty { decisions.append((input.path, input.oursBlob, input.theirsBlob, conflicts)) }
            return .merged(bytes)
        case .unresolved(let reason):
            failures[input.path] = reason
            return .conflict
        }
    }

    /// The conflicts resolved between this merge's two sides: those of the last call for each path whose
    /// sides are that path's blobs in ours and in theirs (`sides` gives them for a list of paths, nil
    /// where a side has none). In a criss-cross history libgit2 first merges the merge bases into one
    /// virtual base, calling the driver for their clashes too; those are not conflicts of this merge,
    /// and were reported by the merges that made the bases.
    func conflicts(between sides: ([String]) throws -> [(ours: ObjectID?, theirs: ObjectID?)]) rethrows -> [ResolvedConflict] {
        // Queued: every decision was of this merge's own two sides (one merge base, no virtual one).
        let current: [(ours: ObjectID?, theirs: ObjectID?)] = queueing ? decisions.map { ($0.ours, $0.theirs) } : try sides(decisions.map(\.path))
        var byPath: [String: [ResolvedConflict]] = [:]
        var paths: [String] = []
        for (decision, side) in zip(decisions, current) {
            guard side.ours == decision.ours, side.theirs == decision.theirs else { continue }
            if byPath.updateValue(decision.conflicts, forKey: decision.path) == nil { paths.append(decision.path) }
        }
        return paths.flatMap { byPath[$0] ?? [] }
    }

    /// The policy outcome for `path`, or nil when no Concord policy covers it.
    func outcome(path: String, base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) -> FileMergeOutcome? {
        Self.outcome(path: path, base: base, ours: ours, theirs: theirs, kinds: kinds)
    }

    static func outcome(path: String, base: [UInt8]?, ours: [UInt8], theirs: [UInt8], kinds: KindsTable) -> FileMergeOutcome? {
        merger(for: path, kinds: kinds)?(base, ours, theirs)
    }

    /// How `path` is merged under `kinds`, or nil when no Concord policy covers it.
    static func merger(for path: String, kinds: KindsTable) -> (([UInt8]?, [UInt8], [UInt8]) -> FileMergeOutcome)? {
        if path == KindsTable.path { return { RecordMerge.mergeKindsFile(base: $0, ours: $1, theirs: $2) } }
        // Generated from the kinds: whatever either side holds, the merge holds the merged kinds' version.
        if path == ProfilePaths.gitattributes { return { _, _, _ in .merged(bytes: Array(kinds.gitattributes().utf8), conflicts: []) } }
        if path == ProfilePaths.profile || (path.hasPrefix(ProfilePaths.invitationsDirectory + "/") && path.hasSuffix(".json")) {
            return { RecordMerge.mergeDocument(base: $0, ours: $1, theirs: $2) }
        }
        if path.hasPrefix(ProfilePaths.membersDirectory + "/") && path.hasSuffix(".json") {
            return { RecordMerge.mergeMemberFile(base: $0, ours: $1, theirs: $2) }
        }
        guard let (kind, fileName) = kinds.kind(forPath: path), fileName.hasSuffix("." + kind.policy.fileExtension) else {
            return nil
        }
        return { RecordMerge.merge(policy: kind.policy, base: $0, ours: $1, theirs: $2) }
    }

    /// Where the other side of an unresolved `path` is kept: `.concord/conflicts/<dir>/<name>.<commit>.<ext>`.
    static func conflictCopyPath(for path: String, theirs: ObjectID) -> String {
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension
        let stem = ext.isEmpty ? path : String(path.dropLast(ext.count + 1))
        return ".concord/conflicts/\(stem).\(theirs.short)" + (ext.isEmpty ? "" : ".\(ext)")
    }
}
