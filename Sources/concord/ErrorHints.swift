import ConcordKit

extension ConcordError {
    /// What the CLI prints for this error: the library's message where it says all there is, and
    /// where a concord command fixes the problem, the message with that command in it.
    var cliMessage: String {
        switch self {
        case .notAProfile(let path):
            return "\(path) is not a Concord profile (no .concord/profile.json): run 'concord init \(path) --name NAME' or pass -C <profile dir>"
        case .olderFormat(let found, let oldest):
            return "this profile uses data format \(found), from an older concord; this concord reads format \(oldest) and "
                + "later: run `concord export` with the concord that made it and `concord import` the dump into a new profile"
        case .notALogKind(let kind):
            return "kind \"\(kind)\" is not a log kind: use 'concord put \(kind)/<id>' instead of append"
        case .logKindNeedsAppend(let kind):
            return "kind \"\(kind)\" is an append-only log: use 'concord append \(kind) --json ...' instead"
        case .recordNotFound(let reference):
            return "no record \(reference): 'concord ls' lists the records"
        case .keyNotRegistered(let member, let fingerprint, let profile):
            return "this device's key (\(fingerprint)) is not one of \(member)'s keys in \"\(profile)\": ask an admin to run "
                + "'concord members add \(member) --role ROLE --key \"$(concord identity show --public-key)\"'"
        case .untrustedHost(let remote, let host, let fingerprint, let changed):
            if changed {
                return "the host key of \(host) CHANGED (now \(fingerprint)): refusing to connect; if the server really got a new key, "
                    + "remove its line from $CONCORD_HOME/known_hosts and run 'concord remote trust \(remote)'"
            }
            return "unknown host key for \(host): \(fingerprint); if that is the server's key, run 'concord remote trust \(remote)' "
                + "(or clone with --trust-host \(fingerprint))"
        case .authenticationFailed(let remote, let reason):
            return "the server of \(remote) refused this device's key (\(reason)): ask its admin to authorize 'concord identity show --public-key'"
        case .unknownRemote(let name):
            return "no remote named \"\(name)\": add one with 'concord remote add \(name) <url>'"
        case .emptyRemote(let url):
            return "\(url) holds no profile yet: create one with 'concord init' and push it with 'concord sync'"
        case .remoteKeptMoving(let remote, let attempts):
            return "\(remote) kept changing while syncing (\(attempts) attempts): nothing is lost; run 'concord sync' again"
        case .uncommittedEdits(let paths):
            let list = paths.prefix(5).joined(separator: ", ") + (paths.count > 5 ? " and \(paths.count - 5) more" : "")
            return "uncommitted edits to \(list) would be overwritten by the incoming change: save them with 'concord put' "
                + "(or discard them with 'git checkout -- <file>'), then run the command again; nothing was changed"
        default:
            return errorDescription ?? "\(self)"
        }
    }
}
