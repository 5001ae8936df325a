import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// What merging two lines of history does to authority (docs/security.md, "Concurrent changes to
/// membership"): membership is resolved, not merged file by file.
///
/// Every commit's member and invitation files are the replay of its history's membership decisions:
/// each non-merge commit that changed them (a merge's content follows from its parents) is replayed
/// from the profile's first commit, one at a time, judged against the membership replayed so far
/// rather than the parent its signer had:
/// - an Admin's change stands if its signer is still an active Admin there; a member's change to
///   their own file (their keys, leaving) if they are still active; an admission (an accepted
///   invitation, a join by open invitation) if what it accepted is still open there;
/// - the order is the history's, and among decisions neither of which descends from the other:
///   those that take rights away (a revocation, a demotion from Admin) first, then by the seniority
///   of their signer (the creator first, then the first commit's members by name, then in the order
///   the replay admits members). No tie between two signers is broken by a commit id, key or time;
/// - a change that stands is merged into the replayed file as member files merge (its parent's
///   version as base: a revocation beats a concurrent change; an admission contested by another
///   leaves the member invited, a name taken twice admits nobody);
/// - joins racing past an open invitation's uses all fall; the most senior Admin stays.
/// The result is a function of the set of commits, whatever order devices merge them in. A file
/// only fallen changes made stays, as the format keeps every member and invitation file, but admits
/// nobody: a member file revoked with no keys, an open invitation withdrawn.
struct MembershipResolution {
    /// The merge's version of each member and invitation file the replay decided (path → bytes).
    let overrides: [String: [UInt8]]

    static let none = MembershipResolution(overrides: [:])

    private static let prefixes = [ProfilePaths.membersDirectory + "/", ProfilePaths.invitationsDirectory + "/"].map { Array($0.utf8) }

    /// What one non-merge commit changed in member and invitation files, and who signed it: a
    /// function of the commit's id (its bytes, its parent's and their trees), read once per process.
    struct AuthorityChange {
        let signer: SSHPublicKey?
        /// path → (before, after) in this commit against its parent.
        let files: [String: (before: [UInt8]?, after: [UInt8]?)]
        /// Whether it takes rights away from someone (a revocation, a demotion from Admin).
        let removes: Bool
        /// The open invitations it joins (a member file added naming one), and the uses of those it writes.
        let joins: [String]
        let uses: [String: Int]

        /// nil: the commit changed no member or invitation file.
        static func of(_ commit: CommitLinks, in repository: Repository) throws -> AuthorityChange? {
            let parentTree = try Decoded.shared.links(commit.parents[0], in: repository).tree
            guard try authority(parentTree, repository) != authority(commit.tree, repository) else { return nil }
            var files = [String: (before: [UInt8]?, after: [UInt8]?)]()
            for change in try repository.treeChanges(from: parentTree, to: commit.tree) where isAuthority(change.path) {
                files[String(decoding: change.path, as: UTF8.self)] = (try bytes(change.old, repository), try bytes(change.new, repository))
            }
            guard !files.isEmpty else { return nil }
            var joins = [String](), uses = [String: Int]()
            for (path, change) in files {
                if case .success(.invitation(let id)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty),
                   let invitation = change.after.flatMap({ try? OpenInvitation.decode($0, path: path) }) {
                    uses[id] = max(uses[id] ?? 0, invitation.uses)
                }
                if change.before == nil, let id = change.after.flatMap({ try? Member.decode($0, path: path) })?.invitation {
                    joins.append(id)
                }
            }
            return AuthorityChange(signer: try Decoded.shared.signer(ofCommit: commit.id, in: repository), files: files,
                                   removes: files.contains { path, change in takesRightsAway(path: path, change) },
                                   joins: joins, uses: uses)
        }
    }

    /// One commit's change to member and invitation files, with who signed it.
    private struct Decision {
        let commit: CommitLinks
        /// Its position among the commits of both histories (parents first).
        let position: Int
        let change: AuthorityChange
        var signer: SSHPublicKey? { change.signer }
        var files: [String: (before: [UInt8]?, after: [UInt8]?)] { change.files }
        var removes: Bool { change.removes }
    }

