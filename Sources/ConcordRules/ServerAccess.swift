import ConcordModel
import ConcordTrust

/// Who may open which profile on a concord server, as a pure function of the request, the
/// connecting key, the profile's membership at the server's main and the clock: no git, no I/O,
/// so `concord serve` (ConcordServer, which reads the membership and acts on the answer), its tests
/// and the docs all state the same rule.
///
/// - `git-upload-pack` (read): an active member of that profile; a pending invitation's key (it
///   must read the profile to accept), or an open invitation's one-time key while it has places
///   left and has not expired. Nobody else, the server's admin key included.
/// - `concord-wait` (live updates): whoever may read.
/// - `concord-destroy` (delete the profile): an active member (`ConcordServer.destroy` then
///   requires an active Admin's key and their signed notice).
/// - `concord-notice`: decided before this, by `ConcordServer.admit` (a deleted profile's members).
/// - `git-receive-pack` (write): an active member (every member may write something: at least
///   their own device keys; the `pre-receive` hook judges each commit); a pending invitation's key,
///   for its acceptance only (the hook checks that).
/// - The server's admin key, for a profile that does not exist yet (or has no main): both, so its
///   first sync (a fetch that finds nothing, then a push) creates the profile's repository.
/// - A revoked member: `git-upload-pack` and `concord-wait` of main as it was at the revocation
///   (`RevocationView`), so the device learns it was revoked from the Admin's signed commit; no push.
/// - An expired invitation, any other key: refused. A profile that does not exist and one the key
///   may not open are refused alike, so a stranger learns no profile names.
///
/// Public for its verbs alone (`ServeRequest.Verb`, ConcordServer's public request); the decision is the package's.
public enum ServerAccess {
    /// What a device asks a concord server for: the verbs of sshd's forced command.
    public enum Verb: String, Sendable {
        /// git-upload-pack: read the profile (fetch, clone, ls-remote).
        case upload = "git-upload-pack"
        /// git-receive-pack: push to the profile.
        case receive = "git-receive-pack"
        /// concord-wait: hold the connection until the profile's main moves from the main the device
        /// has (or some seconds pass), then answer with its ref advertisement (live updates for `watch`);
        /// optionally followed by a pack of what main has beyond the device's.
        case wait = "concord-wait"
        /// concord-notice: print the signed deletion notice of a profile an Admin deleted.
        case notice = "concord-notice"
        /// concord-destroy: delete the profile; an Admin's signed deletion notice comes on stdin.
        case destroy = "concord-destroy"
    }

    /// What the decision needs of a request: what it asks, of which profile (by its name on the server).
    package struct Request: Sendable, Equatable {
        package let verb: Verb
        package let profile: String

        package init(verb: Verb, profile: String) {
            self.verb = verb
            self.profile = profile
        }
    }

    /// What the server holds under a profile name.
    package enum ProfileState: Sendable {
        /// No repository, or one with no main yet.
        case absent
        /// The membership at the repository's main.
        case present(Membership)
    }

    /// A connection let in: why, and as which member (nil for the creator and an open invitation's key).
    package struct Admission: Sendable, Equatable {
        package let grant: ServerGrant
        package let member: String?

        package init(grant: ServerGrant, member: String?) {
            self.grant = grant
            self.member = member
        }
    }

