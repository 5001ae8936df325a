import ConcordGit
import ConcordKit
import ConcordModel
import Foundation

/// What a concord server's hooks do with a push (`concord serve --pre-receive` / `--post-receive`).
///
/// Before git moves any ref (`pre-receive`), every update the push asks for must be:
/// - to `refs/heads/main` (no other ref is kept), not its deletion, and a fast-forward of it;
/// - admitted for the pushing key by `ServerAccess` against the main before the push (the key
///   arrives from `concord serve` as `CONCORD_SERVE_KEY`): a pending invitation's key may push only
///   its acceptance (one commit, changing only its member file);
/// - valid, commit by commit: EVERY commit the push brings (not the net change of the push) passes
///   the same check a device applies to what it fetches (`IncomingCheck`: the structural rule and the
///   access rule, each commit against its parent's membership and kinds).
/// The first failure refuses the whole push with one line naming the commit, its signer and the
/// rule; git prints it on the pushing device. The pushed objects wait in git's quarantine
/// (`GIT_QUARANTINE_PATH`), which the check reads through `Repository.addObjectDirectory`.
///
/// After the refs moved (`post-receive`), a push that changed `.concord/members/` records each
/// newly revoked member's view of main (`RevocationView`) and rewrites the profile's lines of the
/// key index, so a revoked key reads nothing newer and writes nothing from its next connection.
public struct PushCheck {
    public let server: ConcordServer
    /// The repository the hook runs in (git's `GIT_DIR`).
    public let repositoryPath: String
    var caches: EngineCaches { server.caches }

    public init(server: ConcordServer, repositoryPath: String) {
        self.server = server
        self.repositoryPath = URL(fileURLWithPath: repositoryPath).standardizedFileURL.path
    }

    /// One line of a hook's standard input: `<old> <new> <ref>` (nil for git's all-zero id).
    public struct Update: Sendable, Equatable {
        public let old: ObjectID?
        public let new: ObjectID?
        public let ref: String

        /// The updates in a hook's standard input.
        public static func parse(_ text: String) throws(ServerRefusal) -> [Update] {
            let zero = String(repeating: "0", count: 40)
            return try text.split(separator: "\n").map { line throws(ServerRefusal) -> Update in
                let fields = line.split(separator: " ")
                guard fields.count == 3, fields[0].count == 40, fields[1].count == 40,
                      let old = ObjectID(hex: String(fields[0])), let new = ObjectID(hex: String(fields[1])) else {
                    throw ServerRefusal("refused: git gave the hook an update it cannot read (\(line))")
                }
                return Update(old: fields[0] == zero ? nil : old, new: fields[1] == zero ? nil : new, ref: String(fields[2]))
            }
        }
    }

    /// The profile's name: the repository's directory without `.git`.
    var profile: String { String(URL(fileURLWithPath: repositoryPath).lastPathComponent.dropLast(4)) }

    /// The pre-receive check of `updates` pushed by the key `key` (`SHA256:…`, nil when the push did
    /// not come through `concord serve`), whose objects wait in `quarantine`. Throws the refusal.
    public func check(_ updates: [Update], key: String?, quarantine: String?, now: Int64) throws(ServerRefusal) {
        for update in updates {
            guard update.ref == "refs/heads/main" else {
                throw ServerRefusal("refused \(update.ref): a concord server keeps refs/heads/main only")
            }
            guard update.new != nil else { throw ServerRefusal("refused deleting main: a profile's history is never deleted") }
        }
        guard let key else { throw ServerRefusal("refused: pushes to this repository come through 'concord serve' (sshd's forced command)") }
        do {
            try checkAll(updates, key: key, quarantine: quarantine, now: now)
        } catch let refusal as ServerRefusal {
            throw refusal
        } catch let error as ConcordError {
            throw ServerRefusal("refused: \(error.parts.problem)")
        } catch let error as GitError {
            throw ServerRefusal("refused: the push cannot be read (\(error.message))")
        } catch {
            throw ServerRefusal("refused: \(error)")
        }
    }

