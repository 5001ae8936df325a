import ConcordKit

extension ConcordError {
    /// What the CLI prints for this error: the library's problem, with the library's advice or,
    /// where a concord command fixes the problem, advice naming that command.
    var cliMessage: String {
        let (problem, advice) = parts
        return (cliAdvice.map(ConcordError.printable) ?? advice).map { "\(problem): \($0)" } ?? problem
    }

    /// `cliMessage` for a command that makes the profile (`clone`, `accept`; `command` is how to run
    /// it again): it leaves nothing on this device, so there are no local commits to keep and no
    /// copy to run `remote trust` in; its own `--trust-host` trusts the server.
    func cliMessage(settingUp command: String) -> String {
        let advice: String? = switch self {
        case .offline:
            "check the address and the network, then run '\(command)' again; nothing was left on this device"
        case .refused:
            "ask the server's admin for access; nothing was left on this device"
        case .untrustedHost(_, _, let fingerprint, let changed):
            changed
                ? "refusing to connect; if the server really got a new key, remove its line from $CONCORD_HOME/known_hosts and run "
                    + "'\(command) --trust-host \(fingerprint)'"
                : "if that is the server's key, run '\(command) --trust-host \(fingerprint)'"
        default:
            nil
        }
        return advice.map { "\(parts.problem): \($0)" } ?? cliMessage
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
            return keyRegistrationAdvice(member)
        case .untrustedHost(let remote, _, _, let changed):
            return changed
                ? "refusing to connect; if the server really got a new key, remove its line from $CONCORD_HOME/known_hosts and run "
                    + "'concord remote trust \(remote)'"
                : "if that is the server's key, run 'concord remote trust \(remote)'"
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
        case .invalidInput(let refusal):
            return refusal.remedy.map(Self.cliAdvice(for:))
        case .mainlineBroken(let remote, _, let now):
            return "refused, nothing here changed; whoever pushed \(now) runs `concord sync` (its merges put the remote's main first) "
                + "or `git pull --rebase`, and pushes again; on a path remote an Admin puts it back with 'concord remote restore \(remote)'"
        case .remoteRewritten(let remote, let was, _, _, _):
            return "refused, nothing here changed (the new history may rest on access those commits took away); on a path "
                + "remote an Admin puts it back with 'concord remote restore \(remote)', else ask the server's admin to put the "
                + "remote's main back at \(was) or a commit after it"
        case .invalidCommit:
            return "refused, nothing here changed; the remote holds a commit Concord will not accept: ask the profile's admin to find "
                + "who pushed it and restore the remote's main ('concord remote restore' for a path remote)"
        case .unpublishable:
            return "nothing was sent; run 'concord doctor' to see why and 'concord doctor --fix' to set it aside without losing "
                + "its content (docs/sync.md, \"A commit this device would refuse\")"
        case .unauthorizedCommit:
            return "refused, nothing here changed; ask the profile's admin to restore the remote's main ('concord remote restore' for a path remote)"
        default:
            return nil
        }
    }

    /// What to do about a refusal, in concord's commands.
    private static func cliAdvice(for remedy: Remedy) -> String {
        switch remedy {
        case .remakeOwnLine(let resetTo):
            "keep your line ('git branch concord-kept'), undo the merge that brought it in ('git reset --keep \(resetTo)'), "
                + "run 'concord sync', and make again what you wrote after it (it stays in concord-kept)"
        case .askServerAdministrator:
            "for another server, ask its administrator to set main back to the last commit 'concord sync' accepted"
        case .restoreFromFetchedLine(let remote, let resetTo):
            "put main back on that line ('git reset --keep \(resetTo)'), merge your own commits in with 'concord merge <commit>', "
                + "then run 'concord remote restore \(remote)' again"
        case .restoreAgain(let remote):
            "run 'concord remote restore \(remote)' again"
        case .changeKind(let kind):
            "change it with 'concord kinds set \(kind)'"
        case .proveKey(let profileID, let member, let device):
            "on device \(device) run 'concord identity prove \(profileID)' with an identity named \(member) and give what it prints with --proof"
        case .switchActing(let owner):
            "run 'concord switch \(owner)' or switch to an active member"
        case .inviteAdminByName:
            "invite an Admin by name ('concord share NAME --role admin')"
        case .identityOfItsOwn:
            "join with an identity of another name (a CONCORD_HOME of its own, 'concord identity new --name NAME --device DEVICE')"
        case .listDevices:
            "'concord members --json' lists the devices with their fingerprints"
        case .removeByFingerprint:
            "remove one by its fingerprint, 'concord devices remove SHA256:…' ('concord log' shows who relabelled them)"
        case .ownDeviceLabel:
            "if its label was changed by another device ('concord log' shows who), remove that one by its fingerprint, "
                + "'concord devices remove SHA256:…'; to remove this device itself, name its fingerprint"
        }
    }
}

/// What to do when this device's key is not one of `member`'s keys in a profile.
func keyRegistrationAdvice(_ member: String) -> String {
    "ask an admin to run 'concord members add \(member) --role ROLE --key \"$(concord identity show --public-key)\"'"
}

/// A failure of `clone` or `accept`, which make the profile: its message is
/// `ConcordError.cliMessage(settingUp:)`, its exit code the error's own.
struct SetUpFailure: Error {
    let error: ConcordError
    /// How to run the command again, e.g. `concord clone <url> <dir>`.
    let command: String

    /// Runs `body` (the library's clone or accept), turning its errors into `SetUpFailure`s.
    static func running<T>(_ command: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as ConcordError { throw SetUpFailure(error: error, command: command) }
    }
}
