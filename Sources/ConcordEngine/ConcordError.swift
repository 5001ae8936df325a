import ConcordGit
import ConcordModel
import Foundation

/// Everything the engine refuses or fails at, each with a one-line message that says what went
/// wrong and what to do, in the library's terms; a client adds its own hints (the CLI names its
/// commands, see Sources/concord/ErrorHints.swift).
public enum ConcordError: Error, LocalizedError, Sendable, Equatable {
    /// The directory is not a Concord profile (no `.concord/profile.json`).
    case notAProfile(String)
    /// The directory already holds a git repository or a profile: a new one goes in an empty directory.
    case profileExists(String)
    /// The profile's data format is newer than this build reads: update the app.
    case newerFormat(found: Int, supported: Int)
    /// The profile's data format is older than this build reads: export it with the build that made it.
    case olderFormat(found: Int, oldest: Int)
    /// The profile has no kind of that name; `known` lists those it has.
    case unknownKind(String, known: [String])
    /// Appending to a kind that is not a log (policy `append`): put its records instead.
    case notALogKind(String)
    /// Putting a record into a log kind: append its entries instead.
    case logKindNeedsAppend(String)
    /// Deleting from a log kind: its entries are append-only.
    case cannotRemoveLogEntries(String)
    /// Text that is not a record reference `kind/id`.
    case badReference(String)
    /// No live record of that reference.
    case recordNotFound(String)
    /// The record file at `path` cannot be read as a record (`reason`).
    case corruptRecord(path: String, reason: String)
    /// An argument or a state the call refuses: a code (`InvalidInput.Code`) and a sentence saying
    /// why and what to give instead.
    case invalidInput(InvalidInput)
    /// Text from `source` that is not valid JSON (`detail` says where).
    case invalidJSON(source: String, detail: String)
    /// JSON from `source` that must be an object and is not.
    case notAnObject(source: String)
    /// A record over the 1 MiB limit (`size` bytes).
    case recordTooLarge(String, size: Int)
    /// A file could not be read or written on this device: the operation, the path and why.
    case io(IOFailure)
    /// A libgit2 call failed on this device's repository.
    case git(GitError)
    /// A libgit2 call failed while talking to `remote`.
    case remoteFailed(remote: String, GitError)
    /// `member`'s role in `profile` does not allow `action` (e.g. "writing vocabulary"); `needs` is
    /// the least role that does. `actingOn` names the device's owner when `member` acts on another
    /// member's device (`concord switch`): `role` is then the lower of the two members' roles.
    case notAllowed(member: String, role: Role, action: String, needs: Role, profile: String, actingOn: String? = nil)
    /// `member` is not an active member of `profile`.
    case notAMember(member: String, profile: String)
    /// This device's key is not one of `member`'s keys in `profile`.
    case keyNotRegistered(member: String, fingerprint: String, profile: String)
    /// Another process held the profile's lock for too long; try again.
    case busy(String)
    /// Another process (a plain `git commit` or `git add` in the profile's folder, say) held git's
    /// index lock (the path given, `.git/index.lock`) for longer than a write waits for it;
    /// nothing was removed or written.
    case gitIndexLocked(String)
    /// No profile template of that name.
    case unknownTemplate(String)
    /// The remote could not be reached; local commits are kept.
    /// `localCommits` is nil where there is nothing local to keep (a clone).
    case offline(remote: String, reason: String, localCommits: Int?)
    /// The ssh server's host key is not the one trusted for it (`changed`: it was trusted with another key).
    case untrustedHost(remote: String, host: String, fingerprint: String, changed: Bool)
    /// The remote did not accept this device's key.
    case authenticationFailed(remote: String, reason: String)
    /// The remote refused the push (`reason`, as the server said it).
    case pushRejected(remote: String, reason: String)
    /// The server turned this device away before any git exchange (an access rule, not an outage).
    case refused(remote: String, message: String)
    /// The profile has no remote of that name.
    case unknownRemote(String)
    /// The profile already has a remote of that name.
    case remoteExists(String)
    /// A remote URL that is neither a path nor `ssh://`.
    case unsupportedURL(String)
    /// The remote holds no profile yet.
    case emptyRemote(String)
    /// Other devices kept pushing while this one synced, `attempts` times; nothing is lost, sync again.
    case remoteKeptMoving(remote: String, attempts: Int)
    /// Files an incoming change would overwrite hold edits no commit has; nothing changed.
    case uncommittedEdits([String])
    /// Hand edits made after an interrupted update to files it was writing: finishing it would overwrite them.
    case unfinishedUpdateBlocked([String])
    /// A record stamped with the last stamp there is: no write can be stamped after it.
    case noLaterStamp(String, String)
    /// A commit from a remote breaks the structural rule (`IncomingCheck`); nothing local changed.
    case invalidCommit(commit: String, path: String?, reason: String)
    /// `member` has no member file in `profile`.
    case unknownMember(member: String, profile: String)
    /// The change would leave `profile` without an active admin (`member` is the last one).
    case lastAdmin(member: String, profile: String)
    /// The remote's main revokes this device's member (`by` is the admin who did).
    case accessRemoved(member: String, by: String, profile: String)
    /// An Admin deleted the profile everywhere (`concord destroy`): the remote holds only their
    /// signed deletion notice (`DeletionNotice`), which this device checked. `by` is `member@device`.
    case profileDeleted(profile: String, by: String, at: String)
    /// The remote's main no longer contains what this device last fetched from it (history replaced).
    case remoteRewritten(remote: String, was: String, now: String, dropped: Int, changingAccess: String)
    /// The remote's main moved to a commit whose first-parent line does not hold what this device
    /// last fetched: the main line decisions are ordered by was broken (a merge put another line first).
    case mainlineBroken(remote: String, was: String, now: String)
    /// An invitation that cannot be accepted (expired, used, withdrawn, altered, or for another history or key).
    case invitationRefused(member: String, reason: String)
    /// A commit breaks the access rule (`AccessRule`): it is not signed by an active member, or
    /// it changes what its signer's role may not (`change`, e.g. "vocabulary/puzzle"); nothing
    /// local changed.
    case unauthorizedCommit(commit: String, signer: String, change: String?, reason: String)
    /// A commit of this device's, not yet sent, breaks the validity rule (`problem`: the refusal every
    /// other device would give): a sync sends nothing rather than publish it.
    case unpublishable(commit: String, problem: String)
    /// The app declares kind `kind` otherwise than the profile has it (`differences`, one phrase
    /// each, from `Kind.differences(from:)`): writes to it are refused, the profile is not changed.
    case kindDiffers(kind: String, differences: [String])
    /// The profile lacks kinds the app declares (`missing`) and `member`, a `role`, may not add
    /// them: an Admin must open the profile with this app once.
    case kindsNeedAdmin(missing: [String], member: String, role: Role)
    /// The record file at `path` does not decode as the app's type (`reason`).
    case recordDoesNotDecode(path: String, reason: String)
    /// A change feed's token names a commit that is not in the profile's history any more (set
    /// aside, or the history was rewound): the feed cannot resume from it.
    case changeTokenNotInHistory(token: String)
    /// A typed query (`RecordRequest`) uses `keyPath` of `type`, which the type's
    /// `ConcordRecord.fields` does not name: the query cannot say which data field it reads.
    case fieldNotNamed(type: String, keyPath: String)
    /// The record index's read-only SQL entry (`StoreReader.sql`) refused the statement before it
    /// ran; the text says what in it is not allowed (`it calls fts3_tokenizer(), …`).
    case sqlRefused(String)
    /// The record index's read-only SQL entry stopped the statement when it had run for `after`.
    case sqlStopped(after: Duration)
    /// A call on a store that its app closed (`ConcordStore.close()`) or whose local copy it removed.
    case storeClosed(profile: String)
    /// Trusting `remote`'s host by a fingerprint: the host presented another key (`presented`).
    case hostKeyMismatch(remote: String, host: String, expected: String, presented: String)

