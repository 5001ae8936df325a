import ConcordGit
import ConcordModel
import ConcordTrust
import Dispatch

/// Applies the access rule (`AccessRule`, rules 1–4 of docs/security.md) to commits of a
/// repository: reads each commit's SSHSIG signature and the membership and kinds in force at its
/// parents, and refuses with `ConcordError.unauthorizedCommit`.
///
/// Membership is read from the PARENT's tree, never the working tree or a later commit, so a
/// commit that changes membership is judged by the membership just before it (rule 4). Parsed
/// memberships (for the process) and kinds tables are kept by the object id of the members tree and the kinds blob:
/// a run of commits that leave both alone costs one Ed25519 verification each plus the tree diff
/// the structural check already made.
final class CommitAuthorizer {
    let repository: Repository
    private var kindsTables: [ObjectID: KindsTable] = [:]
    private var rootID: ObjectID?
    private static let noMembers = Membership([])
    /// The trees of commits known by id (the new commits being checked), so that a parent's tree
    /// is not read again through libgit2; other commits are read.
    var commitTrees: [ObjectID: ObjectID] = [:]

    init(repository: Repository) {
        self.repository = repository
    }

    /// What a commit's signature says on its own, before any membership is consulted.
    enum SignatureCheck: Sendable {
        case unsigned
        case bad(TrustError)
        /// A good signature by this key.
        case good(SSHPublicKey)

        /// What `SSHSignature.verify` says of `signed`.
        init(verifying signed: CommitSignature) {
            do throws(TrustError) {
                self = .good(try SSHSignature.verify(signed.signature, message: signed.signedData))
            } catch {
                self = .bad(error)
            }
        }
    }

    /// The signatures of `commits`, read from the repository (by the one thread that uses it).
    func signatures(of commits: ArraySlice<Commit>) throws -> [CommitSignature?] {
        try commits.map { commit -> CommitSignature? in
            do { return try repository.signature(ofCommit: commit.id) } catch let error as GitError {
                throw ConcordError.invalidCommit(commit: commit.id.short, path: nil, reason: "its signature cannot be read (\(error.message))")
            }
        }
    }

    /// Verifies each of `signatures`, in order; `memo` answers those it was asked before.
    static func verify(_ signatures: [CommitSignature?], memo: SignatureMemo? = nil) -> [SignatureCheck] {
        signatures.map { signed -> SignatureCheck in
            guard let signed else { return .unsigned }
            return memo?.check(signed) ?? SignatureCheck(verifying: signed)
        }
    }

