/// What a call refused about what it was given or the state it found (`ConcordError.invalidInput`):
/// a code an app can switch on, and the sentence a person reads, in the library's terms (a client
/// adds its own advice: the CLI names its commands).
public struct InvalidInput: Sendable, Hashable, CustomStringConvertible {
    /// What kind of refusal it is.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// A name or an id that is not allowed or does not read: a profile, remote, member or device
        /// name, a record id, a commit id, a path.
        case badName
        /// A kind declared, added or changed in a way the profile cannot take (a directory or name
        /// taken, a policy that cannot change, a kind declared twice differently).
        case kindDeclaration
        /// A query, a predicate, its limit or offset, or read-only SQL that cannot run as given.
        case badQuery
        /// A dump (`import`) or a batch of records and log entries that does not read.
        case badDump
        /// A value of the app's type that does not encode as a JSON object.
        case notEncodable
        /// A setting out of its range: an environment variable, a sync interval, a server's path or user.
        case badSetting
        /// An invitation that does not read or verify, or that cannot be made as asked.
        case badInvitation
        /// A key added without its proof of possession, or with a proof that does not verify.
        case keyProof
        /// A name, key or engine entry that is there already (another member holds the key, the
        /// member is invited or active already, the profile is in the sync engine already).
        case alreadyThere
        /// The member or device the call names is not in the state the call needs (revoked, not
        /// active, no such device, the member's only device, this device's own key).
        case memberState
        /// The remote is not the kind the call works with (a path remote has no host key, an ssh
        /// remote is restored by its server), or holds something other than this profile.
        case wrongRemote
        /// This device's or the remote's history is not in a state the call can use (main moved
        /// meanwhile, a merge on this device's own line, no commit passes the rule); nothing changed.
        case historyState
        /// The call was made where it would wait for itself (inside a store call's closure, in a
        /// status handler), or on a sync engine that was stopped.
        case wrongPlace
        /// The record index's file holds schema entries Concord does not make: it is not read.
        case untrustedIndex
        /// A deletion notice that does not read or verify.
        case badDeletionNotice
    }

    /// What kind of refusal it is.
    public let code: Code
    /// What was refused and why (with what to give instead where that is all there is to do).
    public let message: String
    /// What a person does about it, where that takes more than giving something else: the error's
    /// advice (`ConcordError.parts`), in the library's terms; a client words it its own way.
    public let remedy: Remedy?

    /// A refusal of kind `code`, saying `message`, with `remedy` when there is one.
    public init(_ code: Code, _ message: String, remedy: Remedy? = nil) {
        (self.code, self.message, self.remedy) = (code, message, remedy)
    }

    /// The message, with the remedy in the library's terms after it.
    public var description: String { remedy.map { "\(message): \($0)" } ?? message }
}

/// What a person does about a refusal, as a value: the library words it in its own terms
/// (`description`), a client in its own (the CLI names its commands).
public enum Remedy: Sendable, Hashable, CustomStringConvertible {
    /// A merge on this device's own line holds what reached the remote's main first: keep the line
    /// on a branch, reset main to `resetTo` (the undone merge's first parent), sync, and make again
    /// what was written after it.
    case remakeOwnLine(resetTo: String)
    /// The remote is an ssh one: its server's administrator sets main back.
    case askServerAdministrator
    /// This device's main left the line it fetched from `remote`: put it back at `resetTo`, merge
    /// this device's own commits in, and restore again.
    case restoreFromFetchedLine(remote: String, resetTo: String)
    /// Restore `remote` again (its main moved meanwhile).
    case restoreAgain(remote: String)
    /// Change kind `kind` (its policy or writers) rather than add it again.
    case changeKind(String)
    /// On device `device`, prove its key for profile `profileID` as `member`
    /// (`Identity.keyProof(profileID:member:)`) and give the proof with the key.
    case proveKey(profileID: String, member: String, device: String)
    /// Switch this device's acting member back to its owner `owner` (`ConcordStore.switchActing`), or to an active member.
    case switchActing(owner: String)
    /// Invite an Admin by name (an open invitation makes no Admins).
    case inviteAdminByName
    /// The name is taken: join with an identity of another name, in an identity home of its own.
    case identityOfItsOwn
    /// See the member's devices with their keys' fingerprints (`Member.keys`).
    case listDevices
    /// Several keys carry the label: remove one by its fingerprint (the history shows who relabelled them).
    case removeByFingerprint
    /// The label names this device's own key: remove the other device by its fingerprint, or name
    /// this device's own fingerprint to remove it.
    case ownDeviceLabel

    /// The remedy in the library's terms.
    public var description: String {
        switch self {
        case .remakeOwnLine(let resetTo):
            "keep your line ('git branch concord-kept'), undo the merge that brought it in ('git reset --keep \(resetTo)'), sync again, "
                + "and make again what you wrote after it (it stays in concord-kept)"
        case .askServerAdministrator:
            "ask the server's administrator to set main back to the last commit a sync accepted"
        case .restoreFromFetchedLine(let remote, let resetTo):
            "put main back on that line ('git reset --keep \(resetTo)'), merge your own commits in, then restore \(remote) again"
        case .restoreAgain(let remote):
            "restore \(remote) again"
        case .changeKind(let kind):
            "change kind \"\(kind)\" (its policy or writers) instead"
        case .proveKey(let profileID, let member, let device):
            "on device \(device), prove its key for profile \(profileID) as \(member) and give the proof with the key"
        case .switchActing(let owner):
            "switch the acting member back to \(owner), or to an active member"
        case .inviteAdminByName:
            "invite an Admin by name"
        case .identityOfItsOwn:
            "join with an identity of another name (an identity home of its own)"
        case .listDevices:
            "the member's keys list the devices with their fingerprints"
        case .removeByFingerprint:
            "remove one by its fingerprint (SHA256:…; the history shows who relabelled them)"
        case .ownDeviceLabel:
            "if its label was changed by another device (the history shows who), remove that one by its fingerprint (SHA256:…); "
                + "to remove this device itself, name its fingerprint"
        }
    }
}

/// A file or directory this device could not read or write (`ConcordError.io`): which operation,
/// on which path (nil where no one path is at fault), and what the system said.
public struct IOFailure: Sendable, Hashable, CustomStringConvertible {
    /// What was being done.
    public enum Operation: String, Sendable, Hashable, CaseIterable {
        case read, write, create, delete, list, lock, open
    }

    /// What was being done.
    public let operation: Operation
    /// The file or directory (absolute, or as the profile names it).
    public let path: String?
    /// The whole sentence: what could not be done, why, and what was kept or changed.
    public let message: String

    /// A failure of `operation` on `path`, saying `message`.
    public init(_ operation: Operation, path: String?, _ message: String) {
        (self.operation, self.path, self.message) = (operation, path, message)
    }

    /// The message.
    public var description: String { message }
}

extension ConcordError {
    /// `invalidInput(InvalidInput(code, message))`.
    public static func invalidInput(_ code: InvalidInput.Code, _ message: String, remedy: Remedy? = nil) -> ConcordError {
        .invalidInput(InvalidInput(code, message, remedy: remedy))
    }

    /// `io(IOFailure(operation, path: path, message))`.
    public static func io(_ operation: IOFailure.Operation, path: String?, _ message: String) -> ConcordError {
        .io(IOFailure(operation, path: path, message))
    }
}
