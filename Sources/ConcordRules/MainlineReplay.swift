import ConcordModel
import ConcordTrust

/// Membership decisions take effect in the order they reached the shared remote: along the remote
/// main's first-parent chain, the **mainline** (docs/security.md, "Decisions in the order they
/// reached the remote"; Matrix's mainline ordering and soft-fail are the model).
///
/// A merge's first parent is the main line it joins; its membership starts as that parent's. The
/// commits it brings in (reachable from its second parent only) are its side: each non-merge one
/// that changes member or invitation files is a decision, replayed in the side's own mainline order
/// (`MembershipResolution.sideOrder`) and judged against the membership replayed so far, which
/// begins as the main line's at the point where the merge joins it — never against the parent its
/// signer had. So a decision made later on a fork from an old commit is judged by what happened on
/// the main line meanwhile: a revoked, demoted or removed signer's decision falls, wherever its fork
/// point, and an Admin's honest offline decision stands if its signer still holds the right when it
/// arrives. No commit id, key or time orders anything.
///
/// Every commit's membership is then a pure function of its first-parent chain: a non-merge
/// commit's is its tree's (judged against its parent's by the validity rule), a merge's is this
/// replay's, from its first parent's.
extension MembershipResolution {
    /// A decision of the side: a non-merge commit's change to member and invitation files.
    package struct SideDecision: Sendable {
        /// Its commit (hex).
        package let commit: String
        package let change: AuthorityChange

        package init(commit: String, change: AuthorityChange) {
            self.commit = commit
            self.change = change
        }
    }

    /// A side decision that did not stand, and why: it stays in history, and the merge leaves it out.
    package struct FallenDecision: Sendable, Equatable {
        /// Its commit (hex).
        package let commit: String
        /// The member who signed it, as far as anyone can tell (nil: a key nobody holds).
        package let signer: String?
        /// What it did, in a few words (`revocation of jay`, `change of jay's role`, `join as zed`…).
        package let what: String
        /// Why it does not count, as the main line stood when it arrived.
        package let reason: String

        /// The one line its signer's device is told.
        package var line: String {
            "your \(what) (commit \(commit.prefix(7))) was made on a copy older than the main line's and does not count: \(reason)"
        }
    }

    /// The outcome of replaying a merge's side onto its main line.
    package struct MainlineOutcome: Sendable {
        /// The member and invitation files the merge holds (path → bytes).
        package let state: [String: [UInt8]]
        /// The side's decisions that fell, in replay order.
        package let fallen: [FallenDecision]
        /// The member and invitation files each decision (by commit, hex) touched, as it left them
        /// (nil: absent), whether it stood or fell: applied in turn to the main line's files, what a
        /// side commit after it, and before the next, lands on. (Only those files: a copy of every
        /// file per decision would cost decisions × members.)
        package var changed: [String: [String: [UInt8]?]] = [:]
    }

    /// Replays `side` (the merge's side decisions, in side order) onto `mainline` (the member and
    /// invitation files of the merge's first parent). `proofsFor`: the profile's id when the format
    /// where the merge joins the main line requires keys' proofs (`KeyProof.firstFormat`), else nil.
    package static func replayOnMainline(_ mainline: [String: [UInt8]], side: [SideDecision], proofsFor profileID: String? = nil,
                                         files: MemberFileMemo = MemberFileMemo()) -> MainlineOutcome {
        let replay = Replay(files: files)
        var state = mainline
        var fallen = [FallenDecision]()
        var changed = [String: [String: [UInt8]?]]()
        for decision in side {
            defer { changed[decision.commit] = Dictionary(uniqueKeysWithValues: decision.change.files.keys.map { ($0, state[$0]) }) }
            switch replay.judge(decision.change, state: state) {
            case .falls(let signer, let reason):
                fallen.append(FallenDecision(commit: decision.commit, signer: signer, what: replay.describe(decision.change), reason: reason))
            case .stands(let admission):
                let before = state
                for (path, change) in decision.change.files.sorted(by: { $0.key < $1.key }) {
                    state[path] = admission ? (change.after ?? state[path]) : applied(change, to: state[path], path: path)
                }
                // Rule 5 where it joins: the keys it adds are no one else's, and proven as the format there requires.
                let writer = decision.change.signer.flatMap { replay.activeHolder(of: $0, in: members(in: before, files: files)) }
                if let problem = replay.keyProblem(decision.change, before: before, after: state, writer: writer, proofsFor: profileID) {
                    state = before
                    fallen.append(FallenDecision(commit: decision.commit, signer: writer?.name, what: replay.describe(decision.change), reason: problem))
                    continue
                }
                // An Admin stays: a decision that would leave the profile with none falls.
                if replay.hasActiveAdmin(before), !replay.hasActiveAdmin(state) {
                    state = before
                    let signer = decision.change.signer.flatMap { replay.activeHolder(of: $0, in: members(in: before, files: files)) }?.name
                    fallen.append(FallenDecision(commit: decision.commit, signer: signer, what: replay.describe(decision.change),
                                                 reason: "it would leave the profile with no active Admin"))
                }
            }
        }
        var outcome = MainlineOutcome(state: state, fallen: fallen)
        outcome.changed = changed
        return outcome
    }