    /// Checks `commit` (whose changes against its first parent are `changes`, and whose signature
    /// says `signature`); returns who signed it.
    @discardableResult
    func authorize(_ commit: Commit, changes: [TreeChange], signature: SignatureCheck) throws -> CommitSigner {
        func refuse(_ signer: String, _ change: String?, _ reason: String) -> ConcordError {
            .unauthorizedCommit(commit: commit.id.short, signer: signer, change: change, reason: reason)
        }
        do {
            // Rule 1: a good signature by an active member of the parent (the root: an Admin of its own tree).
            let key: SSHPublicKey
            switch signature {
            case .unsigned:
                throw refuse(commit.author.name, nil, "it is not signed; every commit must be signed with a member's device key")
            case .bad(let error):
                throw refuse(commit.author.name, nil, "its signature does not verify (\(error.localizedDescription))")
            case .good(let signer):
                key = signer
            }
            let parentTrees = try commit.parents.map { try commitTrees[$0] ?? repository.commit($0).tree }
            // Rule 3: a merge is judged by what merging its parents must give, never by the parent its
            // signer put first (they chose it). Concord never writes more than two parents.
            // How a refusal names the signer: as the first parent's membership does (nil: no one there).
            func label(in tree: ObjectID?) throws -> String? {
                guard let tree, let holder = try membership(at: tree).holders(of: key).first else { return nil }
                return "\(holder.member.name)@\(holder.device)"
            }
            guard commit.parents.count <= 2 else {
                throw refuse(try label(in: parentTrees.first) ?? commit.author.name, nil, "it merges \(commit.parents.count) parents; "
                             + "a merge commit has two (merge with 'concord sync' or 'concord merge')")
            }
            // An invitation admits once: no merge brings two acceptances of it together (whoever signs it).
            if commit.parents.count == 2,
               let twice = try MembershipResolution.admittedTwice(in: repository, ours: commit.parents[0], theirs: commit.parents[1])
                   .first(where: \.wasInvited)?.member {
                throw refuse(try label(in: parentTrees[0]) ?? label(in: parentTrees[1]) ?? commit.author.name, ProfilePaths.member(twice.name),
                             "it merges two acceptances of the invitation for \(twice.name), with different keys; an invitation admits once: "
                             + "the acceptance that reached the remote first stands, and the other device asks \(twice.addedBy) for a new invitation")
            }
            let policy = commit.parents.count == 2
                ? try PolicyMerge.tree(in: repository, ours: commit.parents[0], theirs: commit.parents[1], candidate: commit.tree) : nil
            let decided = if let policy {
                // Its signer must be active, with this key, in the MERGED membership of its parents: the
                // policy merge's, where a revocation on either side wins and membership changes resting on
                // a member revoked concurrently fall (`MembershipResolution`).
                AccessRule.signer(key, in: try membership(at: policy))
            } else if let parentTree = parentTrees.first {
                AccessRule.signer(key, in: try membership(at: parentTree))
            } else {
                AccessRule.rootSigner(key, in: try membership(at: commit.tree))
            }
            let signer: CommitSigner
            switch decided {
            case .failure(let refusal):
                // The one commit an invited member signs: their acceptance (rule 1's exception).
                if let accepted = try acceptance(commit, changes: changes, key: key, parentTree: parentTrees.first) {
                    try checkKeysStayWithTheirHolders(commit, changes: changes, parentTrees: parentTrees, signer: accepted)
                    try checkKeyProofs(commit, changes: changes, parentTrees: parentTrees, signer: accepted, judged: accepted.member)
                    return accepted
                }
                if let policy {
                    // Named as a parent knows them: a member whose admission fell has no key left in the merge.
                    var name = try membership(at: policy).holders(of: key).first?.member.name
                    var signer = refusal.signer
                    for tree in parentTrees where name == nil {
                        if let known = try label(in: tree) {
                            signer = known
                            name = try membership(at: tree).holders(of: key).first?.member.name
                        }
                    }
                    let status = try name.flatMap { try membership(at: policy).members[$0]?.status.rawValue } ?? "not a member"
                    let who = name.map { "\($0) is \(status)" } ?? "no member holds its key"
                    throw refuse(signer, nil, who + " in the merged membership of the parents it merges")
                }
                throw refuse(refusal.signer, nil, refusal.reason)
            case .success(let found): signer = found
            }
            // Whom the commit is judged as: its signer, or the member acting on the signer's device.
            var judged = try actingMember(commit, changes: changes, signer: signer, parentTrees: parentTrees, refuse: refuse)
            try checkInvitationUses(commit, changes: changes, signer: signer)
            guard let parentTree = parentTrees.first else { return signer }
            // The changes judged, and the kinds tables they are judged under: a commit's own changes
            // under its parent's kinds; a merge's differences from the policy merge under the merged
            // kinds AND every parent's (a path must be writable under each).
            var differences = changes
            var kindsTables = [try kindsTable(at: parentTree)]
            if let policy {
                let merged = signer.member
                if policy == commit.tree { return signer }
                // Where it differs, the signer is judged with the LOWEST role they hold in the merged
                // membership and in each parent, and must be active in each (Guix's intersection):
                // a role held only on a side someone has since demoted them on gives nothing.
                judged = merged
                for tree in parentTrees {
                    guard let there = try membership(at: tree).members[merged.name], there.status == .active else {
                        throw refuse(signer.label, nil, "its tree differs from the policy merge of its parents, and \(merged.name) is not an "
                                     + "active member in both of them: merge with 'concord sync' or 'concord merge'")
                    }
                    judged.role = min(judged.role, there.role)
                }
                differences = try repository.treeChanges(from: policy, to: commit.tree)
                kindsTables = try ([policy] + parentTrees).map(kindsTable(at:))
                // Membership is the replay of the history's own membership commits (`MembershipResolution`),
                // which a merge's own changes are not: a merge changes no member or invitation file.
                if let change = differences.first(where: { MembershipResolution.isAuthority($0.path) }) {
                    throw refuse(signer.label, String(decoding: change.path, as: UTF8.self),
                                 "a merge changes member and invitation files only as merging its parents does; "
                                 + "make a membership change in a commit of its own (merge with 'concord sync' or 'concord merge')")
                }
            }
            // Rule 2 for each change, under every kinds table that applies.
            let ownFile = ProfilePaths.member(judged.name)
            for change in differences {
                let path = String(decoding: change.path, as: UTF8.self)
                var files: (before: [UInt8]?, after: [UInt8]?)?
                if path == ownFile { files = (try bytes(of: change.old), try bytes(of: change.new)) }
                for kinds in kindsTables {
                    if let reason = AccessRule.mayChange(path, by: judged, kinds: kinds, ownMemberFile: files) {
                        throw refuse(signer.label, Self.label(path, kinds: kinds), reason)
                    }
                }
                // A log only grows, and what anyone adds to it (Admins too) is theirs: the acting member's.
                if case .success(.logDay) = ProfilePathRules.classify(change.path, kinds: kindsTables[0]),
                   let problem = AccessRule.logAppendProblem(before: try bytes(of: change.old) ?? [], after: try bytes(of: change.new),
                                                             by: judged) {
                    throw refuse(signer.label, Self.label(path, kinds: kindsTables[0]), problem)
                }
            }
            // Rule 5, once the role allowed the change: no key moves to another member.
            try checkKeysStayWithTheirHolders(commit, changes: differences, parentTrees: parentTrees, signer: signer)
            try checkKeyProofs(commit, changes: differences, parentTrees: parentTrees, signer: signer, judged: judged)
            try checkAnAdminStays(commit, changes: differences, parentTree: parentTree, signer: signer)
            return signer
        } catch let error as GitError {
            throw refuse(commit.author.name, nil, "it cannot be read (\(error.message))")
        }
    }