    /// The error's one-line message: what went wrong and what to do next.
    public var errorDescription: String? {
        let (problem, advice) = parts
        return advice.map { "\(problem): \($0)" } ?? problem
    }

    /// What went wrong (`problem`), and what to do in the library's terms (`advice`, nil where the
    /// problem says all); `errorDescription` is `problem: advice`. A client swaps in its own advice
    /// (the CLI names its commands) and keeps the problem.
    /// Names and text from a remote (paths, device names, an unsigned commit's author, reasons quoting
    /// them) reach these messages, so control characters and Unicode format characters (bidirectional
    /// overrides, zero-width marks) are shown escaped (`\u{1B}`), never sent to a terminal.
    public var parts: (problem: String, advice: String?) {
        let (problem, advice) = unescapedParts
        return (Self.printable(problem), advice.map(Self.printable))
    }

    /// `text` with every control character (C0, DEL, C1) and Unicode format character (category Cf:
    /// bidirectional overrides and isolates, zero-width joiners) written as `\u{…}`.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if needsEscape(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.properties.generalCategory == .format
    }

    private var unescapedParts: (problem: String, advice: String?) {
        switch self {
        case .notAProfile(let path):
            return ("\(path) is not a Concord profile (no .concord/profile.json)", "create one there or open the profile's directory")
        case .profileExists(let path):
            return ("\(path) already holds a git repository or profile", "choose an empty or new directory")
        case .olderFormat(let found, let oldest):
            return ("this profile uses data format \(found), from an older concord; this concord reads format \(oldest) and later",
                    "export it with the concord that made it and import the dump into a new profile")
        case .newerFormat(let found, let supported):
            return ("this profile uses data format \(found) but this concord understands up to \(supported)", "upgrade concord to open it")
        case .unknownKind(let kind, let known):
            let list = known.isEmpty ? "this profile has no kinds" : "known kinds: \(known.joined(separator: ", "))"
            return ("unknown kind \"\(kind)\" (\(list))", nil)
        case .notALogKind(let kind):
            return ("kind \"\(kind)\" is not a log kind", "put its records instead of appending")
        case .logKindNeedsAppend(let kind):
            return ("kind \"\(kind)\" is an append-only log", "append its entries instead")
        case .cannotRemoveLogEntries(let kind):
            return ("kind \"\(kind)\" is an append-only log", "its entries cannot be removed")
        case .badReference(let text):
            return ("\"\(text)\" is not a record reference", "write it as <kind>/<id>, e.g. vocabulary/puzzle")
        case .recordNotFound(let reference):
            return ("no record \(reference)", nil)
        case .corruptRecord(let path, let reason):
            return ("record file \(path) is not a valid record (\(reason))", "fix or restore it, e.g. 'git checkout -- \(path)'")
        case .invalidInput(let refusal):
            return (refusal.message, refusal.remedy?.description)
        case .io(let failure):
            return (failure.message, nil)
        case .invalidJSON(let source, let detail):
            return ("invalid JSON in \(source) at \(detail)", nil)
        case .notAnObject(let source):
            return ("\(source) must be a JSON object ({...})", nil)
        case .recordTooLarge(let reference, let size):
            return ("record \(reference) is \(size) bytes, over the 1 MiB limit", "store large content as separate records")
        case .git(let error):
            return ("git: \(error.description)", nil)
        case .remoteFailed(let remote, let error):
            return ("\(remote): \(error.message)", nil)
        case .notAllowed(let member, let role, let action, let needs, let profile, let owner?):
            let name = role.rawValue.prefix(1).uppercased() + role.rawValue.dropFirst()
            return ("acting on \(owner)'s device, \(member) has the rights of \(role == .admin || role == .editor ? "an" : "a") \(name) "
                    + "(the lower of the two roles) in \"\(profile)\"; \(action) needs \(needs.rawValue) or above", nil)
        case .notAllowed(let member, let role, let action, let needs, let profile, nil):
            return ("\(member) is \(role.rawValue) in \"\(profile)\"; \(action) needs \(needs.rawValue) or above", nil)
        case .notAMember(let member, let profile):
            return ("\(member) is not an active member of profile \"\(profile)\"", "ask an admin to share it with you")
        case .keyNotRegistered(let member, let fingerprint, let profile):
            return ("this device's key (\(fingerprint)) is not one of \(member)'s keys in \"\(profile)\"",
                    "ask an admin to add it to \(member)'s keys")
        case .busy(let path):
            return ("profile \(path) is busy", "another concord process has held its lock for too long; try again")
        case .gitIndexLocked(let path):
            return ("another git process holds \(path) (a `git commit` in this folder?)",
                    "finish it, or remove the file if no git is running, and try again")
        case .unknownTemplate(let name):
            return ("unknown template \"\(name)\"", "use blank, aac, screenplay, recipes, sessions or personal")
        case .offline(let remote, let reason, let count):
            let problem = "offline: cannot reach \(remote) (\(reason))"
            guard let count else { return (problem, "check the URL and the network, then try again") }
            let kept = count == 1 ? "your 1 local commit is kept" : "your \(count) local commits are kept"
            return (problem, "\(kept) and will be sent on the next sync")
        case .untrustedHost(let remote, let host, let fingerprint, let changed):
            if changed {
                return ("the host key of \(host) CHANGED (now \(fingerprint))", "refusing to connect to \(remote); if the server "
                        + "really got a new key, remove its line from $CONCORD_HOME/known_hosts and trust the new one")
            }
            return ("unknown host key \(fingerprint) for \(host)", "if that is the server's key, trust it for \(remote)")
        case .authenticationFailed(let remote, let reason):
            return ("the server of \(remote) refused this device's key (\(reason))", "ask its admin to authorize this device's public key")
        case .pushRejected(let remote, let reason):
            return ("\(remote) refused the push", reason)
        case .refused(let remote, let message):
            return ("\(remote) refused this device: \(message)",
                    "ask the server's admin for access; local commits are kept and sent on a later sync")
        case .unknownRemote(let name):
            return ("no remote named \"\(name)\"", "add one first")
        case .remoteExists(let name):
            return ("a remote named \"\(name)\" already exists", "remove it first or choose another name")
        case .unsupportedURL(let url):
            return ("\(url) is not a supported remote", "use a directory path or ssh://user@host[:port]/path.git")
        case .emptyRemote(let url):
            return ("\(url) holds no profile yet", "create one and sync it there first")
        case .remoteKeptMoving(let remote, let attempts):
            return ("\(remote) kept changing while syncing (\(attempts) attempts)", "nothing is lost; sync again")
        case .uncommittedEdits(let paths):
            return ("uncommitted edits to \(Self.list(paths)) would be overwritten by the incoming change",
                    "save them as records (or discard them with 'git checkout -- <file>'), then try again; your branch and files were not changed")
        case .unfinishedUpdateBlocked(let paths):
            return ("uncommitted edits to \(Self.list(paths)) stop concord finishing an interrupted update of the working tree",
                    "move them out of the profile if you need them (or delete them), then run the command again, "
                        + "which puts the files as the branch has them; nothing was changed")
        case .noLaterStamp(let path, let stamp):
            return ("\(path) is stamped \(stamp), the last stamp there is, so no change can be stamped after it",
                    "put the data under a new id; nothing was changed")
        case .unknownMember(let member, let profile):
            return ("\(member) is not a member of \"\(profile)\"", "list the members to see who is")
        case .lastAdmin(let member, let profile):
            return ("\(member) is the last active admin of \"\(profile)\"", "make another member admin first; a profile always keeps one")
        case .mainlineBroken(let remote, let was, let now):
            return ("\(remote)'s main moved from \(was) to \(now), whose first-parent line does not hold \(was): someone pushed a merge "
                    + "that puts another line of history first (as plain `git pull` does), which would let decisions made on old copies count",
                    "refused, nothing here changed; whoever pushed \(now) syncs with Concord (its merges put the remote's main first) "
                    + "or runs `git pull --rebase`, and pushes again; on a path remote an Admin puts it back by restoring \(remote)")
        case .remoteRewritten(let remote, let was, let now, let dropped, let changingAccess):
            return ("\(remote)'s main was rewritten on the server: it is now \(now), without \(dropped) commit(s) up to \(was) that "
                    + "this device fetched before, and \(changingAccess) among them changed the profile's members, invitations or kinds",
                    "refused, nothing here changed (the new history may rest on access those commits took away); on a path "
                    + "remote an Admin puts it back by restoring \(remote), else ask the server's admin to put the "
                    + "remote's main back at \(was) or a commit after it")
        case .invitationRefused(let member, let reason):
            return (member.isEmpty ? "the open invitation cannot be accepted" : "the invitation for \(member) cannot be accepted", reason)
        case .accessRemoved(let member, let admin, let profile):
            return ("access removed: \(admin) revoked your access to \(profile)",
                    "\(member)'s edits that had not reached the remote before it are not accepted by anyone")
        case .profileDeleted(let profile, let by, let at):
            return ("profile deleted: \(by) deleted \(profile) at \(at)",
                    "its remote keeps only the signed deletion notice; data already on other devices is not recalled")
        case .invalidCommit(let commit, let path, let reason):
            return ("invalid commit \(commit):\(path.map { " \($0):" } ?? "") \(reason)", "refused, nothing here changed; the remote "
                    + "holds a commit Concord will not accept: ask the profile's admin to find who pushed it and restore the remote's main")
        case .unpublishable(let commit, let problem):
            return ("this device's commit \(commit) would be refused by every other device (\(problem))",
                    "nothing was sent; the doctor's check (`Recovery.doctor`) says why and its fix sets it aside without losing "
                    + "its content (docs/sync.md, \"A commit this device would refuse\")")
        case .kindDiffers(let kind, let differences):
            return ("kind \"\(kind)\" differs between this app and the profile: \(differences.joined(separator: "; "))",
                    "writes to it are refused; change the app's declaration, or have an Admin change the profile's kind")
        case .kindsNeedAdmin(let missing, let member, let role):
            return ("this profile lacks the kinds \(missing.joined(separator: ", ")) this app declares, and \(member) is \(role.title)",
                    "an Admin must open the profile with this app once to add them")
        case .recordDoesNotDecode(let path, let reason):
            return ("\(path) does not decode as this app's type: \(reason)",
                    "skip such records explicitly, or update the app to read what newer versions write")
        case .changeTokenNotInHistory(let token):
            return ("the change token \(token) names a commit no longer in this profile's history (set aside or rewound)",
                    "start again from a snapshot of the current records")
        case .fieldNotNamed(let type, let keyPath):
            return ("\(type) names no data field for \(keyPath), so a query cannot use it",
                    "add it to \(type).fields, e.g. [\\.page: \"page\"]")
        case .sqlRefused(let reason):
            return ("the SQL was refused: \(reason)",
                    "only one SELECT over the index's tables, calling the functions docs/index.md lists, is run")
        case .sqlStopped(let limit):
            let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
            return ("the SQL ran longer than \(String(format: "%g", seconds)) s and was stopped",
                    "narrow it (a condition on kind or on an indexed field, a LIMIT) or allow it more time")
        case .storeClosed(let profile):
            return ("this store of \"\(profile)\" is closed", "open the profile again to use it")
        case .hostKeyMismatch(let remote, let host, let expected, let presented):
            return ("\(host) presented the host key \(presented), not \(expected)",
                    "nothing was trusted for \(remote); check the fingerprint with the server's admin (someone may be in the way)")
        case .unauthorizedCommit(let commit, let signer, let change, let reason):
            return ("\(commit) by \(signer)\(change.map { " changes \($0)" } ?? ""): \(reason)",
                    "refused, nothing here changed; ask the profile's admin to restore the remote's main")
        }
    }

    /// Up to five `paths`, then how many more.
    private static func list(_ paths: [String]) -> String {
        paths.prefix(5).joined(separator: ", ") + (paths.count > 5 ? " and \(paths.count - 5) more" : "")
    }
}
