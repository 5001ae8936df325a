import ConcordGit
import ConcordModel
import ConcordTrust

/// What merging two lines of history does to authority (docs/security.md, "Concurrent changes to
/// membership"): membership is resolved, not unioned.
///
/// A member whom one side revoked, or demoted from Admin, since the merge base may have gone on
/// changing membership on the other side, concurrently (a revoked Admin's alias made on an old
/// fork). Those changes fall: every member file or open invitation a commit on the other side
/// changed while signed by such a member takes, in the merge, the version the revoking side has
/// (base's, where that side left it alone). A file only the fallen side has stays, as the format
/// keeps every member and invitation file, but admits nobody: a member file is revoked with no
/// keys, an open invitation withdrawn. It falls further: a member whose admission or promotion fell
/// falls in turn, with the membership changes they signed, and so does every member who joined by
/// an invitation that fell. A demoted member's changes to their own member file (their device keys)
/// stand, as their new role allows them.
///
/// The rule reads signers from signatures and states from trees, and breaks no tie by commit id,
/// key or time: two Admins who revoke each other concurrently each lose their revocation of the
/// other (both stay, and both revocations stay in history).
struct MembershipResolution {
    /// The merge's version of each path whose change fell (path → bytes).
    let overrides: [String: [UInt8]]
    /// Members whose member file's change fell (their admission, promotion or keys on the fallen side).
    let fallen: Set<String>

    static let none = MembershipResolution(overrides: [:], fallen: [])

    /// The resolution of merging `ours` and `theirs`, whose merge base is `base` (nil: none).
    static func compute(in repository: Repository, base: ObjectID?, ours: ObjectID, theirs: ObjectID) throws -> MembershipResolution {
        guard let base else { return .none }
        let trees = (base: try repository.commit(base).tree, ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        let membersPath = ProfilePaths.membersDirectory
        // Nothing falls unless a side changed member files (a revocation or demotion is a member-file change).
        let directories = try [trees.base, trees.ours, trees.theirs].map { try repository.entry(at: membersPath, inTree: $0)?.id }
        guard directories[1] != directories[0] || directories[2] != directories[0] else { return .none }
        let baseMembership = try CommitAuthorizer.membership(in: repository, tree: trees.base)
        var overrides = [String: [UInt8]]()
        var fallen = Set<String>()
        for (side, sideTree, other) in [(theirs, trees.theirs, (commit: ours, tree: trees.ours)),
                                         (ours, trees.ours, (commit: theirs, tree: trees.theirs))] {
            let otherMembership = try CommitAuthorizer.membership(in: repository, tree: other.tree)
            // Who lost rights on the other side: revoked (nothing of theirs stands) or demoted from Admin.
            var falling = [String: Bool]()   // name → revoked
            for (name, before) in baseMembership.members where before.status == .active {
                guard let after = otherMembership.members[name] else { continue }
                if after.status == .revoked {
                    falling[name] = true
                } else if before.role == .admin, after.role != .admin {
                    falling[name] = false
                }
            }
            guard !falling.isEmpty else { continue }
            let paths = try fallenPaths(in: repository, side: side, other: other, sideTree: sideTree, base: trees.base, falling: &falling)
            for path in paths.sorted() {
                overrides[path] = try keptVersion(of: path, in: repository, other: other, side: sideTree)
            }
            fallen.formUnion(paths.compactMap { path in
                if case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty) { return name }
                return nil
            })
        }
        return MembershipResolution(overrides: overrides, fallen: fallen)
    }

