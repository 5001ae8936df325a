import Foundation

/// Everything the engine refuses or fails at, each with a one-line message that says what to do.
public enum ConcordError: Error, LocalizedError, Sendable, Equatable {
    case notAProfile(String)
    case profileExists(String)
    case newerFormat(found: Int, supported: Int)
    case olderFormat(found: Int, oldest: Int)
    case unknownKind(String, known: [String])
    case notALogKind(String)
    case logKindNeedsAppend(String)
    case cannotRemoveLogEntries(String)
    case badReference(String)
    case recordNotFound(String)
    case corruptRecord(path: String, reason: String)
    case invalidInput(String)
    case invalidJSON(source: String, detail: String)
    case notAnObject(source: String)
    case recordTooLarge(String, size: Int)
    case io(String)
    case git(String)
    case busy(String)
    case unknownTemplate(String)
    /// The remote could not be reached; local commits are kept.
    /// `localCommits` is nil where there is nothing local to keep (a clone).
    case offline(remote: String, reason: String, localCommits: Int?)
    case untrustedHost(remote: String, host: String, fingerprint: String, changed: Bool)
    case authenticationFailed(remote: String, reason: String)
    case pushRejected(remote: String, reason: String)
    /// The server turned this device away before any git exchange (an access rule, not an outage).
    case refused(remote: String, message: String)
    case unknownRemote(String)
    case remoteExists(String)
    case unsupportedURL(String)
    case emptyRemote(String)
    case remoteKeptMoving(remote: String, attempts: Int)
    /// Files an incoming change would overwrite hold edits no commit has; nothing changed.
    case uncommittedEdits([String])
    /// A commit from a remote breaks the structural rule (`IncomingCheck`); nothing local changed.
    case invalidCommit(commit: String, path: String?, reason: String)

    public var errorDescription: String? {
        switch self {
        case .notAProfile(let path):
            return "\(path) is not a Concord profile (no .concord/profile.json): run 'concord init \(path) --name NAME' or pass -C <profile dir>"
        case .profileExists(let path):
            return "\(path) already holds a git repository or profile: choose an empty or new directory"
        case .olderFormat(let found, let oldest):
            return "this profile uses data format \(found), from an older concord; this concord reads format \(oldest) and "
                + "later: run `concord export` with the concord that made it and `concord import` the dump into a new profile"
        case .newerFormat(let found, let supported):
            return "this profile uses data format \(found) but this concord understands up to \(supported): upgrade concord to open it"
        case .unknownKind(let kind, let known):
            let list = known.isEmpty ? "this profile has no kinds" : "known kinds: \(known.joined(separator: ", "))"
            return "unknown kind \"\(kind)\" (\(list))"
        case .notALogKind(let kind):
            return "kind \"\(kind)\" is not a log kind: use 'concord put \(kind)/<id>' instead of append"
        case .logKindNeedsAppend(let kind):
            return "kind \"\(kind)\" is an append-only log: use 'concord append \(kind) --json ...' instead"
        case .cannotRemoveLogEntries(let kind):
            return "kind \"\(kind)\" is an append-only log: its entries cannot be removed"
        case .badReference(let text):
            return "\"\(text)\" is not a record reference: write it as <kind>/<id>, e.g. vocabulary/puzzle"
        case .recordNotFound(let reference):
            return "no record \(reference): 'concord ls' lists the records"
        case .corruptRecord(let path, let reason):
            return "record file \(path) is not a valid record (\(reason)): fix or restore it, e.g. 'git checkout -- \(path)'"
        case .invalidInput(let message):
            return message
        case .invalidJSON(let source, let detail):
            return "invalid JSON in \(source) at \(detail)"
        case .notAnObject(let source):
            return "\(source) must be a JSON object ({...})"
        case .recordTooLarge(let reference, let size):
            return "record \(reference) is \(size) bytes, over the 1 MiB limit: store large content as separate records"
        case .io(let message):
            return message
        case .git(let message):
            return message
        case .busy(let path):
            return "profile \(path) is busy: another concord process has held its lock for too long; try again"
        case .unknownTemplate(let name):
            return "unknown template \"\(name)\": use blank, aac, screenplay, recipes, sessions or personal"
        case .offline(let remote, let reason, let count):
            guard let count else { return "offline: cannot reach \(remote) (\(reason)) — check the URL and the network, then try again" }
            let kept = count == 1 ? "your 1 local commit is kept" : "your \(count) local commits are kept"
            return "offline: cannot reach \(remote) (\(reason)) — \(kept) and will be sent on the next sync"
        case .untrustedHost(let remote, let host, let fingerprint, let changed):
            if changed {
                return "the host key of \(host) CHANGED (now \(fingerprint)): refusing to connect; if the server really got a new key, remove its line from $CONCORD_HOME/known_hosts and run 'concord remote trust \(remote)'"
            }
            return "unknown host key for \(host): \(fingerprint); if that is the server's key, run 'concord remote trust \(remote)' (or clone with --trust-host \(fingerprint))"
        case .authenticationFailed(let remote, let reason):
            return "the server of \(remote) refused this device's key (\(reason)): ask its admin to authorize 'concord identity show --public-key'"
        case .pushRejected(let remote, let reason):
            return "\(remote) refused the push: \(reason)"
        case .refused(let remote, let message):
            return "\(remote) refused this device: \(message) — ask the server's admin for access; nothing here changed and local commits are kept"
        case .unknownRemote(let name):
            return "no remote named \"\(name)\": add one with 'concord remote add \(name) <url>'"
        case .remoteExists(let name):
            return "a remote named \"\(name)\" already exists: remove it first or choose another name"
        case .unsupportedURL(let url):
            return "\(url) is not a supported remote: use a directory path or ssh://user@host[:port]/path.git"
        case .emptyRemote(let url):
            return "\(url) holds no profile yet: create one with 'concord init' and push it with 'concord sync'"
        case .remoteKeptMoving(let remote, let attempts):
            return "\(remote) kept changing while syncing (\(attempts) attempts): nothing is lost; run 'concord sync' again"
        case .uncommittedEdits(let paths):
            let list = paths.prefix(5).joined(separator: ", ") + (paths.count > 5 ? " and \(paths.count - 5) more" : "")
            return "uncommitted edits to \(list) would be overwritten by the incoming change: save them with 'concord put' "
                + "(or discard them with 'git checkout -- <file>'), then run the command again; nothing was changed"
        case .invalidCommit(let commit, let path, let reason):
            let place = path.map { " \($0):" } ?? ""
            return "invalid commit \(commit):\(place) \(reason) — refused, nothing here changed; the remote holds a commit "
                + "Concord will not accept: ask the profile's admin to find who pushed it and restore the remote's main"
        }
    }
}
