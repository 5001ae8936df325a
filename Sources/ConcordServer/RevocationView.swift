import ConcordGit
import ConcordKit
import ConcordModel
import Foundation

/// What a concord server shows a revoked member's key: the profile's main as it was at the
/// member's revocation, and nothing newer.
///
/// A revoked device has to learn that it was revoked from a commit an Admin signed — a server's
/// word alone ("access removed") would let any server make a device delete its copy. So its key
/// still logs in, and `concord serve` lets it read (and wait on) one ref:
/// `refs/namespaces/revoked-<hex of the member name>/refs/heads/main`, served with git's own
/// `GIT_NAMESPACE`, which makes `git-upload-pack` advertise that ref alone as `refs/heads/main`
/// and send only what it reaches. The device fetches it, checks it like any fetch, finds its
/// member revoked there, and ends (`ConcordError.accessRemoved`). It reads nothing it could not
/// have read just before the revocation; it writes nothing (`git-receive-pack` stays refused).
///
/// The post-receive of every push that changes the members deletes the view of a member who is
/// no longer revoked (invited again), and sets the ref for each member revoked at the new main who
/// has none: the oldest commit on the new main's first-parent line from which on the member
/// stays revoked and that still contains the main before the push. So the view descends from
/// every main the device fetched (it is a fast-forward for it, not a rewritten history), and shows
/// nothing of what others pushed after. Members' devices never see these refs (`transfer.hideRefs`).
enum RevocationView {
    /// The git namespace of `member`'s view: hex keeps any member name a valid ref component.
    static func namespace(member: String) -> String {
        "revoked-" + member.utf8.map { String(format: "%02x", $0) }.joined()
    }

    /// The full name of `member`'s view of main in a profile's repository.
    static func ref(member: String) -> String { ref(namespace: namespace(member: member)) }

    /// The name of main in git namespace `namespace`.
    static func ref(namespace: String) -> String { "refs/namespaces/\(namespace)/refs/heads/main" }

    /// The namespace root every view lives under; hidden from everyone else's fetches and pushes.
    static let hiddenRefs = "refs/namespaces/"

    /// Sets the view of every member revoked in `membership` (main's, at `tip`, pushed over `old`)
    /// that lacks a good one.
    static func record(_ membership: Membership, tip: ObjectID, old: ObjectID?, in repository: Repository) throws {
        // A member no longer revoked (invited again) loses the old view, so a later revocation gets its own.
        for member in membership.members.values where member.status != .revoked {
            if try repository.resolveReference(ref(member: member.name)) != nil { try repository.deleteReference(ref(member: member.name)) }
        }
        for member in membership.members.values where member.status == .revoked {
            let ref = ref(member: member.name)
            if let current = try repository.resolveReference(ref), try status(of: member.name, at: current, in: repository) == .revoked {
                continue
            }
            // The view must contain the main before this push only when this push revoked them; a
            // view recorded later (a server from before views, a failed post-receive) goes back to
            // where the revocation happened, whatever was pushed since.
            let revokedBefore = try old.map { try status(of: member.name, at: $0, in: repository) == .revoked } ?? false
            let point = try revocationPoint(of: member.name, from: tip, containing: revokedBefore ? nil : old, in: repository)
            try repository.updateReference(ref, to: point, expected: nil, message: "concord serve: \(member.name)'s revocation")
        }
    }

    /// The oldest commit on `tip`'s first-parent line from which on `member` is revoked and which
    /// contains `old` (when given). Member files are decoded only where their blob changes, so a
    /// long line of other changes costs one tree lookup per commit.
    static func revocationPoint(of member: String, from tip: ObjectID, containing old: ObjectID?,
                                in repository: Repository) throws -> ObjectID {
        let path = ProfilePaths.member(member)
        var point = tip
        var blob = try repository.entry(at: path, inTree: try repository.commit(tip).tree)?.id
        while let parent = try repository.commit(point).parents.first {
            if let old, !(try repository.isAncestor(old, of: parent)) { break }
            let parentBlob = try repository.entry(at: path, inTree: try repository.commit(parent).tree)?.id
            if parentBlob != blob {
                guard try status(of: member, at: parent, in: repository) == .revoked else { break }
                blob = parentBlob
            }
            point = parent
        }
        return point
    }

    /// `member`'s status at `commit`; nil when it has no readable member file there.
    static func status(of member: String, at commit: ObjectID, in repository: Repository) throws -> Member.Status? {
        let path = ProfilePaths.member(member)
        guard let entry = try repository.entry(at: path, inTree: try repository.commit(commit).tree), entry.kind == .blob else { return nil }
        return (try? Member.decode(try repository.blob(entry.id), path: path))?.status
    }
}