    /// The resolution of merging `ours` and `theirs`, whose merge base is `base` (nil: none).
    static func compute(in repository: Repository, base: ObjectID?, ours: ObjectID, theirs: ObjectID) throws -> MembershipResolution {
        guard let base else { return .none }
        let trees = (base: try repository.commit(base).tree, ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        // Nothing to resolve unless both sides changed authority since their merge base: every commit's
        // member and invitation files are the replay of its history's decisions (its parent's were, and
        // it was valid against them), so one side's alone are that side's files.
        let baseAuthority = try authority(trees.base, repository)
        guard try authority(trees.ours, repository) != baseAuthority, try authority(trees.theirs, repository) != baseAuthority else {
            return .none
        }

        // Every commit of both histories, parents first, and the decisions among them.
        let commits = try Repository.history(from: [ours, theirs]) { try Decoded.shared.links($0, in: repository) }
        var position = [ObjectID: Int]()
        var decisions = [Decision]()
        var decisionOf = [Int: Int]()   // commit position → decision index
        var state = [String: [UInt8]]()
        for (index, commit) in commits.enumerated() {
            position[commit.id] = index
            guard commit.parents.count == 1 else {
                if commit.parents.isEmpty { state = try authorityFiles(commit.tree, repository) }   // the profile's first commit
                continue
            }
            guard let change = try Decoded.shared.change(of: commit, in: repository) else { continue }
            decisionOf[index] = decisions.count
            decisions.append(Decision(commit: commit, position: index, change: change))
        }
        guard !decisions.isEmpty else { return .none }
        // Which decisions each decision descends from (bit sets, built along the commits in order).
        let words = (decisions.count + 63) / 64
        var below = [[UInt64]](repeating: [UInt64](repeating: 0, count: words), count: commits.count)
        for (index, commit) in commits.enumerated() {
            for parent in commit.parents {
                guard let at = position[parent] else { continue }
                for word in 0..<words { below[index][word] |= below[at][word] }
            }
            if let decision = decisionOf[index] { below[index][decision / 64] |= 1 << UInt64(decision % 64) }
        }
        let ancestry = decisions.map { below[$0.position] }

        // Seniority: the first commit's members first (its signer, the creator, before them), then in
        // the order the replay admits members.
        var seniority = [String: Int]()
        let firstMembers = members(in: state)
        if let root = commits.first, let creatorKey = try Decoded.shared.signer(ofCommit: root.id, in: repository),
           let creator = firstMembers.values.first(where: { $0.keys.contains { $0.publicKey == creatorKey } }) {
            seniority[creator.name] = 0
        }
        for name in firstMembers.keys.sorted() where seniority[name] == nil { seniority[name] = seniority.count }
        let falling = fallingJoins(decisions, ancestry: ancestry)

        var current = firstMembers   // members(in: state), kept up to date file by file as decisions apply
        var done = [UInt64](repeating: 0, count: words)
        var pending = Array(decisions.indices)
        var lastAdminVersion = [String: [UInt8]]()
        while !pending.isEmpty {
            func isReady(_ decision: Int) -> Bool {
                (0..<words).allSatisfy { word in
                    let mine: UInt64 = word == decision / 64 ? 1 << UInt64(decision % 64) : 0
                    return ancestry[decision][word] & ~mine & ~done[word] == 0
                }
            }
            func rank(_ decision: Decision) -> Int {
                guard let name = decision.signer.flatMap({ holder(of: $0, in: current) }) else { return Int.max }
                return seniority[name] ?? Int.max - 1
            }
            // A history is acyclic, so some pending decision always has every ancestor done.
            guard let next = pending.indices.filter({ isReady(pending[$0]) }).min(by: { a, b in
                let (x, y) = (decisions[pending[a]], decisions[pending[b]])
                if x.removes != y.removes { return x.removes }
                let (rx, ry) = (rank(x), rank(y))
                if rx != ry { return rx < ry }
                return x.commit.id.hex < y.commit.id.hex   // one signer's own concurrent decisions (or admissions, merged alike either way)
            }) else { break }
            let index = pending.remove(at: next)
            done[index / 64] |= 1 << UInt64(index % 64)
            let decision = decisions[index]
            guard stands(decision, state: state, membership: current, joinFalls: falling.contains(index)) else { continue }
            for (path, change) in decision.files.sorted(by: { $0.key < $1.key }) {
                if case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty), seniority[name] == nil,
                   change.after != nil {
                    seniority[name] = seniority.count
                }
                state[path] = applied(change, to: state[path], path: path)
                if case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty) {
                    current[name] = state[path].flatMap { Decoded.shared.member($0, path: path) }.flatMap { $0.name == name ? $0 : nil }
                }
            }
            for (name, member) in current where member.status == .active && member.role == .admin {
                lastAdminVersion[name] = state[ProfilePaths.member(name)]
            }
        }
        keepAnAdmin(&state, lastAdminVersion: lastAdminVersion, seniority: seniority)