    /// The member `commit` is judged as. Its signer, unless its `Concord-Actor` trailer names another
    /// member: a caregiver acting on the signer's device (`concord switch`). Then that member must
    /// be active in the parent's membership, the commit must have one parent and change records
    /// and log files only (never membership, kinds or settings documents), and it is judged as the
    /// acting member with the LOWER of the two roles: a switch never gives a device more than its
    /// owner may do, nor the acting member more than theirs. Log entries it adds must be the acting
    /// member's.
    private func actingMember(_ commit: Commit, changes: [TreeChange], signer: CommitSigner, parentTrees: [ObjectID],
                              refuse: (String, String?, String) -> ConcordError) throws -> Member {
        let trailers = CommitTrailers(message: commit.message)
        guard trailers.actorCount <= 1 else {
            throw refuse(signer.label, nil, "it has \(trailers.actorCount) Concord-Actor trailers: a commit names one acting member")
        }
        guard let actor = trailers.actor, actor != signer.member.name else { return signer.member }
        guard commit.parents.count == 1, let parentTree = parentTrees.first else {
            throw refuse(signer.label, nil, "its Concord-Actor trailer names \(actor), but \(signer.member.name)'s key signed it, and a commit "
                         + "for a member acting on another's device has exactly one parent")
        }
        guard var acting = try membership(at: parentTree).members[actor], acting.status == .active else {
            throw refuse(signer.label, nil, "its Concord-Actor trailer names \(actor), who is not an active member, but \(signer.member.name)'s key signed it")
        }
        let kinds = try kindsTable(at: parentTree)
        for change in changes {
            switch ProfilePathRules.classify(change.path, kinds: kinds) {
            case .success(.record), .success(.logDay): continue
            default:
                let path = String(decoding: change.path, as: UTF8.self)
                throw refuse(signer.label, Self.label(path, kinds: kinds),
                             "acting for \(actor) on \(signer.member.name)'s device, a commit writes records and logs only; "
                             + "membership and settings documents are changed by a member as themselves")
            }
        }
        acting.role = min(acting.role, signer.member.role)
        return acting
    }

