import ConcordGit
import ConcordModel
import ConcordRules

/// What the validity rule reads from a repository, as values: memberships, kinds tables, profile
/// documents, open invitations and file bytes at a tree, and the profile's first commit.
extension CommitAuthorizer {
    private static let noMembers = Membership([])

    /// The membership in tree `tree`'s `.concord/members/` (kept by the members tree's id).
    func membership(at tree: ObjectID) throws -> Membership {
        if let known = membershipsAtTree[tree] { return known }
        let membership = try Self.membership(in: repository, tree: tree, caches: caches)
        if membershipsAtTree.count >= Self.treeAnswersLimit { membershipsAtTree.removeAll(keepingCapacity: true) }
        membershipsAtTree[tree] = membership
        return membership
    }

    /// The membership in tree `tree`'s `.concord/members/` of `repository`: what the access rule
    /// reads at a parent, and what a concord server reads at its main to let a key in.
    static func membership(in repository: Repository, tree: ObjectID, caches: EngineCaches) throws -> Membership {
        guard let directory = try repository.entry(at: ProfilePaths.membersDirectory, inTree: tree), directory.kind == .tree else {
            return noMembers
        }
        return try caches.memberships.value(directory.id) { try membership(in: repository, tree: tree, directory: directory.id, caches: caches) }
    }

    private static func membership(in repository: Repository, tree: ObjectID, directory: ObjectID, caches: EngineCaches) throws -> Membership {
        var members = [Member]()
        for entry in try repository.entries(inDirectory: ProfilePaths.membersDirectory, ofTree: tree)
        where entry.kind == .blob && entry.name.hasSuffix(".json") {
            let path = ProfilePaths.membersDirectory + "/" + entry.name
            // A member file that does not read, or names someone else, gives its keys to no one.
            guard let member = try caches.memberBlobs.value(entry.id, { try bytes(of: .file(entry.id), in: repository).flatMap { try? Member.decode($0, path: path) } }),
                  ProfilePaths.member(member.name) == path else { continue }
            members.append(member)
        }
        return Membership(members)
    }

    /// `membership(in:tree:)` with the open invitations of `tree`'s `.concord/invitations/` (those that read).
    package static func membershipWithInvitations(in repository: Repository, tree: ObjectID, caches: EngineCaches) throws -> Membership {
        var membership = try membership(in: repository, tree: tree, caches: caches)
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
    func kindsTable(at tree: ObjectID) throws -> KindsTable {
        if let known = kindsTablesAtTree[tree] { return known }
        let table = try kindsTableReading(tree)
        if kindsTablesAtTree.count >= Self.treeAnswersLimit { kindsTablesAtTree.removeAll(keepingCapacity: true) }
        kindsTablesAtTree[tree] = table
        return table
    }

    /// `kindsTable(at:)` read from the tree (decoded once per kinds.json blob).
    private func kindsTableReading(_ tree: ObjectID) throws -> KindsTable {
        guard let entry = try repository.entry(at: KindsTable.path, inTree: tree), entry.kind == .blob else { return .empty }
        if let known = kindsTables[entry.id] { return known }
        let table = (try bytes(of: .file(entry.id))).flatMap { try? KindsTable.decode($0) } ?? .empty
        kindsTables[entry.id] = table
        return table
    }

    /// `.concord/profile.json` as tree `tree` holds it; nil when it holds none that reads.
    func profileInfo(at tree: ObjectID) throws -> ProfileInfo? {
        guard let entry = try repository.entry(at: ProfilePaths.profile, inTree: tree), entry.kind == .blob,
              let bytes = try bytes(of: .file(entry.id)) else { return nil }
        return try? ProfileInfo.decode(bytes)
    }

    /// Open invitation `id` as tree `tree` holds it (nil when it holds none that reads).
    func openInvitation(_ id: String, at tree: ObjectID) throws -> OpenInvitation? {
        let path = ProfilePaths.invitation(id)
        guard let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob,
              let bytes = try bytes(of: .file(entry.id)) else { return nil }
        return try? OpenInvitation.decode(bytes, path: path)
    }

    /// The profile's first commit, found from `commit` by first parents (once).
    func root(of commit: Commit) throws -> ObjectID {
        if let rootID { return rootID }
        let root = try repository.rootCommit(of: commit.id)
        rootID = root
        return root
    }

    /// A file's bytes, or nil when it is no file or larger than any profile document may be.
    func bytes(of value: TreeEntryValue?) throws -> [UInt8]? {
        try Self.bytes(of: value, in: repository)
    }

    private static func bytes(of value: TreeEntryValue?, in repository: Repository) throws -> [UInt8]? {
        guard case .file(let blob)? = value else { return nil }
        let header = try repository.objectHeader(blob)
        guard header.type == .blob, header.size <= ProfilePathRules.maxLogFileBytes else { return nil }
        return try repository.blob(blob)
    }
}