    /// One replay's judging of decisions, reading member files through `files` (decoded once by their bytes).
    private struct Replay {
        let files: MemberFileMemo

        /// Why `change`, applied (`before` → `after`, the replayed files), breaks rule 5 where it joins the
        /// main line; nil when it does not. A key it adds to a member file (one the member did not hold in
        /// `before`) that another member holds in `after`, whatever their status, was given away; and
        /// with `profileID` (the format there requires proofs), a key its own file adds without its
        /// holder's proof, unless `writer` (the signer's member there; nil for an admission) is an active
        /// Admin vouching for another member's (`KeyProof.unproven`, judged as the commit's own check
        /// judges it, against the file's version at the commit's parent).
        func keyProblem(_ change: AuthorityChange, before: [String: [UInt8]], after: [String: [UInt8]], writer: Member?,
                                       proofsFor profileID: String?) -> String? {
            let now = MembershipResolution.members(in: after, files: files), was = MembershipResolution.members(in: before, files: files)
            for (path, file) in change.files.sorted(by: { $0.key < $1.key }) {
                guard case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty), let member = now[name] else { continue }
                for key in member.keys where was[name]?.keys.contains(where: { $0.publicKey == key.publicKey }) != true {
                    let holders = now.values.filter { $0.name != name && $0.keys.contains { $0.publicKey == key.publicKey } }
                    if let other = holders.min(by: { $0.name < $1.name }) {
                        return "\(other.name) holds the key it gives \(name) (device \(key.device), \(key.publicKey.fingerprint)) on the main line; "
                            + "a key belongs to one member"
                    }
                }
                if let profileID, let written = file.after.flatMap({ files.member($0, path: path) }),
                   let (key, problem) = KeyProof.unproven(before: file.before.flatMap { files.member($0, path: path) }, after: written,
                                                          writer: writer ?? written, profileID: profileID) {
                    return "it adds device \(key.device)'s key (\(key.publicKey.fingerprint)) to \(name), and \(problem); the profile's format "
                        + "where it joins the main line requires a key's proof of possession"
                }
            }
            return nil
        }

        enum Verdict {
            /// It stands; `admission`: it admits its own signer (the file is replaced, never merged).
            case stands(admission: Bool)
            case falls(signer: String?, reason: String)
        }

        /// Whether `change` stands against the membership `state` replayed so far.
        func judge(_ change: AuthorityChange, state: [String: [UInt8]]) -> Verdict {
            let membership = MembershipResolution.members(in: state, files: files)
            guard let key = change.signer else { return .falls(signer: nil, reason: "its signature does not verify") }
            if let signer = activeHolder(of: key, in: membership) {
                // A change to a file whose own making did not count (an addition that fell) falls with it.
                for (path, file) in change.files.sorted(by: { $0.key < $1.key }) where file.before != nil && state[path] == nil {
                    return .falls(signer: signer.name, reason: "\(label(path)) was never admitted on the main line")
                }
                if signer.role == .admin {
                    // A name (or invitation) is taken once: an Admin's addition of one already there falls.
                    for (path, file) in change.files.sorted(by: { $0.key < $1.key }) where file.before == nil && isTaken(path, in: state) {
                        return .falls(signer: signer.name, reason: "\(label(path)) was already taken on the main line")
                    }
                    return .stands(admission: false)
                }
                // A member's own file: their keys, or leaving (what the validity rule lets a member change there).
                let own = change.files.allSatisfy { path, file in
                    path == ProfilePaths.member(signer.name) && AccessRule.mayChange(path, by: signer, kinds: .empty, ownMemberFile: file) == nil
                }
                return own ? .stands(admission: false)
                    : .falls(signer: signer.name, reason: "\(signer.name) is \(signer.role.rawValue) on the main line, and only Admins change others' membership")
            }
            // Not an active member's key: an admission, or a signer who lost what they had.
            if let admission = admission(change, key: key, state: state, membership: membership) { return admission }
            if let lost = anyHolder(of: key, in: membership) {
                let reason = lost.status == .revoked ? "\(lost.name) had been revoked on the main line before it arrived"
                    : "\(lost.name) is not an active member on the main line"
                return .falls(signer: lost.name, reason: reason)
            }
            let owner = change.files.keys.sorted().lazy.compactMap { path in change.files[path]?.before.flatMap { files.member($0, path: path) } }
                .first { $0.keys.contains { $0.publicKey == key } }
            if let owner {
                return .falls(signer: owner.name, reason: "the key that signed it had been removed from \(owner.name) on the main line before it arrived")
            }
            return .falls(signer: nil, reason: "no member holds the key that signed it on the main line")
        }

