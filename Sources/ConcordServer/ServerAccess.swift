import ConcordKit
import ConcordModel
import ConcordTrust

/// Who may open which profile on a concord server, as a pure function of the request, the
/// connecting key, the profile's membership at the server's main and the clock: no git, no I/O,
/// so `concord serve`, its tests and the docs all state the same rule.
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
enum ServerAccess {
    /// What the server holds under a profile name.
    enum ProfileState: Sendable {
        /// No repository, or one with no main yet.
        case absent
        /// The membership at the repository's main.
        case present(Membership)
    }

    /// A connection let in: why, and as which member (nil for the creator).
    struct Admission: Sendable, Equatable {
        let grant: ServerGrant
        let member: String?
    }

    /// The decision for `request` by the key with fingerprint `key` (`SHA256:…`).
    static func decide(_ request: ServeRequest, key: String, isAdminKey: Bool, profile: ProfileState,
                              now: Int64) -> Result<Admission, ServerRefusal> {
        let noAccess = ServerRefusal("no profile \"\(request.profile)\" here that the key \(key) may "
                                     + (request.verb == .receive ? "write" : "read") + ": ask the profile's admin to add this device")
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
                return .failure(ServerRefusal("open invitation \(open.id) to \"\(request.profile)\" expired at \(open.expiresAt): "
                                              + "ask \(open.invitedBy) for a new one"))
            }
            guard open.used(by: membership.members.values) < open.uses else {
                return .failure(ServerRefusal("all \(open.uses) places of open invitation \(open.id) to \"\(request.profile)\" are taken: "
                                              + "ask \(open.invitedBy) for a new one"))
            }
            return .success(Admission(grant: .invited, member: nil))
        }
        switch member.status {
        case .active:
            return .success(Admission(grant: .member, member: member.name))
        case .invited:
            if let expiresAt = member.expiresAt, let expiry = HLClock.parseInstant(expiresAt), now >= expiry {
                return .failure(ServerRefusal("the invitation for \(member.name) to \"\(request.profile)\" expired at \(expiresAt): "
                                              + "ask \(member.addedBy) for a new one"))
            }
            return .success(Admission(grant: .invited, member: member.name))
        case .revoked:
            return [.receive, .destroy].contains(request.verb) ? .failure(removed(member, profile: request.profile))
                : .success(Admission(grant: .revoked, member: member.name))
        }
    }

    /// The refusal a revoked member's key gets.
    static func removed(_ member: Member, profile: String) -> ServerRefusal {
        ServerRefusal("access removed: \(member.revokedBy ?? "an admin") revoked \(member.name)'s access to \"\(profile)\"")
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
