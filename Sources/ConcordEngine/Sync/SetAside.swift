import ConcordGit
import ConcordModel
import Foundation

/// One of this device's unsent commits that every other device would refuse.
package struct RefusedCommit: Sendable, Equatable {
    /// The commit's short id.
    public let commit: String
    /// Who signed it, as the rule names them ("unsigned", "bob@phone"); nil for a commit refused
    /// only because it is built on `builtOn`.
    public let signer: String?
    /// The rule's one-line reason.
    public let reason: String
    /// The refused commit this one is built on (it goes with it), or nil when it is refused in its own right.
    public let builtOn: String?
}

/// This device's commits a sync would refuse to send to `remote` (`ConcordError.unpublishable`),
/// and the commit main can go back to.
package struct UnpublishableCommits: Sendable, Equatable {
    /// The remote the commits would be refused by.
    public let remote: String
    /// Every unsent commit the rule refuses, oldest first.
    public let refused: [RefusedCommit]
    /// The newest commit on main's first-parent line that the rule accepts (the remote's main at
    /// worst): where `setAside` moves main back to. Short id.
    public let lastPublishable: String
}

/// A file the set-aside commits changed that was not made again, and why; its content stays in the set-aside ref.
package struct KeptAside: Sendable, Equatable {
    /// The file, relative to the profile.
    public let path: String
    /// Why it was not made again.
    public let reason: String
}

/// What `SetAside.perform` did.
package struct SetAsideReport: Sendable, Equatable {
    /// The ref that keeps the refused commits, e.g. `refs/concord/set-aside/20261127T080000Z`.
    public let ref: String
    /// The tip that ref points at (main before), short id.
    public let tip: String
    /// The commits set aside, oldest first.
    public let refused: [RefusedCommit]
    /// Where main went back to (short id).
    public let movedBackTo: String
    /// The records and log entries made again, `kind/id`.
    public let reapplied: [String]
    /// The signed commit that made them again (short id), nil when there was nothing this member may write.
    public let commit: String?
    /// What stays only in `ref`.
    public let keptAside: [KeptAside]
}

