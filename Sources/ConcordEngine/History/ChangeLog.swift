import ConcordGit
import ConcordModel
import Foundation

/// What changed between two commits, as much as an observer needs to know whether to read again:
/// the kinds whose files changed, and whether anything else did (members, kinds, the profile's description).
package struct ChangedKinds: Sendable, Equatable {
    /// The record and log kinds some file of which differs.
    var kinds: Set<String> = []
    /// Whether a file that belongs to no kind differs.
    package var other = false

    package init(kinds: Set<String> = [], other: Bool = false) {
        self.kinds = kinds
        self.other = other
    }

    /// Nothing differs.
    var isEmpty: Bool { kinds.isEmpty && !other }

    /// Whether an observer of `observed` (nil: any change) is concerned.
    package func concerns(_ observed: Set<String>?) -> Bool {
        guard let observed else { return !isEmpty }
        return !observed.isDisjoint(with: kinds)
    }
}

/// Kinds tables read from commits' trees, kept by the blob id of `.concord/kinds.json`: a walk
/// along a history reads each version of the table once.
package struct KindsTables {
    private var tables = [ObjectID: KindsTable]()

    package init() {}

    /// The table `tree` holds, or `fallback` when it holds none that decodes.
    package mutating func table(in tree: ObjectID, repository: Repository, fallback: KindsTable) throws -> KindsTable {
        guard let entry = try repository.entry(at: KindsTable.path, inTree: tree), entry.kind == .blob else { return fallback }
        if let known = tables[entry.id] { return known }
        let table = (try? KindsTable.decode(try repository.blob(entry.id))) ?? fallback
        tables[entry.id] = table
        return table
    }
}

/// The history as observation and the change feed read it: where main is, what moved between two
/// commits, and the first-parent chain from a commit an app last saw to main.
extension History {
    /// The commit main is at (HEAD); nil before the first commit.
    package func head() throws -> ObjectID? {
        try gitCall { try repository.resolveReference("HEAD") }
    }

    /// The members' keys at each commit, read as a walk needs them (to name who signed a commit).
    package func memberKeys() -> MemberKeysAtCommit {
        MemberKeysAtCommit(repository: repository, caches: caches)
    }

    /// Which kinds' files differ between commits `old` (nil: an empty profile) and `new`, by a tree
    /// diff that skips unchanged directories (`Repository.changedFiles`), each path mapped to its
    /// kind by the kinds table of `new` (a kind added meanwhile included).
    package func changedKinds(from old: ObjectID?, to new: ObjectID) throws -> ChangedKinds {
        try gitCall {
            let newTree = try repository.commit(new).tree
            let oldTree = try old.map { try repository.commit($0).tree }
            var tables = KindsTables()
            let kinds = try tables.table(in: newTree, repository: repository, fallback: profile.kinds)
            var changed = ChangedKinds()
            for file in try repository.changedFiles(from: oldTree, to: newTree) {
                if let (kind, _) = kinds.kind(forPath: file.path.string) {
                    changed.kinds.insert(kind.name)
                } else {
                    changed.other = true
                }
            }
            return changed
        }
    }

    /// The commits from `token` up to `head` that this device went through, oldest first, each
    /// with the parent it came from: with no token, main's first-parent chain; with one, the path
    /// from `head` down to it that takes, at each merge, the first parent on the way to the token.
    /// A sync's merge puts the remote's main first and this device's line second (the mainline
    /// rule), so after it the path runs through this device's own commits and the merge, whose
    /// change against that parent is what the sync brought. Nil when `token` is not `head` nor one
    /// of its ancestors (set aside, rewound, or never here).
    package func commitsAfter(_ token: ObjectID?, upTo head: ObjectID) throws -> [(commit: Commit, parent: ObjectID?)]? {
        try gitCall {
            guard let token else { return try chain(from: head) { _ in false }.map { ($0, $0.parents.first) } }
            guard repository.contains(token), try token == head || repository.isAncestor(token, of: head) else { return nil }
            // The commits since the token that reach it, found in one walk (parents before children), so
            // the way down at a merge is a lookup, not an ancestry walk per merge (B14).
            var reaching: [ObjectID: Commit] = [:]
            for commit in try repository.newCommits(from: head, excluding: [token])
            where commit.parents.contains(where: { $0 == token || reaching[$0] != nil }) {
                reaching[commit.id] = commit
            }
            var path = [(commit: Commit, parent: ObjectID?)]()
            var next = head
            while next != token {
                guard let commit = reaching[next] else { break }
                // Of a merge's parents, the first on the way to the token.
                let parent = commit.parents.first { $0 == token || reaching[$0] != nil }
                guard let parent else { break }
                path.append((commit, parent))
                next = parent
            }
            return path.reversed()
        }
    }

    /// The first-parent chain from `head` down to (not including) the first commit `stop` accepts, oldest first.
    private func chain(from head: ObjectID, stop: (ObjectID) throws -> Bool) throws -> [Commit] {
        var out = [Commit]()
        var next: ObjectID? = head
        while let id = next, try !stop(id) {
            let commit = try repository.commit(id)
            out.append(commit)
            next = commit.parents.first
        }
        return out.reversed()
    }
}