    /// The member and invitation files whose changes on `side` (since its merge base with `other`)
    /// fall, growing `falling` with the members whose admission or rights fell with them.
    private static func fallenPaths(in repository: Repository, side: ObjectID, other: (commit: ObjectID, tree: ObjectID), sideTree: ObjectID,
                                    base: ObjectID, falling: inout [String: Bool]) throws -> Set<String> {
        let commits = try repository.newCommits(from: side, excluding: [other.commit])
        // Each commit's authority changes and signer, read once.
        var changesBySigner = [(signer: String, paths: [String])]()
        for commit in commits {
            let paths = try authorityChanges(of: commit, in: repository)
            guard !paths.isEmpty, let signer = try signer(of: commit, in: repository) else { continue }
            changesBySigner.append((signer, paths))
        }
        let sideChanges = try repository.treeChanges(from: base, to: sideTree).map { String(decoding: $0.path, as: UTF8.self) }
        var paths = Set<String>()
        while true {
            var changed = false
            for (signer, touched) in changesBySigner {
                guard let revoked = falling[signer] else { continue }
                for path in touched where revoked || path != ProfilePaths.member(signer) { changed = paths.insert(path).inserted || changed }
            }
            var withdrawn = Set<String>()
            for path in paths {
                switch ProfilePathRules.classify(Array(path.utf8), kinds: .empty) {
                case .success(.member(let name)):
                    // A member whose file fell keeps what the merge keeps of it; they fall with it as far
                    // as they had more on this side: not active any more, or no longer an Admin.
                    let mine = try repository.entry(at: path, inTree: sideTree).flatMap { try? Member.decode(try repository.blob($0.id), path: path) }
                    let kept = try? Member.decode(try keptVersion(of: path, in: repository, other: other, side: sideTree), path: path)
                    var now: Bool?
                    if mine?.status == .active, kept?.status != .active {
                        now = true
                    } else if mine?.role == .admin, kept?.role != .admin {
                        now = false
                    }
                    if let now, falling[name] == nil || (now && falling[name] == false) {
                        falling[name] = now
                        changed = true
                    }
                case .success(.invitation(let id)): withdrawn.insert(id)
                default: break
                }
            }
            // Members who joined by an invitation that fell fall with it.
            if !withdrawn.isEmpty {
                for path in sideChanges where !paths.contains(path) {
                    guard case .success(.member) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty),
                          let bytes = try repository.entry(at: path, inTree: sideTree).map({ try repository.blob($0.id) }),
                          let member = try? Member.decode(bytes, path: path), let id = member.invitation, withdrawn.contains(id) else { continue }
                    paths.insert(path)
                    changed = true
                }
            }
            if !changed { return paths }
        }
    }

    /// The member and open-invitation files `commit` changed: against its parent, or for a merge, the
    /// files it gives content no parent had (what its signer chose, not what it brought in).
    private static func authorityChanges(of commit: Commit, in repository: Repository) throws -> [String] {
        let prefixes = [ProfilePaths.membersDirectory + "/", ProfilePaths.invitationsDirectory + "/"].map { Array($0.utf8) }
        var common: Set<String>?
        for parent in commit.parents.isEmpty ? [nil] : commit.parents.map(Optional.some) {
            let parentTree = try parent.map { try repository.commit($0).tree }
            let changed = try repository.treeChanges(from: parentTree, to: commit.tree)
                .filter { change in prefixes.contains { change.path.starts(with: $0) } }
                .map { String(decoding: $0.path, as: UTF8.self) }
            common = common.map { $0.intersection(changed) } ?? Set(changed)
        }
        return (common ?? []).sorted()
    }

    /// The member whose key signed `commit`, in its first parent's membership (nil: none, or unsigned).
    private static func signer(of commit: Commit, in repository: Repository) throws -> String? {
        guard let parent = commit.parents.first, let signed = try repository.signature(ofCommit: commit.id),
              let key = try? SSHSignature.verify(signed.signature, message: signed.signedData) else { return nil }
        let membership = try CommitAuthorizer.membership(in: repository, tree: try repository.commit(parent).tree)
        return membership.holders(of: key).first?.member.name
    }

    /// What the merge keeps at `path`, whose change on the fallen side fell: the other side's version
    /// (the base's where it left the file alone), or, for a file only the fallen side has, that file
    /// admitting nobody.
    private static func keptVersion(of path: String, in repository: Repository, other: (commit: ObjectID, tree: ObjectID),
                                    side: ObjectID) throws -> [UInt8] {
        if let kept = try repository.entry(at: path, inTree: other.tree) { return try repository.blob(kept.id) }
        let added = try repository.entry(at: path, inTree: side).map { try repository.blob($0.id) } ?? []
        guard case .object(var fields)? = try? JSONValue.parse(added) else { return added }
        switch ProfilePathRules.classify(Array(path.utf8), kinds: .empty) {
        case .success(.member):
            fields["status"] = .string("revoked")
            fields["keys"] = .array([])
        case .success(.invitation):
            fields["withdrawn"] = .bool(true)
        default:
            return added
        }
        return JSONValue.object(fields).canonicalBytes()
    }
}