/// A device never publishes what it would refuse (`Sync.refuseUnpublishable`); this is the way
/// out of that state without losing anything: find the unsent commits the rule refuses (a
/// `git commit` made with plain git: unsigned, or outside the member's role), keep them under
/// `refs/concord/set-aside/<time>`, move main back to the newest commit the rule accepts, and
/// write again, as one signed commit by this device, the records and log entries those commits
/// changed that this device's member may write. `concord doctor` shows the first, `--fix` does it all.
package struct SetAside {
    let profile: Profile
    let repository: Repository

    /// Where refused commits are kept.
    public static let refPrefix = "refs/concord/set-aside/"

    /// The unsent commits (not in what was last fetched from `remote`) that the rule refuses, or
    /// nil when every one would be accepted (or there are none).
    public func find(remote: String = "origin") throws -> UnpublishableCommits? {
        try examine(remote: remote)?.found
    }

    /// Sets the refused commits aside (see the type): nil when there are none. Refuses, changing
    /// nothing, when the files main's move back would rewrite hold uncommitted edits.
    public func perform(remote: String = "origin", as identity: Identity) throws -> SetAsideReport? {
        let (found, ref, head, last, plan): (UnpublishableCommits, String, ObjectID, ObjectID, [Reapply])
        let examined = try profile.locked { () -> (UnpublishableCommits, String, ObjectID, ObjectID, [Reapply])? in
            guard let examined = try examine(remote: remote) else { return nil }
            let (found, head, last) = examined
            let plan = try self.plan(from: last, to: head, tracking: try gitCall { try repository.resolveReference(Sync.trackingRef(remote)) },
                                     member: try profile.members.acting(identity).member)
            try refuseOverwritingEdits(from: head, to: last)   // before anything is written
            let ref = try keep(head)
            try moveMain(from: head, to: last)
            return (found, ref, head, last, plan)
        }
        guard let examined else { return nil }
        (found, ref, head, last, plan) = examined
        do {
            let done = try reapply(plan, as: identity)
            return SetAsideReport(ref: ref, tip: head.short, refused: found.refused, movedBackTo: last.short, reapplied: done.reapplied,
                                  commit: done.commit, keptAside: done.keptAside)
        } catch {
            // Nothing is lost: the content is in the ref. Said so, with what to do.
            throw ConcordError.io(.write, path: nil, "the refused commits are kept under \(ref) and main is back at \(last.short), but writing their content "
                + "again failed (\(ConcordError.printable((error as? LocalizedError)?.errorDescription ?? "\(error)"))): "
                + "see it with 'git show \(ref)' and write it again with concord")
        }
    }

    // MARK: Steps

    /// The refused commits, main's tip and the commit it can go back to; nil when nothing is refused.
    private func examine(remote: String) throws -> (found: UnpublishableCommits, head: ObjectID, last: ObjectID)? {
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return nil }
        let tracking = try gitCall { try repository.resolveReference(Sync.trackingRef(remote)) }
        let known = tracking.map { [$0] } ?? []
        guard head != tracking, try refusal(of: head, known: known) != nil else { return nil }
        let commits = try gitCall { try repository.newCommits(from: head, excluding: known) }
        var refused = [RefusedCommit]()
        for commit in commits {
            guard let refusal = try refusal(of: commit.id, known: known) else { continue }
            refused.append(refusal.commit == commit.id.short
                ? RefusedCommit(commit: refusal.commit, signer: refusal.signer, reason: refusal.reason, builtOn: nil)
                : RefusedCommit(commit: commit.id.short, signer: nil, reason: "built on \(refusal.commit), which is refused", builtOn: refusal.commit))
        }
        guard let last = try lastPublishable(from: head, tracking: tracking) else {
            throw ConcordError.invalidInput(.historyState, "no commit of this profile's history passes the rule: clone the profile again")
        }
        return (UnpublishableCommits(remote: remote, refused: refused, lastPublishable: last.short), head, last)
    }

    /// Writes again, as one signed commit by `identity`, what `plan` says this member may write:
    /// the `kind/id`s written, the commit (short id, nil when none), and what stays aside.
    private func reapply(_ plan: [Reapply], as identity: Identity) throws -> (reapplied: [String], commit: String?, keptAside: [KeptAside]) {
        // The profile as main now has it (kinds and members as the accepted commit says).
        let restored = try Profile.open(at: profile.root, environment: profile.environment, caches: profile.caches)
        var keptAside = plan.compactMap { if case .keep(let path, let reason) = $0 { KeptAside(path: path, reason: reason) } else { nil } }
        var writable = [Reapply]()
        for item in plan {
            guard let kind = item.kind else { continue }
            do {
                guard let kind = restored.kinds.kind(named: kind) else { throw ConcordError.unknownKind(kind, known: []) }
                try restored.members.authorize(try restored.members.acting(identity), toWrite: kind)
                writable.append(item)
            } catch let error as ConcordError {
                keptAside.append(KeptAside(path: item.path, reason: error.parts.problem))
            }
        }
        let written = try restored.records.write(as: identity) { transaction -> [String] in
            var done = [String]()
            for item in writable {
                switch item {
                case .record(_, let kind, let id, let data?):
                    try transaction.put(kind, id, data: data)
                    done.append("\(kind)/\(id)")
                case .record(_, let kind, let id, nil):
                    if try transaction.record(kind, id).map({ !$0.isDeleted }) == true {
                        try transaction.delete(kind, id)
                        done.append("\(kind)/\(id)")
                    }
                case .entries(_, let kind, let entries):
                    for entry in entries {
                        try transaction.append(kind, data: entry.data, id: entry.id.rawValue)
                        done.append("\(kind)/\(entry.id.rawValue)")
                    }
                case .keep: break
                }
            }
            return done
        }
        return (written.value, written.commit.map { String($0.prefix(7)) }, keptAside)
    }

    /// What the rule says of `tip` on top of `known`: nil when it accepts every new commit, else the first refused one.
    private func refusal(of tip: ObjectID, known: [ObjectID]) throws -> (commit: String, signer: String?, reason: String)? {
        do {
            try IncomingCheck(repository: repository, profileID: profile.info.id, caches: profile.caches).verify(tip: tip, known: known)
            return nil
        } catch let error as ConcordError {
            switch error {
            case .unauthorizedCommit(let commit, let signer, let change, let reason):
                return (commit, ConcordError.printable(signer), ConcordError.printable((change.map { "changes \($0): " } ?? "") + reason))
            case .invalidCommit(let commit, let path, let reason):
                return (commit, nil, ConcordError.printable((path.map { "\($0): " } ?? "") + reason))
            default: throw error
            }
        }
    }

    /// The newest commit on `head`'s first-parent line the rule accepts: one the remote already
    /// has (`tracking` or before it), or one whose every new commit passes.
    private func lastPublishable(from head: ObjectID, tracking: ObjectID?) throws -> ObjectID? {
        var candidate: ObjectID? = head
        while let commit = candidate {
            if let tracking, try commit == tracking || gitCall({ try repository.isAncestor(commit, of: tracking) }) { return commit }
            if try refusal(of: commit, known: tracking.map { [$0] } ?? []) == nil { return commit }
            candidate = try gitCall { try repository.commit(commit).parents.first }
        }
        return nil
    }

    /// One file the refused commits changed, and how it is made again.
    private enum Reapply {
        /// A record as it is at the refused tip (nil data: deleted there).
        case record(path: String, kind: String, id: String, data: [String: JSONValue]?)
        /// The log entries the tip's day file has beyond the accepted commit's, by this device's member.
        case entries(path: String, kind: String, [LogEntry])
        /// Not made again (a profile file, another member's log entries): stays in the set-aside ref only.
        case keep(path: String, reason: String)

        var path: String {
            switch self { case .record(let path, _, _, _), .entries(let path, _, _), .keep(let path, _): path }
        }
        var kind: String? {
            switch self { case .record(_, let kind, _, _), .entries(_, let kind, _): kind; case .keep: nil }
        }
    }

    /// How each file that differs between `last` and `tip` is made again by `member`, with the
    /// kinds `last` has (the records are written under them). A file exactly as the remote's main
    /// (`tracking`) has it came from there (a merge made with plain git): the sync brings it back, unwritten.
    private func plan(from last: ObjectID, to tip: ObjectID, tracking: ObjectID?, member: String) throws -> [Reapply] {
        let (lastTree, tipTree) = try gitCall { (try repository.commit(last).tree, try repository.commit(tip).tree) }
        var files = try gitCall { try repository.changedFiles(from: lastTree, to: tipTree) }
        if let tracking, tracking != last {
            let remoteTree = try gitCall { try repository.commit(tracking).tree }
            let remote = try gitCall { try repository.entries(at: files.map(\.path.string), inTree: remoteTree) }
            files = zip(files, remote).filter { file, entry in file.blob == nil || entry?.id != file.blob }.map(\.0)
        }
        let kinds = try gitCall { try repository.blob(KindsTable.path, atCommit: last) }.flatMap { try? KindsTable.decode($0) } ?? .empty
        return try files.flatMap { file -> [Reapply] in
            let path = file.path.string
            guard let blob = file.blob else { return [.keep(path: path, reason: "removed there; concord never removes a file (deletions are tombstones)")] }
            switch ProfilePathRules.classify(Array(path.utf8), kinds: kinds) {
            case .success(.record(let kind, let id)):
                guard let record = try? Record.decode(try gitCall { try repository.blob(blob) }) else {
                    return [.keep(path: path, reason: "not a readable record")]
                }
                return [.record(path: path, kind: kind.name, id: id, data: record.data)]
            case .success(.logDay(let kind, _)):
                let old = try file.before.map { id in try gitCall { try repository.blob(id) } }
                let before = Set((old.flatMap { try? LogEntry.parseLogFile($0) } ?? []).map(\.id))
                guard let entries = try? LogEntry.parseLogFile(try gitCall { try repository.blob(blob) }) else {
                    return [.keep(path: path, reason: "not a readable log file")]
                }
                let added = entries.filter { !before.contains($0.id) }
                let mine = added.filter { $0.by == member }
                let others = Set(added.map(\.by)).subtracting([member]).sorted()
                return (mine.isEmpty ? [] : [.entries(path: path, kind: kind.name, mine)])
                    + (others.isEmpty ? [] : [.keep(path: path, reason: "log entries by \(ConcordError.printable(others.joined(separator: ", "))), "
                        + "not by \(member): only their own devices can write them")])
            case .success:
                return [.keep(path: path, reason: "a profile file: change members, invitations and kinds with concord's own commands")]
            case .failure:
                return [.keep(path: path, reason: "not a file the profile's format has at \(last.short)")]
            }
        }
    }

    /// Points a new `refs/concord/set-aside/<time>` at `tip`; returns its name.
    private func keep(_ tip: ObjectID) throws -> String {
        let name = try Self.newRef(Self.refPrefix) { name in try gitCall { try repository.resolveReference(name) } != nil }
        try gitCall { try repository.updateReference(name, to: tip, expected: nil, message: "concord: set aside commits the rule refuses") }
        return name
    }

    /// `<prefix><UTC time>Z` (e.g. `20261127T080000Z`), with `-2`, `-3`… when `exists` says it is taken.
    static func newRef(_ prefix: String, exists: (String) throws -> Bool) throws -> String {
        let stamp = prefix + HLClock.formatInstant(ConcordEnvironment.systemClock()).filter { $0.isNumber || $0 == "T" }.prefix(15) + "Z"
        var (name, suffix) = (stamp, 1)
        while try exists(name) {
            suffix += 1
            name = stamp + "-\(suffix)"
        }
        return name
    }

    /// Refuses, as `uncommittedEdits`, when a file moving main from `tip` to `last` would rewrite holds an edit no commit has.
    private func refuseOverwritingEdits(from tip: ObjectID, to last: ObjectID) throws {
        let files = try gitCall { try repository.changedFiles(from: try repository.commit(tip).tree, to: try repository.commit(last).tree) }
        try profile.workingTree.refuseOverwritingLocalEdits(files)
    }

    /// Moves the branch from `tip` back to `last` (compare-and-swap) with the working tree and
    /// index, journaled as a merge's move is; refuses first when a file to rewrite holds uncommitted edits.
    private func moveMain(from tip: ObjectID, to last: ObjectID) throws {
        try gitCall { try repository.holdingIndexLock {
            let branch = try repository.headBranch()
            let newTree = try repository.commit(last).tree
            let files = try repository.changedFiles(from: try repository.commit(tip).tree, to: newTree)
            try profile.workingTree.refuseOverwritingLocalEdits(files)
            let journal = CheckoutJournal(gitDirectory: repository.gitDirectory)
            if !files.isEmpty {
                try journal.record(files.map { CheckoutJournal.Entry(path: $0.path.string, before: $0.before, after: $0.blob) }, durable: false)
            }
            do {
                try repository.updateReference(branch, to: last, expected: tip, message: "concord: set aside commits the rule refuses")
            } catch {
                journal.remove()
                throw error
            }
            do { _ = try profile.workingTree.update(files, to: newTree) } catch {
                throw CommitWriter.unfinished(last, error, moved: true)   // the journal stays for the next command
            }
            journal.remove()
        } }
    }
}