    /// `commit` as the acceptance of an invitation (`Acceptance`): one parent, one changed path,
    /// the accepting member's own file, changed as an acceptance may change it and signed by the
    /// key it binds. The signer, or nil when it is not one.
    ///
    /// Joining by an open invitation adds the member file instead (`Acceptance.openProblem`); a
    /// commit that adds a member file naming an open invitation and holding the signer's key is
    /// refused with what is wrong with it.
    private func acceptance(_ commit: Commit, changes: [TreeChange], key: SSHPublicKey, parentTree: ObjectID?) throws -> CommitSigner? {
        guard let parentTree, commit.parents.count == 1, changes.count == 1 else { return nil }
        let path = String(decoding: changes[0].path, as: UTF8.self)
        guard case .success(.member(let name)) = ProfilePathRules.classify(changes[0].path, kinds: try kindsTable(at: parentTree)),
              let bytes = try bytes(of: changes[0].new), let after = try? Member.decode(bytes, path: path), after.name == name else { return nil }
        let membership = try membership(at: parentTree)
        if let before = membership.members[name] {
            guard Acceptance.problem(before: before, after: after, signer: key, root: try root(of: commit).hex) == nil else { return nil }
        } else {
            guard changes[0].old == nil, let id = after.invitation, after.keys.contains(where: { $0.publicKey == key }) else { return nil }
            let signer = "\(name)@\(after.keys.first { $0.publicKey == key }?.device ?? "?")"
            guard let invitation = try openInvitation(id, at: parentTree) else {
                throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer, change: path,
                                                      reason: "it joins by open invitation \(id), which the profile before it does not hold")
            }
            let used = invitation.used(by: membership.members.values)
            if let problem = Acceptance.openProblem(invitation: invitation, used: used, member: after, signer: key, root: try root(of: commit).hex) {
                throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer, change: path, reason: problem)
            }
        }
        return CommitSigner(member: after, device: after.keys[0].device)
    }

    /// A key belongs to one member (rule 5 of docs/security.md): a commit that changes member files
    /// may not give a key another member holds — in the commit's own tree or in any parent's
    /// membership, active, invited or revoked — to a different member. (Otherwise a Viewer who lists
    /// an Admin's public key as their own device makes every later commit by that Admin theirs.)
    private func checkKeysStayWithTheirHolders(_ commit: Commit, changes: [TreeChange], parentTrees: [ObjectID],
                                               signer: CommitSigner) throws {
        let prefix = Array((ProfilePaths.membersDirectory + "/").utf8)
        let changed = changes.filter { $0.new != nil && $0.path.starts(with: prefix) }
        guard !changed.isEmpty else { return }
        let after = try membership(at: commit.tree)
        let memberships = try [after] + parentTrees.map(membership(at:))
        for change in changed {
            guard case .success(.member(let name)) = ProfilePathRules.classify(change.path, kinds: .empty),
                  let member = after.members[name] else { continue }
            for key in member.keys {
                for membership in memberships {
                    if let other = membership.holders(of: key.publicKey).first(where: { $0.member.name != name }) {
                        throw ConcordError.unauthorizedCommit(
                            commit: commit.id.short, signer: signer.label, change: String(decoding: change.path, as: UTF8.self),
                            reason: "it gives \(name) the key of \(other.member.name)'s device \(other.device) "
                                + "(\(key.publicKey.fingerprint)); a key belongs to one member")
                    }
                }
            }
        }
    }

    /// A profile never ends with no active Admin: a commit that changes member files (an Admin's last
    /// revocation, demotion or departure) may not leave none where its parent had one. (Concurrent
    /// departures of the last Admins are each valid alone; their merge keeps the most senior one.)
    private func checkAnAdminStays(_ commit: Commit, changes: [TreeChange], parentTree: ObjectID, signer: CommitSigner) throws {
        guard changes.contains(where: { MembershipResolution.isAuthority($0.path) }) else { return }
        func hasAdmin(_ tree: ObjectID) throws -> Bool {
            try membership(at: tree).members.values.contains { $0.status == .active && $0.role == .admin }
        }
        guard try !hasAdmin(commit.tree), try hasAdmin(parentTree) else { return }
        throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer.label, change: ProfilePaths.membersDirectory,
                                              reason: "it leaves the profile with no active Admin; make another member an Admin first")
    }

    /// Only its holder adds a key (docs/security.md, rule 5): from format 5 on (the parent's
    /// `profile.json`; for a merge, either parent's), each member file `changes` writes may hold
    /// a key its old version (`change.old`: the parent's, or the policy merge's for a merge) did not
    /// hold with the same proof only with that key's proof for this profile and member
    /// (`KeyProof.unproven`), unless `judged` is an active Admin writing another member's file.
    private func checkKeyProofs(_ commit: Commit, changes: [TreeChange], parentTrees: [ObjectID], signer: CommitSigner,
                                judged: Member) throws {
        let prefix = Array((ProfilePaths.membersDirectory + "/").utf8)
        let changed = changes.filter { $0.new != nil && $0.path.starts(with: prefix) }
        guard !changed.isEmpty else { return }
        guard try parentTrees.contains(where: { (try profileInfo(at: $0)?.formatVersion ?? 0) >= KeyProof.firstFormat }),
              let profileID = try profileInfo(at: commit.tree)?.id else { return }
        for change in changed {
            let path = String(decoding: change.path, as: UTF8.self)
            guard case .success(.member(let name)) = ProfilePathRules.classify(change.path, kinds: .empty),
                  let written = try bytes(of: change.new), let after = try? Member.decode(written, path: path), after.name == name else { continue }
            let before = try bytes(of: change.old).flatMap { try? Member.decode($0, path: path) }
            if let (key, problem) = KeyProof.unproven(before: before, after: after, writer: judged, profileID: profileID) {
                throw ConcordError.unauthorizedCommit(
                    commit: commit.id.short, signer: signer.label, change: path,
                    reason: "it adds device \(key.device)'s key (\(key.publicKey.fingerprint)) to \(name), and \(problem); a key enters a "
                        + "member file only with its holder's proof of possession (an Admin may vouch for another member's key)")
            }
        }
    }

    /// `.concord/profile.json` as tree `tree` holds it; nil when it holds none that reads.
    private func profileInfo(at tree: ObjectID) throws -> ProfileInfo? {
        guard let entry = try repository.entry(at: ProfilePaths.profile, inTree: tree), entry.kind == .blob,
              let bytes = try bytes(of: .file(entry.id)) else { return nil }
        return try? ProfileInfo.decode(bytes)
    }

    /// Open invitations are bounded on every commit, merges included: a tree holding more members who
    /// joined by an open invitation than it has uses, or members naming one it does not hold, is
    /// refused. (Two acceptances racing for the last place each pass on their own; their merge does not.)
    private func checkInvitationUses(_ commit: Commit, changes: [TreeChange], signer: CommitSigner) throws {
        let prefix = Array((ProfilePaths.membersDirectory + "/").utf8)
        guard changes.contains(where: { $0.path.starts(with: prefix) }) else { return }
        var joined = [String: Int]()
        for member in try membership(at: commit.tree).members.values {
            if let id = member.invitation { joined[id, default: 0] += 1 }
        }
        for (id, count) in joined.sorted(by: { $0.key < $1.key }) {
            let path = ProfilePaths.invitation(id)
            guard let invitation = try openInvitation(id, at: commit.tree) else {
                throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer.label, change: path,
                                                      reason: "members name open invitation \(id), which the profile does not hold")
            }
            if count > invitation.uses {
                throw ConcordError.unauthorizedCommit(commit: commit.id.short, signer: signer.label, change: path,
                                                      reason: "open invitation \(id) admits \(invitation.uses) members and this commit makes it \(count)")
            }
        }
    }

    /// Open invitation `id` as tree `tree` holds it (nil when it holds none that reads).
    private func openInvitation(_ id: String, at tree: ObjectID) throws -> OpenInvitation? {
        let path = ProfilePaths.invitation(id)
        guard let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob,
              let bytes = try bytes(of: .file(entry.id)) else { return nil }
        return try? OpenInvitation.decode(bytes, path: path)
    }

    /// The profile's first commit, found from `commit` by first parents (once).
    private func root(of commit: Commit) throws -> ObjectID {
        if let rootID { return rootID }
        let root = try repository.rootCommit(of: commit.id)
        rootID = root
        return root
    }

    /// The membership in tree `tree`'s `.concord/members/` (kept by the members tree's id).
    private func membership(at tree: ObjectID) throws -> Membership {
        try Self.membership(in: repository, tree: tree)
    }

    /// The membership in tree `tree`'s `.concord/members/` of `repository`: what the access rule
    /// reads at a parent, and what a concord server reads at its main to let a key in.
    static func membership(in repository: Repository, tree: ObjectID) throws -> Membership {
        guard let directory = try repository.entry(at: ProfilePaths.membersDirectory, inTree: tree), directory.kind == .tree else {
            return noMembers
        }
        return try membershipMemo.value(directory.id) { try membership(in: repository, tree: tree, directory: directory.id) }
    }

    /// Memberships by the id of their members directory: a merge's check reads its parents' and
    /// their merge base's, and each is most often the one the commit before it had.
    private static let membershipMemo = ContentMemo<ObjectID, Membership>(limit: 1_024)
    /// Member files by blob id (nil: it does not read): a new members directory most often
    /// differs from one already read by one file.
    private static let memberFiles = ContentMemo<ObjectID, Member?>(limit: 65_536)

    private static func membership(in repository: Repository, tree: ObjectID, directory: ObjectID) throws -> Membership {
        var members = [Member]()
        for entry in try repository.entries(inDirectory: ProfilePaths.membersDirectory, ofTree: tree)
        where entry.kind == .blob && entry.name.hasSuffix(".json") {
            let path = ProfilePaths.membersDirectory + "/" + entry.name
            // A member file that does not read, or names someone else, gives its keys to no one.
            guard let member = try memberFiles.value(entry.id, { try bytes(of: .file(entry.id), in: repository).flatMap { try? Member.decode($0, path: path) } }),
                  ProfilePaths.member(member.name) == path else { continue }
            members.append(member)
        }
        return Membership(members)
    }

    /// `membership(in:tree:)` with the open invitations of `tree`'s `.concord/invitations/` (those that read).
    static func membershipWithInvitations(in repository: Repository, tree: ObjectID) throws -> Membership {
        var membership = try membership(in: repository, tree: tree)
        guard let directory = try repository.entry(at: ProfilePaths.invitationsDirectory, inTree: tree), directory.kind == .tree else {
            return membership
        }
        for entry in try repository.entries(inDirectory: ProfilePaths.invitationsDirectory, ofTree: tree)
        where entry.kind == .blob && entry.name.hasSuffix(".json") {
            let path = ProfilePaths.invitationsDirectory + "/" + entry.name
            guard let bytes = try bytes(of: .file(entry.id), in: repository), let invitation = try? OpenInvitation.decode(bytes, path: path),
                  ProfilePaths.invitation(invitation.id) == path else { continue }
            membership.openInvitations.append(invitation)
        }
        return membership
    }

    /// The kinds table in tree `tree` (empty when it has none that reads).
    private func kindsTable(at tree: ObjectID) throws -> KindsTable {
        guard let entry = try repository.entry(at: KindsTable.path, inTree: tree), entry.kind == .blob else { return .empty }
        if let known = kindsTables[entry.id] { return known }
        let table = (try bytes(of: .file(entry.id))).flatMap { try? KindsTable.decode($0) } ?? .empty
        kindsTables[entry.id] = table
        return table
    }

    /// A file's bytes, or nil when it is no file or larger than any profile document may be.
    private func bytes(of value: TreeEntryValue?) throws -> [UInt8]? {
        try Self.bytes(of: value, in: repository)
    }

    private static func bytes(of value: TreeEntryValue?, in repository: Repository) throws -> [UInt8]? {
        guard case .file(let blob)? = value else { return nil }
        let header = try repository.objectHeader(blob)
        guard header.type == .blob, header.size <= ProfilePathRules.maxLogFileBytes else { return nil }
        return try repository.blob(blob)
    }

    /// How a refusal names a changed path: `kind/id` for a record, the path otherwise.
    static func label(_ path: String, kinds: KindsTable) -> String {
        if case .success(.record(let kind, let id)) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) { return "\(kind.name)/\(id)" }
        return path
    }
}

