import ConcordGit
import ConcordModel
import ConcordTrust

/// Applies the access rule (`AccessRule`, rules 1–4 of docs/security.md) to commits of a
/// repository: reads each commit's SSHSIG signature and the membership and kinds in force at its
/// parents, and refuses with `ConcordError.unauthorizedCommit`.
///
/// Membership is read from the PARENT's tree, never the working tree or a later commit, so a
/// commit that changes membership is judged by the membership just before it (rule 4). Parsed
/// memberships and kinds tables are kept by the object id of the members tree and the kinds blob:
/// a run of commits that leave both alone costs one Ed25519 verification each plus the tree diff
/// the structural check already made.
final class CommitAuthorizer {
    let repository: Repository
    private var memberships: [ObjectID: Membership] = [:]
    private var kindsTables: [ObjectID: KindsTable] = [:]
    private static let noMembers = Membership([])

    init(repository: Repository) {
        self.repository = repository
    }

    /// What a commit's signature says on its own, before any membership is consulted.
    enum SignatureCheck: Sendable {
        case unsigned
        case bad(TrustError)
        /// A good signature by this key.
        case good(SSHPublicKey)
    }

    /// The signature checks of `commits`, in order. The signatures are read here and verified on
    /// every core: one Ed25519 verification is most of what checking a commit costs.
    func signatureChecks(_ commits: ArraySlice<Commit>) throws -> [SignatureCheck] {
        let signatures = try commits.map { commit -> CommitSignature? in
            do { return try repository.signature(ofCommit: commit.id) } catch let error as GitError {
                throw ConcordError.invalidCommit(commit: commit.id.short, path: nil, reason: "its signature cannot be read (\(error.message))")
            }
        }
        return Parallel.map(signatures, minimumPerShare: 64) { signed -> SignatureCheck in
            guard let signed else { return .unsigned }
            do throws(TrustError) {
                return .good(try SSHSignature.verify(signed.signature, message: signed.signedData))
            } catch {
                return .bad(error)
            }
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
            let parentTrees = try commit.parents.map { try repository.commit($0).tree }
            let decided = if let parentTree = parentTrees.first {
                AccessRule.signer(key, in: try membership(at: parentTree))
            } else {
                AccessRule.rootSigner(key, in: try membership(at: commit.tree))
            }
            let signer: CommitSigner
            switch decided {
            case .failure(let refusal): throw refuse(refusal.signer, nil, refusal.reason)
            case .success(let found): signer = found
            }
            // Rule 3 (for now): a merge's signer must be active in the membership of every parent.
            for (parent, tree) in zip(commit.parents, parentTrees).dropFirst() {
                guard case .success(let other) = AccessRule.signer(key, in: try membership(at: tree)),
                      other.member.name == signer.member.name else {
                    throw refuse(signer.label, nil, "\(signer.member.name) is not an active member in the membership of parent \(parent.short), which it merges")
                }
            }
            guard let parentTree = parentTrees.first, signer.member.role != .admin else { return signer }
            // Rule 2, against the first parent's kinds.
            let kinds = try kindsTable(at: parentTree)
            let ownFile = ProfilePaths.member(signer.member.name)
            for change in changes {
                let path = String(decoding: change.path, as: UTF8.self)
                var files: (before: [UInt8]?, after: [UInt8]?)?
                if path == ownFile { files = (try bytes(of: change.old), try bytes(of: change.new)) }
                guard let reason = AccessRule.mayChange(path, by: signer.member, kinds: kinds, inMerge: commit.parents.count > 1,
                                                        ownMemberFile: files) else { continue }
                // A merge may bring in what another parent changed, or what the policies make of both sides.
                if try isPolicyMerge(commit, path: path, result: change.new) { continue }
                throw refuse(signer.label, Self.label(path, kinds: kinds), reason)
            }
            return signer
        } catch let error as GitError {
            throw refuse(commit.author.name, nil, "it cannot be read (\(error.message))")
        }
    }

    /// The membership in tree `tree`'s `.concord/members/`.
    private func membership(at tree: ObjectID) throws -> Membership {
        guard let directory = try repository.entry(at: ProfilePaths.membersDirectory, inTree: tree), directory.kind == .tree else {
            return Self.noMembers
        }
        if let known = memberships[directory.id] { return known }
        var members = [Member]()
        for entry in try repository.entries(inDirectory: ProfilePaths.membersDirectory, ofTree: tree)
        where entry.kind == .blob && entry.name.hasSuffix(".json") {
            let path = ProfilePaths.membersDirectory + "/" + entry.name
            // A member file that does not read, or names someone else, gives its keys to no one.
            guard let bytes = try bytes(of: .file(entry.id)), let member = try? Member.decode(bytes, path: path),
                  ProfilePaths.member(member.name) == path else { continue }
            members.append(member)
        }
        let membership = Membership(members)
        memberships[directory.id] = membership
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
        guard case .file(let blob)? = value else { return nil }
        let header = try repository.objectHeader(blob)
        guard header.type == .blob, header.size <= ProfilePathRules.maxLogFileBytes else { return nil }
        return try repository.blob(blob)
    }

    /// Whether `path` holds in a two-parent merge exactly what merging its parents gives: the
    /// other side's version where only that side changed it since the merge base, or the merge
    /// policy's result (under the merged kinds) where both did.
    private func isPolicyMerge(_ commit: Commit, path: String, result: TreeEntryValue?) throws -> Bool {
        guard commit.parents.count == 2, let base = try repository.mergeBase(commit.parents[0], commit.parents[1]) else { return false }
        let trees = try [base, commit.parents[0], commit.parents[1]].map { try repository.commit($0).tree }
        let sides = try trees.map { try repository.entry(at: path, inTree: $0).map { TreeEntryValue.file($0.id) } }
        let (ancestor, ours, theirs) = (sides[0], sides[1], sides[2])
        if ours == ancestor { return result == theirs }
        if theirs == ancestor || ours == theirs { return result == ours }
        guard let ours = try bytes(of: ours), let theirs = try bytes(of: theirs), let result = try bytes(of: result) else { return false }
        let kindsFiles = try trees.map { try repository.entry(at: KindsTable.path, inTree: $0).flatMap { try bytes(of: .file($0.id)) } }
        let planner = MergePlanner(kinds: MergePlanner.mergedKinds(base: kindsFiles[0], ours: kindsFiles[1], theirs: kindsFiles[2]))
        guard case .merged(let merged, _)? = planner.outcome(path: path, base: try bytes(of: ancestor), ours: ours, theirs: theirs) else {
            return false
        }
        return merged == result
    }

    /// How a refusal names a changed path: `kind/id` for a record, the path otherwise.
    static func label(_ path: String, kinds: KindsTable) -> String {
        if case .success(.record(let kind, let id)) = ProfilePathRules.classify(Array(path.utf8), kinds: kinds) { return "\(kind.name)/\(id)" }
        return path
    }
}
