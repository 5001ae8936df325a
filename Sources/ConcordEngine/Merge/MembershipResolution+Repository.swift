import ConcordGit
import ConcordModel
import ConcordRules
import ConcordTrust

/// `MembershipResolution` (ConcordRules: the replay, pure) as a merge in a repository needs it: the
/// histories read from git — each commit's parents, its changes to member and invitation files and
/// who signed it — handed to the replay as values, and the files it decides for the two trees.
extension MembershipResolution {
    /// The resolution of merging `theirs` into `ours`, the main line (the merge's first parent),
    /// whose merge base is `base` (nil: none): the decisions of the commits only `theirs` reaches,
    /// replayed in side order onto `ours`' membership (`replayOnMainline`).
    package static func compute(in repository: Repository, base: ObjectID?, ours: ObjectID, theirs: ObjectID, caches: EngineCaches) throws -> MembershipResolution {
        guard base != nil else { return .none }
        let trees = (ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        // Nothing to replay when the side holds the main line's authority: each of its decisions would
        // fall or give what main has. A side whose tip holds the merge base's may still bring decisions
        // (one that fell in a merge on the side, judged there against another membership): replayed.
        guard try authority(trees.theirs, repository) != authority(trees.ours, repository) else { return .none }
        let mainline = try authorityFiles(trees.ours, repository)
        let outcome = try replay(theirs, onto: ours, mainline: mainline, in: repository, caches: caches)
        var resolution = resolution(replayed: outcome.state, sides: [mainline, try authorityFiles(trees.theirs, repository)])
        (resolution.fallen, resolution.replayed) = (outcome.fallen, outcome)
        return resolution
    }

    /// The side `theirs` replayed onto the main line `ours`, whose member and invitation files are `mainline`.
    private static func replay(_ theirs: ObjectID, onto ours: ObjectID, mainline: [String: [UInt8]], in repository: Repository, caches: EngineCaches) throws -> MainlineOutcome {
        // Keys are judged by the format where the side joins: the main line's (a fork from before format 5 proves its keys too).
        let joining = try repository.entry(at: ProfilePaths.profile, inTree: try repository.commit(ours).tree).flatMap { entry in
            entry.kind == .blob ? try? ProfileInfo.decode(try repository.blob(entry.id)) : nil
        }
        let proofsFor = joining.flatMap { $0.formatVersion >= KeyProof.firstFormat ? $0.id : nil }
        return replayOnMainline(mainline, side: try sideDecisions(of: theirs, joining: ours, in: repository, caches: caches), proofsFor: proofsFor,
                                files: caches.memberFiles)
    }

    /// The commits a merge of `theirs` into the main line `ours` brings in, in side order, each with
    /// the membership it lands on: the main line's with the side's decisions before it replayed
    /// (a decision lands on the membership before it). What a side commit did counts where it lands,
    /// as each decision does (docs/security.md, "What a member who lost their rights did concurrently").
    /// `replayed`: the replay of this merge's side, when `compute` made it already.
    package static func landings(of theirs: ObjectID, joining ours: ObjectID, replayed: MainlineOutcome? = nil,
                                 in repository: Repository, caches: EngineCaches) throws -> [(commit: CommitLinks, on: Membership)] {
        func membership(_ files: [String: [UInt8]]) -> Membership { Membership(Array(members(in: files, files: caches.memberFiles).values)) }
        var files = try authorityFiles(try repository.commit(ours).tree, repository)
        let outcome = try replayed ?? replay(theirs, onto: ours, mainline: files, in: repository, caches: caches)
        var on = membership(files)
        var landings = [(commit: CommitLinks, on: Membership)]()
        for commit in try sideOrder(of: theirs, joining: ours, in: repository, caches: caches) {
            landings.append((commit, on))
            guard let changed = outcome.changed[commit.id.hex] else { continue }
            for (path, bytes) in changed { files[path] = bytes }
            on = membership(files)
        }
        return landings
    }

    /// The decisions of the commits a merge of `tip` into the main line `mainline` brings in, in side
    /// order: each non-merge commit's change to member and invitation files, with who signed it.
    package static func sideDecisions(of tip: ObjectID, joining mainline: ObjectID, in repository: Repository, caches: EngineCaches) throws -> [SideDecision] {
        var decisions = [SideDecision]()
        for commit in try sideOrder(of: tip, joining: mainline, in: repository, caches: caches) where commit.parents.count == 1 {
            if let change = try caches.authorityChanges.value(commit.id, { try change(of: commit, in: repository, caches: caches) }) {
                decisions.append(SideDecision(commit: commit.id.hex, change: change))
            }
        }
        return decisions
    }

    /// The commits a merge of `tip` into the main line `mainline` brings in (reachable from `tip`,
    /// not from `mainline`) in side order: the side's own mainline order, each commit after its
    /// parents, a merge's first parent's line before its second's (a depth-first post-order). It
    /// depends on the shape of the history and its parents' order only: no commit id, key or time.
    static func sideOrder(of tip: ObjectID, joining mainline: ObjectID, in repository: Repository, caches: EngineCaches) throws -> [CommitLinks] {
        let side = Set(try repository.newCommits(from: tip, excluding: [mainline]).map(\.id))
        var order = [CommitLinks]()
        var visited = Set<ObjectID>()
        var stack: [(id: ObjectID, expanded: Bool)] = side.contains(tip) ? [(tip, false)] : []
        while let (id, expanded) = stack.popLast() {
            let links = try caches.commitLinks.value(id) { try repository.commitLinks(id) }
            if expanded {
                order.append(links)
                continue
            }
            guard visited.insert(id).inserted else { continue }
            stack.append((id, true))
            // The second parent is pushed first so that the first parent's line is walked first.
            for parent in links.parents.reversed() where side.contains(parent) && !visited.contains(parent) {
                stack.append((parent, false))
            }
        }
        return order
    }

    /// What non-merge `commit` changed in member and invitation files, with who signed it; nil when it
    /// changed none.
    private static func change(of commit: CommitLinks, in repository: Repository, caches: EngineCaches) throws -> AuthorityChange? {
        let parentTree = try caches.commitLinks.value(commit.parents[0]) { try repository.commitLinks(commit.parents[0]) }.tree
        guard try authority(parentTree, repository) != authority(commit.tree, repository) else { return nil }
        var files = [String: (before: [UInt8]?, after: [UInt8]?)]()
        for change in try repository.treeChanges(from: parentTree, to: commit.tree) where isAuthority(change.path) {
            files[String(decoding: change.path, as: UTF8.self)] = (try bytes(change.old, repository), try bytes(change.new, repository))
        }
        guard !files.isEmpty else { return nil }
        return AuthorityChange(signer: try signer(ofCommit: commit.id, in: repository, caches: caches), files: files)
    }

    /// The members `ours` and `theirs` each made active with other device keys, and whether the
    /// merge base had them invited (empty when the two hold the same members directory).
    /// - Invited there: both sides accepted one named invitation. An invitation admits once: no merge
    ///   brings two such acceptances together (rule 3), so the acceptance that reached a remote first
    ///   stands, and a link's holder cannot un-admit, after the fact, the member who accepted it (and
    ///   everything they did since) by accepting it on a fork.
    /// - Otherwise two Admins added one name at once: the merge admits neither (`mergeMemberFile`).
    static func admittedTwice(in repository: Repository, ours: ObjectID, theirs: ObjectID, caches: EngineCaches) throws -> [(member: Member, wasInvited: Bool)] {
        guard let (mine, other) = try changedMemberships(in: repository, ours: ours, theirs: theirs, caches: caches) else { return [] }
        var base: [String: Member]?
        return try mine.members.values.compactMap { member -> (member: Member, wasInvited: Bool)? in
            guard member.status == .active, let there = other.members[member.name], there.status == .active,
                  Set(member.keys.map(\.publicKey)) != Set(there.keys.map(\.publicKey)) else { return nil }
            if base == nil {
                let tree = try repository.mergeBase(ours, theirs).map { try repository.commit($0).tree }
                base = try tree.map { try CommitAuthorizer.membership(in: repository, tree: $0, caches: caches).members } ?? [:]
            }
            return (member, base?[member.name]?.status == .invited)
        }.sorted { $0.member.name < $1.member.name }
    }

    /// The open invitations that `ours` and `theirs` together fill past their uses (joins on each side
    /// that each fit alone), with the joiners on the `theirs` side. Such a merge is never made: the joins
    /// that reached a remote first keep their places (rule 3 refuses a tree naming an invitation more
    /// often than it admits).
    static func overfilledInvitations(in repository: Repository, ours: ObjectID,
                                      theirs: ObjectID, caches: EngineCaches) throws -> [(invitation: OpenInvitation, joiners: [String])] {
        guard let (mine, other) = try changedMemberships(in: repository, ours: ours, theirs: theirs, caches: caches) else { return [] }
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
                                           theirs: ObjectID, caches: EngineCaches) throws -> (ours: Membership, theirs: Membership)? {
        let trees = (ours: try repository.commit(ours).tree, theirs: try repository.commit(theirs).tree)
        let directory = { (tree: ObjectID) in try repository.entry(at: ProfilePaths.membersDirectory, inTree: tree)?.id }
        guard try directory(trees.ours) != directory(trees.theirs) else { return nil }
        return (try CommitAuthorizer.membershipWithInvitations(in: repository, tree: trees.ours, caches: caches),
                try CommitAuthorizer.membershipWithInvitations(in: repository, tree: trees.theirs, caches: caches))
    }

    /// The ids of `tree`'s members and invitations directories.
    private static func authority(_ tree: ObjectID, _ repository: Repository) throws -> [ObjectID?] {
        try [ProfilePaths.membersDirectory, ProfilePaths.invitationsDirectory].map { try repository.entry(at: $0, inTree: tree)?.id }
    }

    /// `tree`'s member and invitation files, by path.
    package static func authorityFiles(_ tree: ObjectID, _ repository: Repository) throws -> [String: [UInt8]] {
        var files = [String: [UInt8]]()
        for directory in [ProfilePaths.membersDirectory, ProfilePaths.invitationsDirectory] {
            guard try repository.entry(at: directory, inTree: tree)?.kind == .tree else { continue }
            for entry in try repository.entries(inDirectory: directory, ofTree: tree) where entry.kind == .blob {
                files[directory + "/" + entry.name] = try repository.blob(entry.id)
            }
        }
        return files
    }

    /// The key that signed `commit` (nil: unsigned, or a signature that does not verify).
    package static func signer(of commit: Commit, in repository: Repository, caches: EngineCaches) throws -> SSHPublicKey? {
        try signer(ofCommit: commit.id, in: repository, caches: caches)
    }

    /// The key that signed the commit `id` (nil: unsigned, or a signature that does not verify), each
    /// exact signature verified once per engine.
    static func signer(ofCommit id: ObjectID, in repository: Repository, caches: EngineCaches) throws -> SSHPublicKey? {
        guard let signed = try repository.signature(ofCommit: id), case .good(let key) = caches.signatures.check(signed) else { return nil }
        return key
    }

    private static func bytes(_ value: TreeEntryValue?, _ repository: Repository) throws -> [UInt8]? {
        guard case .file(let blob)? = value else { return nil }
        return try repository.blob(blob)
    }
}