    private func checkAll(_ updates: [Update], key: String, quarantine: String?, now: Int64) throws {
        let repository = try Repository.open(repositoryPath)
        if let quarantine { try repository.addObjectDirectory(quarantine) }
        let current = try repository.resolveReference("refs/heads/main")
        let membership = try current.map { try CommitAuthorizer.membershipWithInvitations(in: repository, tree: try repository.commit($0).tree, caches: caches) }
        let request = ServeRequest(verb: .receive, profile: profile)
        let admission: ServerAccess.Admission
        switch ServerAccess.decide(request, key: key, isAdminKey: server.isAdminKey(key),
                                   profile: membership.map { .present($0) } ?? .absent, now: now) {
        case .failure(let refusal): throw refusal
        case .success(let admitted): admission = admitted
        }
        let profileID = try current.flatMap { try Self.readProfileID(in: repository, at: $0) }
        for update in updates {
            guard let new = update.new else { continue }
            // A push that raced another (`old` is not the main now) is checked all the same; git then
            // refuses its ref update as stale and the device fetches and pushes again.
            if let current, update.old == current, !(try repository.isAncestor(current, of: new)) {
                throw ServerRefusal("refused a non-fast-forward update of main: fetch, merge and push again (history is never rewritten)")
            }
            // Decisions take effect in the order they reached this main: its first-parent line must
            // keep the main it replaces (a merge's first parent is the main it fetched).
            if let current, update.old == current, !(try repository.isOnFirstParentLine(current, of: new)) {
                throw ServerRefusal("refused: main \(current.short) is not on the first-parent line of \(new.short) (a merge that puts "
                                    + "another line first, as plain `git pull` does): run `concord sync`, which merges with the remote's main "
                                    + "first, or `git pull --rebase`, and push again")
            }
            let known = [current, update.old].compactMap { $0 }
            if admission.grant == .invited {
                // An invitation's key pushes one commit, and that commit changes one file: the pending
                // member's own file (a named invitation) or a new member file (an open one); the
                // validity check below then requires it to be a valid acceptance.
                let commits = try repository.newCommits(from: new, excluding: known)
                let changes = try commits.count == 1
                    ? repository.treeChanges(from: commits[0].parents.first.map { try repository.commit($0).tree }, to: commits[0].tree) : []
                if let member = admission.member {
                    let ownFile = ProfilePaths.member(member)
                    guard commits.count == 1, changes.allSatisfy({ $0.path.elementsEqual(ownFile.utf8) }) else {
                        throw ServerRefusal("refused: \(member)'s pending invitation lets this key push its acceptance only "
                                            + "(one commit changing \(ownFile)), and this push brings \(commits.count) commit(s) or other changes")
                    }
                } else {
                    let prefix = Array((ProfilePaths.membersDirectory + "/").utf8)
                    guard commits.count == 1, changes.count == 1, changes[0].old == nil, changes[0].path.starts(with: prefix) else {
                        throw ServerRefusal("refused: an open invitation's key may push one joining member's acceptance only "
                                            + "(one commit adding one member file), and this push brings \(commits.count) commit(s) or other changes")
                    }
                }
            }
            try IncomingCheck(repository: repository, profileID: profileID, caches: caches).verify(tip: new, known: known)
        }
    }

    /// The post-receive step: when `updates` changed the members at main, rewrite this profile's
    /// lines of the key index from the new main.
    public func refreshKeyIndex(_ updates: [Update]) throws {
        let repository = try gitCall { try Repository.open(repositoryPath) }
        try gitCall {
            for update in updates where update.ref == "refs/heads/main" {
                guard let new = update.new else { continue }
                // Members and open invitations both let keys in.
                func access(_ commit: ObjectID) throws -> [ObjectID?] {
                    let tree = try repository.commit(commit).tree
                    return try [ProfilePaths.membersDirectory, ProfilePaths.invitationsDirectory].map { try repository.entry(at: $0, inTree: tree)?.id }
                }
                guard try update.old.map(access) != (try access(new)) else { continue }
                let membership = try CommitAuthorizer.membershipWithInvitations(in: repository, tree: try repository.commit(new).tree, caches: caches)
                // The view first, so a revoked key the index lets in finds it ready; the index is
                // rewritten whether or not that worked (a revoked key without a view is refused).
                let recorded = Result { try RevocationView.record(membership, tip: new, old: update.old, in: repository) }
                try server.keyIndex.update(profile: profile, membership: membership)
                try recorded.get()
            }
        }
    }

    /// The profile id in `.concord/profile.json` at `commit`, or nil when it has none that reads.
    static func readProfileID(in repository: Repository, at commit: ObjectID) throws -> String? {
        guard let entry = try repository.entry(at: ProfilePaths.profile, inTree: try repository.commit(commit).tree), entry.kind == .blob else {
            return nil
        }
        return try? ProfileInfo.decode(try repository.blob(entry.id)).id
    }
}