/// The signature checks of a list of commits, verified ahead of the checks that need them, on
/// every core. One Ed25519 verification is most of what checking a commit costs. The caller (the one
/// thread that uses the repository) reads a chunk's signatures and hands the chunk to GCD's global
/// queue, keeping up to `ahead` chunks in flight beyond the one it waits for: the cores verify
/// while the caller checks the commits before them, and the signed bytes held stay bounded.
/// (Batches verified one at a time, each spread over the cores, left a core idle while the caller
/// checked: bench row B7.) A chunk whose signatures cannot be read throws when its turn comes, so
/// the first bad commit in order is the one reported.
final class SignaturePipeline {
    private let authorizer: CommitAuthorizer
    private let commits: [Commit]
    private let size: Int
    private let ahead: Int
    private var flights = [Int: Flight]()
    private var started = 0
    private var current: (chunk: Int, checks: [CommitAuthorizer.SignatureCheck])?
    private let memo: SignatureMemo?

    init(authorizer: CommitAuthorizer, commits: [Commit], chunkSize: Int, ahead: Int, memo: SignatureMemo? = nil) {
        self.authorizer = authorizer
        self.commits = commits
        self.size = max(1, chunkSize)
        self.ahead = max(0, ahead)
        self.memo = memo
    }

    /// How many chunks `commits` make.
    var chunkCount: Int { (commits.count + size - 1) / size }

