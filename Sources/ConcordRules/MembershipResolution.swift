import ConcordModel
import ConcordTrust

/// What merging two lines of history does to authority (docs/security.md, "Decisions in the order
/// they reached the remote"): membership is resolved, not merged file by file. A merge's member and
/// invitation files are its first parent's with its side's decisions replayed onto them in mainline
/// order (`replayOnMainline`, MainlineReplay.swift); this type holds what a merge takes from that
/// replay, and the pieces the replay shares. A file only fallen decisions made stays, as the format
/// keeps every member and invitation file, but admits nobody: a member file revoked with no keys,
/// an open invitation withdrawn.
package struct MembershipResolution: Sendable {
    /// The merge's version of each member and invitation file the replay decided (path → bytes).
    package let overrides: [String: [UInt8]]
    /// The side's decisions that did not stand (`replayOnMainline`).
    package var fallen: [FallenDecision] = []
    /// The replay itself, when one was made: who each side commit lands on (`landings`) reads it
    /// rather than replaying the side again.
    package var replayed: MainlineOutcome?

    package static let none = MembershipResolution(overrides: [:])

    private static let prefixes = [ProfilePaths.membersDirectory + "/", ProfilePaths.invitationsDirectory + "/"].map { Array($0.utf8) }

    /// Whether `path` is a member or invitation file.
    package static func isAuthority(_ path: [UInt8]) -> Bool {
        prefixes.contains { path.starts(with: $0) }
    }

    /// What one non-merge commit changed in member and invitation files, and who signed it: a
    /// function of the commit's id (its bytes, its parent's and their trees), read once per process.
    package struct AuthorityChange: Sendable {
        package let signer: SSHPublicKey?
        /// path → (before, after) in this commit against its parent.
        package let files: [String: (before: [UInt8]?, after: [UInt8]?)]

        /// The change of a commit signed by `signer` (nil: unsigned, or a signature that does not
        /// verify) that changes `files` (not empty).
        package init(signer: SSHPublicKey?, files: [String: (before: [UInt8]?, after: [UInt8]?)]) {
            self.signer = signer
            self.files = files
        }
    }

    /// The resolution a merge takes from the replayed files `state`: every authority file either side
    /// has (`sides`: ours, theirs, each by path): the replay's version, or, where no change that stands
    /// made it, the file admitting nobody.
    package static func resolution(replayed state: [String: [UInt8]], sides: [[String: [UInt8]]]) -> MembershipResolution {
        var overrides = [String: [UInt8]]()
        for files in sides {
            for (path, bytes) in files where overrides[path] == nil {
                overrides[path] = state[path] ?? admittingNobody(bytes, path: path)
            }
        }
        return MembershipResolution(overrides: overrides)
    }

    /// The members of the replayed files (`files` decodes them).
    package static func members(in state: [String: [UInt8]], files: MemberFileMemo) -> [String: Member] {
        var out = [String: Member]()
        for (path, bytes) in state {
            guard case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty),
                  let member = files.member(bytes, path: path), member.name == name else { continue }
            out[name] = member
        }
        return out
    }

    /// `change` (its commit's before and after) merged into the replayed file `current` as the
    /// merge policy merges member files and documents.
    static func applied(_ change: (before: [UInt8]?, after: [UInt8]?), to current: [UInt8]?, path: String) -> [UInt8]? {
        guard let after = change.after else { return current }
        guard let current, current != change.before else { return after }
        let isMember = path.hasPrefix(ProfilePaths.membersDirectory + "/")
        let outcome = isMember ? RecordMerge.mergeMemberFile(base: change.before, ours: current, theirs: after)
                               : RecordMerge.mergeDocument(base: change.before, ours: current, theirs: after)
        if case .merged(let bytes, _) = outcome { return bytes }
        return current
    }

    /// A member or invitation file that no change that stands made: kept (the format never deletes
    /// them), admitting nobody.
    private static func admittingNobody(_ bytes: [UInt8], path: String) -> [UInt8] {
        guard case .object(var fields)? = try? JSONValue.parse(bytes) else { return bytes }
        switch ProfilePathRules.classify(Array(path.utf8), kinds: .empty) {
        case .success(.member):
            fields["status"] = .string("revoked")
            fields["keys"] = .array([])
        case .success(.invitation):
            fields["withdrawn"] = .bool(true)
        default:
            return bytes
        }
        return JSONValue.object(fields).canonicalBytes()
    }
}