    /// Why a connection is turned away; `message` is the one line said to the device.
    package enum Refusal: Error, Sendable, Equatable {
        /// No profile of that name, or one the key may not open for that verb (alike, so a stranger learns no names).
        case noAccess(profile: String, key: String, verb: Verb)
        /// An open invitation's key, the invitation expired.
        case openInvitationExpired(profile: String, OpenInvitation)
        /// An open invitation's key, every place of the invitation taken.
        case openInvitationFull(profile: String, OpenInvitation)
        /// A pending invitation's key, the invitation expired.
        case invitationExpired(profile: String, Member)
        /// A revoked member's key asking to write or delete (or, on the server, to read before its view is recorded).
        case removed(profile: String, Member)

        /// The refusal as the device is told it.
        package var message: String {
            switch self {
            case .noAccess(let profile, let key, let verb):
                return "no profile \"\(profile)\" here that the key \(key) may " + (verb == .receive ? "write" : "read")
                    + ": ask the profile's admin to add this device"
            case .openInvitationExpired(let profile, let open):
                return "open invitation \(open.id) to \"\(profile)\" expired at \(open.expiresAt): ask \(open.invitedBy) for a new one"
            case .openInvitationFull(let profile, let open):
                return "all \(open.uses) places of open invitation \(open.id) to \"\(profile)\" are taken: ask \(open.invitedBy) for a new one"
            case .invitationExpired(let profile, let member):
                return "the invitation for \(member.name) to \"\(profile)\" expired at \(member.expiresAt ?? ""): "
                    + "ask \(member.addedBy) for a new one"
            case .removed(let profile, let member):
                return "access removed: \(member.revokedBy ?? "an admin") revoked \(member.name)'s access to \"\(profile)\""
            }
        }
    }

    /// The decision for `request` by the key with fingerprint `key` (`SHA256:…`) at `now` (ms since the epoch).
    package static func decide(_ request: Request, key: String, isAdminKey: Bool, profile: ProfileState,
                               now: Int64) -> Result<Admission, Refusal> {
        let noAccess = Refusal.noAccess(profile: request.profile, key: key, verb: request.verb)
        guard case .present(let membership) = profile else {
            return isAdminKey && [.upload, .receive].contains(request.verb) ? .success(Admission(grant: .creator, member: nil)) : .failure(noAccess)
        }
        // A key listed twice is judged by its active holder (as the access rule judges its commits).
        let holders = membership.members.values.filter { $0.keys.contains { $0.publicKey.fingerprint == key } }
            .sorted { rank($0.status) < rank($1.status) }
        // A link invitation's one-time key: it may fetch the profile and push the acceptance it signs.
        let invitation = membership.members.values.first { $0.status == .invited && $0.invitationKey?.fingerprint == key }
        guard let member = holders.first ?? invitation else {
            // An open invitation's one-time key: it may fetch the profile and push one joining member's acceptance.
            guard let open = membership.openInvitations.first(where: { $0.key.fingerprint == key }) else { return .failure(noAccess) }
            if let expiry = HLClock.parseInstant(open.expiresAt), now >= expiry {
                return .failure(.openInvitationExpired(profile: request.profile, open))
            }
            guard open.used(by: membership.members.values) < open.uses else {
                return .failure(.openInvitationFull(profile: request.profile, open))
            }
            return .success(Admission(grant: .invited, member: nil))
        }
        switch member.status {
        case .active:
            return .success(Admission(grant: .member, member: member.name))
        case .invited:
            if let expiresAt = member.expiresAt, let expiry = HLClock.parseInstant(expiresAt), now >= expiry {
                return .failure(.invitationExpired(profile: request.profile, member))
            }
            return .success(Admission(grant: .invited, member: member.name))
        case .revoked:
            return [.receive, .destroy].contains(request.verb) ? .failure(.removed(profile: request.profile, member))
                : .success(Admission(grant: .revoked, member: member.name))
        }
    }

    private static func rank(_ status: Member.Status) -> Int {
        switch status {
        case .active: return 0
        case .invited: return 1
        case .revoked: return 2
        }
    }
}

/// Why a concord server let a connection in: what its pre-receive hook holds the push to.
public enum ServerGrant: String, Sendable, Equatable {
    /// An active member: reads; pushes commits the validity rule accepts.
    case member
    /// A pending invitation's key: reads; pushes its own acceptance and nothing else.
    case invited
    /// The server's admin key creating a profile: fetches nothing, pushes its first history.
    case creator
    /// A revoked member's key: reads main as it was at the revocation (`RevocationView`); pushes nothing.
    case revoked
}
