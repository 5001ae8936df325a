import ConcordGit
import ConcordModel

/// What `Verification.run()` found: every commit of the history checked and valid.
package struct VerificationReport: Sendable, Equatable {
    /// How many commits were checked (every commit reachable from HEAD).
    public let commits: Int
    /// The commit the check started from, or nil for a profile with no commit.
    public let head: String?
}

/// The whole history of a profile checked with the same rule every fetched commit passes
/// (`IncomingCheck`: the access rule, then the structural rule), from its first commit to HEAD,
/// each commit against the membership and kinds of its parent. A sync checks only what is new
/// (commits reachable from HEAD or the remote-tracking ref were checked when they arrived or were
/// written here); this is the check from scratch, e.g. after copying a profile by other means.
package struct Verification {
    let profile: Profile
    let repository: Repository

    /// Checks every commit; throws `ConcordError.unauthorizedCommit` or `.invalidCommit` naming
    /// the first invalid one (parents first).
    public func run() throws -> VerificationReport {
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else {
            return VerificationReport(commits: 0, head: nil)
        }
        let count = try IncomingCheck(repository: repository, profileID: profile.info.id, caches: profile.caches).verify(tip: head, known: [])
        return VerificationReport(commits: count, head: head.hex)
    }
}
