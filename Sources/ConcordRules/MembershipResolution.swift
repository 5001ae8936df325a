import ConcordModel
import ConcordTrust

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
package struct MembershipResolution: Sendable {
    /// The merge's version of each member and invitation file the replay decided (path → bytes).
    package let overrides: [String: [UInt8]]
    /// The side's decisions that did not stand (`replayOnMainline`).
    package var fallen: [FallenDecision] = []

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
        /// Whether it takes rights away from someone (a revocation, a demotion from Admin).
        package let removes: Bool
        /// The open invitations it joins (a member file added naming one), and the uses of those it writes.
        package let joins: [String]
        package let uses: [String: Int]

        /// The change of a commit signed by `signer` (nil: unsigned, or a signature that does not
        /// verify) that changes `files` (not empty).
        package init(signer: SSHPublicKey?, files: [String: (before: [UInt8]?, after: [UInt8]?)]) {
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
            self.signer = signer
            self.files = files
            self.removes = files.contains { path, change in takesRightsAway(path: path, change) }
            self.joins = joins
            self.uses = uses
        }
    }

    /// One commit of the two histories a merge brings together, as the replay reads it.
    package struct HistoryCommit: Sendable {
        /// Its id (hex): the last tie-break, between one signer's own concurrent decisions.
        package let id: String
        /// The positions of its parents among the commits before it (parents outside the histories left out).
        package let parents: [Int]
        /// What it changed in member and invitation files (nil: a merge or root commit, or none).
        package let change: AuthorityChange?

        package init(id: String, parents: [Int], change: AuthorityChange?) {
            self.id = id
            self.parents = parents
            self.change = change
        }
    }

    /// One commit's change to member and invitation files, with who signed it.
    private struct Decision {
        let commit: HistoryCommit
        /// Its position among the commits of both histories (parents first).
        let position: Int
        let change: AuthorityChange
        var signer: SSHPublicKey? { change.signer }
        var files: [String: (before: [UInt8]?, after: [UInt8]?)] { change.files }
        var removes: Bool { change.removes }
    }

    /// The member and invitation files the replay of `commits` (every commit of both histories,
    /// parents first) decides, from `rootFiles` (those of the profile's first commit, signed by
    /// `creator`); nil when no commit among them changed any.
    package static func replay(_ commits: [HistoryCommit], rootFiles: [String: [UInt8]], creator: SSHPublicKey?) -> [String: [UInt8]]? {
        var decisions = [Decision]()
        var decisionOf = [Int: Int]()   // commit position → decision index
        var state = rootFiles
        for (index, commit) in commits.enumerated() {
            guard commit.parents.count == 1, let change = commit.change else { continue }
            decisionOf[index] = decisions.count
            decisions.append(Decision(commit: commit, position: index, change: change))
        }
        guard !decisions.isEmpty else { return nil }
        // Which decisions each decision descends from (bit sets, built along the commits in order).
        let words = (decisions.count + 63) / 64
        var below = [[UInt64]](repeating: [UInt64](repeating: 0, count: words), count: commits.count)
        for (index, commit) in commits.enumerated() {
            for at in commit.parents {
                for word in 0..<words { below[index][word] |= below[at][word] }
            }
            if let decision = decisionOf[index] { below[index][decision / 64] |= 1 << UInt64(decision % 64) }
        }
        let ancestry = decisions.map { below[$0.position] }

        // Seniority: the first commit's members first (its signer, the creator, before them), then in
        // the order the replay admits members.
        var seniority = [String: Int]()
        let firstMembers = members(in: state)
        if let creatorKey = creator,
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
                return x.commit.id < y.commit.id   // one signer's own concurrent decisions (or admissions, merged alike either way)
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
                    current[name] = state[path].flatMap { memberFile($0, path: path) }.flatMap { $0.name == name ? $0 : nil }
                }
            }
            for (name, member) in current where member.status == .active && member.role == .admin {
                lastAdminVersion[name] = state[ProfilePaths.member(name)]
            }
        }
        keepAnAdmin(&state, lastAdminVersion: lastAdminVersion, seniority: seniority)

        return state
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
        let pendingNow = memberFile(current, path: path)?.status
        return current == before || pendingNow == .active && memberFile(before, path: path)?.status == .invited
    }

    /// The members of the replayed files.
    static func members(in state: [String: [UInt8]]) -> [String: Member] {
        var out = [String: Member]()
        for (path, bytes) in state {
            guard case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty),
                  let member = memberFile(bytes, path: path), member.name == name else { continue }
            out[name] = member
        }
        return out
    }

    private static func holder(of key: SSHPublicKey, in membership: [String: Member]) -> String? {
        membership.values.filter { $0.keys.contains { $0.publicKey == key } }.map(\.name).min()
    }

    /// Member files by their bytes: the same bytes decode the same way, and a replay reads the same
    /// files again for every merge it resolves.
    private static let memberFiles = ContentMemo<[UInt8], Member?>(limit: 8_192)

    /// The member `bytes` (at `path`) hold; nil when they do not read.
    package static func memberFile(_ bytes: [UInt8], path: String) -> Member? {
        memberFiles.value(bytes) { try? Member.decode(bytes, path: path) }
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

    /// Whether a change to `path` takes rights away: a member revoked, or no longer an Admin.
    private static func takesRightsAway(path: String, _ change: (before: [UInt8]?, after: [UInt8]?)) -> Bool {
        guard let before = change.before.flatMap({ memberFile($0, path: path) }),
              let after = change.after.flatMap({ memberFile($0, path: path) }) else { return false }
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
