import ConcordGit
import ConcordModel
import ConcordRules
import ConcordTrust

/// What one engine remembers between the steps of its work, owned by it and handed to each step
/// that asks (no process-wide state): a store's profiles and its bound sync engine share one, a
/// sync engine's profiles one, a command or a server's push check one of its own. Every answer is
/// keyed by content (object ids, exact bytes), so an answer holds for any repository that asks and
/// is reused only for exactly what it was computed on; each memo is bounded, and what it keeps goes
/// with its engine. Safe from any thread.
package final class EngineCaches: Sendable {
    /// Signature verifications by the exact signature and signed bytes: what a fetch verified while
    /// copying (`SignaturePrefetch`), the check and the membership replay then ask.
    let signatures = SignatureMemo()
    /// The trees of the last policy merges, by repository and parents: a sync checks the merge it
    /// just made before pushing it.
    let policyMerges = PolicyMergeMemo()
    /// Commits' tree and parents, and their changes to member and invitation files: a replay walks
    /// the whole history for every merge of membership changes it resolves.
    package let commitLinks = ContentMemo<ObjectID, CommitLinks>(limit: 262_144)
    package let authorityChanges = ContentMemo<ObjectID, MembershipResolution.AuthorityChange?>(limit: 65_536)
    /// Memberships by the id of their members directory: a merge's check reads its parents' and
    /// their merge base's, and each is most often the one the commit before it had.
    package let memberships = ContentMemo<ObjectID, Membership>(limit: 1_024)
    /// Member files by blob id (nil: it does not read): a new members directory most often differs
    /// from one already read by one file.
    package let memberBlobs = ContentMemo<ObjectID, Member?>(limit: 65_536)
    /// Member files by their bytes, for the replay (ConcordRules).
    package let memberFiles = MemberFileMemo()
    /// The files the last merge or fast-forward changed, for the record index's catch-up.
    let treeChanges = RecentTreeChanges()

    package init() {}
}