        // Every authority file either side has: the replay's version, or, where no change that
        // stands made it, the file admitting nobody.
        var overrides = [String: [UInt8]]()
        for tree in [trees.ours, trees.theirs] {
            for (path, bytes) in try authorityFiles(tree, repository) where overrides[path] == nil {
                overrides[path] = state[path] ?? admittingNobody(bytes, path: path)
            }
        }
        return MembershipResolution(overrides: overrides)
    }

    /// The members `ours` and `theirs` each made active with other device keys, and whether the
    /// merge base had them invited (empty when the two hold the same members directory).
    /// - Invited there: both sides accepted one named invitation. An invitation admits once: no merge
    ///   brings two such acceptances together (rule 3), so the acceptance that reached a remote first
    ///   stands, and a link's holder cannot un-admit, after the fact, the member who accepted it (and
    ///   everything they did since) by accepting it on a fork.
    /// - Otherwise two Admins added one name at once: the merge admits neither (`mergeMemberFile`).
    static func admittedTwice(in repository: Repository, ours: ObjectID, theirs: ObjectID) throws -> [(member: Member, wasInvited: Bool)] {
        guard let (mine, other) = try changedMemberships(in: repository, ours: ours, theirs: theirs) else { return [] }
        var base: [String: Member]?
        return try mine.members.values.compactMap { member -> (member: Member, wasInvited: Bool)? in
            guard member.status == .active, let there = other.members[member.name], there.status == .active,
                  Set(member.keys.map(\.publicKey)) != Set(there.keys.map(\.publicKey)) else { return nil }
            if base == nil {
                let tree = try repository.mergeBase(ours, theirs).map { try repository.commit($0).tree }
                base = try tree.map { try CommitAuthorizer.membership(in: repository, tree: $0).members } ?? [:]
            }
            return (member, base?[member.name]?.status == .invited)
        }.sorted { $0.member.name < $1.member.name }
    }

    /// The open invitations that `ours` and `theirs` together fill past their uses (joins on each side
    /// that each fit alone), with the joiners on the `theirs` side. Such a merge is never made: the joins
    /// that reached a remote first keep their places (rule 3 refuses a tree naming an invitation more
    /// often than it admits).
    static func overfilledInvitations(in repository: Repository, ours: ObjectID,
                                      theirs: ObjectID) throws -> [(invitation: OpenInvitation, joiners: [String])] {
        guard let (mine, other) = try changedMemberships(in: repository, ours: ours, theirs: theirs) else { return [] }
        var out = [(invitation: OpenInvitation, joiners: [String])]()
        for invitation in mine.openInvitations {
            let names = Set(mine.members.values.filter { $0.invitation == invitation.id }.map(\.name))
            let theirs = other.members.values.filter { $0.invitation == invitation.id && !names.contains($0.name) }.map(\.name)
            if names.count + theirs.count > invitation.uses, !theirs.isEmpty { out.append((invitation, theirs.sorted())) }
        }
        return out
    }

    /// The memberships (with open invitations) of commits `ours` and `theirs`; nil when they hold the
    /// same members directory (nothing to compare).
    private static func changedMemberships(in repository: Repository, ours: ObjectID,
                                           theirs: ObjectID) throws -> (ours: Membership, theirs: Membership)? {
        let trees = (ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        let directory = { (tree: ObjectID) in try repository.entry(at: ProfilePaths.membersDirectory, inTree: tree)?.id }
        guard try directory(trees.ours) != directory(trees.theirs) else { return nil }
        return (try CommitAuthorizer.membershipWithInvitations(in: repository, tree: trees.ours),
                try CommitAuthorizer.membershipWithInvitations(in: repository, tree: trees.theirs))
    }

    /// Whether `path` is a member or invitation file.
    static func isAuthority(_ path: [UInt8]) -> Bool {
        prefixes.contains { path.starts(with: $0) }
    }

    /// The ids of `tree`'s members and invitations directories.
    private static func authority(_ tree: ObjectID, _ repository: Repository) throws -> [ObjectID?] {
        try [ProfilePaths.membersDirectory, ProfilePaths.invitationsDirectory].map { try repository.entry(at: $0, inTree: tree)?.id }
    }

    /// `tree`'s member and invitation files, by path.
    private static func authorityFiles(_ tree: ObjectID, _ repository: Repository) throws -> [String: [UInt8]] {
        var files = [String: [UInt8]]()
        for directory in [ProfilePaths.membersDirectory, ProfilePaths.invitationsDirectory] {
            guard try repository.entry(at: directory, inTree: tree)?.kind == .tree else { continue }
            for entry in try repository.entries(inDirectory: directory, ofTree: tree) where entry.kind == .blob {
                files[directory + "/" + entry.name] = try repository.blob(entry.id)
            }
        }
        return files
    }

    /// A profile never ends with no active Admin: when the replay took the last ones away (they left
    /// or were revoked concurrently), the most senior member who was ever an active Admin in it gets
    /// back the file they last had as one.
    private static func keepAnAdmin(_ state: inout [String: [UInt8]], lastAdminVersion: [String: [UInt8]], seniority: [String: Int]) {
        guard !members(in: state).values.contains(where: { $0.status == .active && $0.role == .admin }),
              let senior = lastAdminVersion.keys.min(by: { (seniority[$0] ?? Int.max, $0) < (seniority[$1] ?? Int.max, $1) }) else { return }
        state[ProfilePaths.member(senior)] = lastAdminVersion[senior]
    }

    /// Whether `decision` stands against the membership replayed so far.
    private static func stands(_ decision: Decision, state: [String: [UInt8]], membership: [String: Member], joinFalls: Bool) -> Bool {
        let signer = decision.signer.flatMap { key in holder(of: key, in: membership) }.flatMap { membership[$0] }
        if let signer, signer.status == .active {
            if signer.role == .admin { return true }
            // A member's own file: their keys, or leaving (what rule 2 lets a member change there).
            return decision.files.allSatisfy { path, change in
                path == ProfilePaths.member(signer.name) && AccessRule.mayChange(path, by: signer, kinds: .empty, ownMemberFile: change) == nil
            }
        }
        // An admission: one member file, holding the signing key, accepting what is still open.
        guard let key = decision.signer, decision.files.count == 1, let (path, change) = decision.files.first,
              case .success(.member) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty),
              let after = change.after.flatMap({ try? Member.decode($0, path: path) }), after.keys.contains(where: { $0.publicKey == key })
        else { return false }
        if let id = after.invitation, change.before == nil {
            // By open invitation: still open (not withdrawn, made by a change that stands), not overused.
            guard !joinFalls, let bytes = state[ProfilePaths.invitation(id)],
                  let invitation = try? OpenInvitation.decode(bytes, path: ProfilePaths.invitation(id)), !invitation.withdrawn else { return false }
            return true
        }
        // A named invitation: the member is still invited as the acceptance found them (a concurrent
        // acceptance of it is merged below as contested: nobody wins).
        guard let before = change.before, let current = state[path] else { return false }
        let pendingNow = Decoded.shared.member(current, path: path)?.status
        return current == before || pendingNow == .active && Decoded.shared.member(before, path: path)?.status == .invited
    }

    /// The members of the replayed files.
    private static func members(in state: [String: [UInt8]]) -> [String: Member] {
        var out = [String: Member]()
        for (path, bytes) in state {
            guard case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty),
                  let member = Decoded.shared.member(bytes, path: path), member.name == name else { continue }
            out[name] = member
        }
        return out
    }

    private static func holder(of key: SSHPublicKey, in membership: [String: Member]) -> String? {
        membership.values.filter { $0.keys.contains { $0.publicKey == key } }.map(\.name).min()
    }

    /// What this process already read: member files by their bytes, and commits' signatures (a
    /// `SignatureMemo`: each exact signature and signed bytes verified once). The same bytes decode,
    /// and the same signature verifies, the same way.
    /// A replay reads the same files and decisions again for every merge it resolves.
    final class Decoded: @unchecked Sendable {   // unchecked: its memos lock themselves (ContentMemo, SignatureMemo); all `let`
        static let shared = Decoded()
        private let members = ContentMemo<[UInt8], Member?>(limit: 8_192)
        private let changes = ContentMemo<ObjectID, AuthorityChange?>(limit: 65_536)
        private let signatures = SignatureMemo.shared

        func member(_ bytes: [UInt8], path: String) -> Member? {
            members.value(bytes) { try? Member.decode(bytes, path: path) }
        }

        /// `AuthorityChange.of(commit)`, read once per process (a replay walks the whole history for
        /// every merge of membership changes it resolves).
        func change(of commit: CommitLinks, in repository: Repository) throws -> AuthorityChange? {
            try changes.value(commit.id) { try AuthorityChange.of(commit, in: repository) }
        }

        /// A commit's tree and parents: a replay walks the whole history for every merge of
        /// membership changes it resolves, and libgit2's walk read every commit again each time.
        func links(_ id: ObjectID, in repository: Repository) throws -> CommitLinks {
            try commitLinks.value(id) { try repository.commitLinks(id) }
        }
        private let commitLinks = ContentMemo<ObjectID, CommitLinks>(limit: 262_144)

        func signer(ofCommit id: ObjectID, in repository: Repository) throws -> SSHPublicKey? {
            guard let signed = try repository.signature(ofCommit: id), case .good(let key) = signatures.check(signed) else { return nil }
            return key
        }
    }

    /// `change` (its commit's before and after) merged into the replayed file `current` as the
    /// merge policy merges member files and documents.
    private static func applied(_ change: (before: [UInt8]?, after: [UInt8]?), to current: [UInt8]?, path: String) -> [UInt8]? {
        guard let after = change.after else { return current }
        guard let current, current != change.before else { return after }
        let isMember = path.hasPrefix(ProfilePaths.membersDirectory + "/")
        let outcome = isMember ? RecordMerge.mergeMemberFile(base: change.before, ours: current, theirs: after)
                               : RecordMerge.mergeDocument(base: change.before, ours: current, theirs: after)
        if case .merged(let bytes, _) = outcome { return bytes }
        return current
    }

    /// Whether a change to `path` takes rights away: a member revoked, or no longer an Admin.
    private static func takesRightsAway(path: String, _ change: (before: [UInt8]?, after: [UInt8]?)) -> Bool {
        guard let before = change.before.flatMap({ Decoded.shared.member($0, path: path) }),
              let after = change.after.flatMap({ Decoded.shared.member($0, path: path) }) else { return false }
        return before.status == .active && after.status == .revoked || before.role == .admin && after.role != .admin
    }

    /// The joins by open invitation among `decisions` that fall: those that, with the joins of the
    /// same invitation before them and those made concurrently, would take it past its uses (two
    /// joins racing for its last place both fall: no tie-break a claimant could grind).
    private static func fallingJoins(_ decisions: [Decision], ancestry: [[UInt64]]) -> Set<Int> {
        var joins = [String: [Int]]()
        var uses = [String: Int]()
        for (index, decision) in decisions.enumerated() {
            uses.merge(decision.change.uses, uniquingKeysWith: max)
            for id in decision.change.joins { joins[id, default: []].append(index) }
        }
        func isAncestor(_ a: Int, of b: Int) -> Bool { a != b && ancestry[b][a / 64] & (1 << UInt64(a % 64)) != 0 }
        var out = Set<Int>()
        for (id, indices) in joins {
            for join in indices {
                let competing = indices.filter { $0 == join || isAncestor($0, of: join) || !isAncestor(join, of: $0) }.count
                if competing > (uses[id] ?? 0) { out.insert(join) }
            }
        }
        return out
    }

    /// The key that signed `commit` (nil: unsigned, or a signature that does not verify).
    static func signer(of commit: Commit, in repository: Repository) throws -> SSHPublicKey? {
        try Decoded.shared.signer(ofCommit: commit.id, in: repository)
    }

    private static func bytes(_ value: TreeEntryValue?, _ repository: Repository) throws -> [UInt8]? {
        guard case .file(let blob)? = value else { return nil }
        return try repository.blob(blob)
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