        /// `change` judged as an admission signed by `key`: one member file holding the key, added by a
        /// join of an open invitation or accepting a named one; nil when it is none.
        func admission(_ change: AuthorityChange, key: SSHPublicKey, state: [String: [UInt8]], membership: [String: Member]) -> Verdict? {
            guard change.files.count == 1, let (path, file) = change.files.first,
                  case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty),
                  let after = file.after.flatMap({ files.member($0, path: path) }), after.keys.contains(where: { $0.publicKey == key })
            else { return nil }
            if file.before == nil {
                // A join: the name is free, the invitation still open, with a place left.
                guard let id = after.invitation else { return nil }
                if isTaken(path, in: state) { return .falls(signer: name, reason: "the name \(name) was already taken on the main line") }
                guard let bytes = state[ProfilePaths.invitation(id)],
                      let invitation = try? OpenInvitation.decode(bytes, path: ProfilePaths.invitation(id)), !invitation.withdrawn else {
                    return .falls(signer: name, reason: "open invitation \(id) is withdrawn on the main line")
                }
                let taken = membership.values.filter { $0.invitation == id }.count
                guard taken < invitation.uses else {
                    return .falls(signer: name, reason: "all \(invitation.uses) places of open invitation \(id) were taken on the main line")
                }
                return .stands(admission: true)
            }
            // A named invitation: still invited exactly as the acceptance found it (never merged with another).
            guard let before = file.before, files.member(before, path: path)?.status == .invited else { return nil }
            guard state[path] == before else {
                return .falls(signer: name, reason: "the invitation for \(name) had been accepted, changed or revoked on the main line")
            }
            return .stands(admission: true)
        }

        /// What `change` did, in a few words.
        func describe(_ change: AuthorityChange) -> String {
            var parts = [String]()
            for (path, file) in change.files.sorted(by: { $0.key < $1.key }) {
                guard case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty) else {
                    parts.append("change of \(label(path))")
                    continue
                }
                let before = file.before.flatMap { files.member($0, path: path) }
                guard let after = file.after.flatMap({ files.member($0, path: path) }) else { continue }
                if before == nil {
                    parts.append(after.invitation != nil && after.keys.contains { $0.publicKey == change.signer } ? "join as \(name)" : "addition of \(name)")
                } else if before?.status == .invited, after.status == .active {
                    parts.append("acceptance as \(name)")
                } else if before?.status != .revoked, after.status == .revoked {
                    parts.append(after.revokedBy == name ? "leaving" : "revocation of \(name)")
                } else if before?.role != after.role {
                    parts.append("change of \(name)'s role")
                } else {
                    parts.append("change of \(name)'s membership")
                }
            }
            return parts.isEmpty ? "membership change" : parts.joined(separator: " and ")
        }

        func label(_ path: String) -> String {
            switch ProfilePathRules.classify(Array(path.utf8), kinds: .empty) {
            case .success(.member(let name)): "the name \(name)"
            case .success(.invitation(let id)): "open invitation \(id)"
            default: path
            }
        }

        /// Whether the file at `path` is there in `state`, or, for a member file, another whose name
        /// differs only in case (a name is one member whatever its case).
        func isTaken(_ path: String, in state: [String: [UInt8]]) -> Bool {
            if state[path] != nil { return true }
            guard case .success(.member(let name)) = ProfilePathRules.classify(Array(path.utf8), kinds: .empty) else { return false }
            return MembershipResolution.members(in: state, files: files).keys.contains { $0.lowercased() == name.lowercased() }
        }

        func hasActiveAdmin(_ state: [String: [UInt8]]) -> Bool {
            MembershipResolution.members(in: state, files: files).values.contains { $0.status == .active && $0.role == .admin }
        }

        /// The active member holding `key` (the first by name, should two).
        func activeHolder(of key: SSHPublicKey, in membership: [String: Member]) -> Member? {
            membership.values.filter { $0.status == .active && $0.keys.contains { $0.publicKey == key } }.min { $0.name < $1.name }
        }

        /// Any member holding `key`, whatever their status.
        func anyHolder(of key: SSHPublicKey, in membership: [String: Member]) -> Member? {
            membership.values.filter { $0.keys.contains { $0.publicKey == key } }.min { $0.name < $1.name }
        }
    }
}