    /// The signature check of `commits[position]`; positions are asked in order.
    func check(at position: Int) throws -> CommitAuthorizer.SignatureCheck {
        let chunk = position / size
        if current?.chunk != chunk {
            while started < chunkCount, started <= chunk + ahead {
                start(started)
                started += 1
            }
            guard let flight = flights.removeValue(forKey: chunk) else { preconditionFailure("signature chunk \(chunk) asked out of order") }
            current = (chunk, try flight.wait())
        }
        return current!.checks[position - chunk * size]
    }

    /// Waits for the chunks still in flight: no verification outlives the check that started it.
    func finish() {
        for flight in flights.values { _ = try? flight.wait() }
        flights.removeAll()
    }

    private func start(_ chunk: Int) {
        let flight = Flight()
        let range = chunk * size..<min(commits.count, (chunk + 1) * size)
        do {
            let signatures = try authorizer.signatures(of: commits[range])
            let memo = memo
            DispatchQueue.global().async(group: flight.group) { flight.checks = .success(CommitAuthorizer.verify(signatures, memo: memo)) }
        } catch {
            flight.checks = .failure(error)
        }
        flights[chunk] = flight
    }

    /// One chunk on its way. Its checks are written by the worker before it leaves the group and
    /// read only after waiting on it.
    private final class Flight: @unchecked Sendable {   // unchecked: `checks` written before `group` is left, read after waiting on it
        let group = DispatchGroup()
        var checks: Result<[CommitAuthorizer.SignatureCheck], any Error> = .success([])

        func wait() throws -> [CommitAuthorizer.SignatureCheck] {
            group.wait()
            return try checks.get()
        }
    }
}
