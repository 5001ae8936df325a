import ConcordKit

extension ConcordError {
    /// What the CLI prints for this error: the library's problem, with the library's advice or,
    /// where a concord command fixes the problem, advice naming that command.
    var cliMessage: String {
        let (problem, advice) = parts
        return (cliAdvice.map(ConcordError.printable) ?? advice).map { "\(problem): \($0)" } ?? problem
    }

    private var cliAdvice: String? {
        switch self {
        case .notAProfile(let path):
            return "run 'concord init \(path) --name NAME' or pass -C <profile dir>"
        case .olderFormat:
            return "run `concord export` with the concord that made it and `concord import` the dump into a new profile"
        case .notALogKind(let kind):
            return "use 'concord put \(kind)/<id>' instead of append"
        case .logKindNeedsAppend(let kind):
            return "use 'concord append \(kind) --json ...' instead"
        case .recordNotFound:
            return "'concord ls' lists the records"
        case .keyNotRegistered(let member, _, _):
            return "ask an admin to run 'concord members add \(member) --role ROLE --key \"$(concord identity show --public-key)\"'"
        case .untrustedHost(let remote, _, let fingerprint, let changed):
            return changed
                ? "refusing to connect; if the server really got a new key, remove its line from $CONCORD_HOME/known_hosts and run "
                    + "'concord remote trust \(remote)'"
                : "if that is the server's key, run 'concord remote trust \(remote)' (or clone with --trust-host \(fingerprint))"
        case .authenticationFailed:
            return "ask its admin to authorize 'concord identity show --public-key'"
        case .unknownRemote(let name):
            return "add one with 'concord remote add \(name) <url>'"
        case .emptyRemote:
            return "create one with 'concord init' and push it with 'concord sync'"
        case .remoteKeptMoving:
            return "nothing is lost; run 'concord sync' again"
        case .uncommittedEdits:
            return "save them with 'concord put' (or discard them with 'git checkout -- <file>'), then run the command again; "
                + "your branch and files were not changed"
        case .unknownMember:
            return "'concord members' lists who is"
        case .lastAdmin:
            return "make another member admin first ('concord role <member> admin'); a profile always keeps one"
        default:
            return nil
        }
    }
}
