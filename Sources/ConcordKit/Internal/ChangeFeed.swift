import ConcordGit
import ConcordModel
import Foundation

extension ConcordStore {
    /// The profile's changes, one event per commit this device's main went through: every commit
    /// after `token` (nil: from the first commit, along main's first-parent chain) up to main,
    /// oldest first, each with what it changed against the commit before it on that way
    /// (`CommitChange`: records added, updated and deleted, log entries appended, members who
    /// joined, changed role, were revoked or left, and for a merge the writes it did not keep);
    /// then, live, the commits that come after, from this store, another process or a sync.
    /// Resume from the `token` of the last event an app handled.
    ///
    /// A sync's merge puts the remote's main first and this device's line second: its event is
    /// what it brought against this device's last commit, and the remote's commits it joins are
    /// not told one by one. When a commit of this device reached main through another device's
    /// merge (main fast-forwarded to it), the feed goes on from the token along the merge's side
    /// of it, so nothing is told twice.
    ///
    /// A token whose commit is no longer in main's history (set aside, rewound, or another
    /// profile's) throws `ConcordError.changeTokenNotInHistory`: start again from a snapshot of the
    /// records (`read`) and the token of main then. When a sync of this store learns that this
    /// device's access was removed or the profile deleted, the feed ends with that event.
    /// Events are read on the store's queue, up to `ChangeFeed.batch` commits per turn, and
    /// buffered without a limit (each is one commit: none may be dropped).
    public func changes(since token: ChangeToken?) -> AsyncThrowingStream<ChangeEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChangeEvent.self, bufferingPolicy: .unbounded)
        let feed = ChangeFeed(token: token, identity: identity, continuation: continuation)
        let watch = Watch()
        let subscription = StoreSubscription(engine: engine, step: { profile in
            feed.step(profile, watch: watch)
        }, failed: { continuation.finish(throwing: $0) })
        watch.start(watcher, kinds: nil, everyMove: true, subscription: subscription, finish: { feed.end($0) })
        continuation.onTermination = { _ in watch.stop() }
        subscription.poke()
        return stream
    }
}

/// One change feed's progress: the commit it has told up to, and how it tells the next ones.
final class ChangeFeed: @unchecked Sendable {
    /// The most commits one turn on the store's queue tells: a feed from the first commit of a
    /// long history leaves the queue to writes and reads between turns.
    static let batch = 200

    // Safe: `last`, `pending`, `tables`, `keys` and `started` are touched only by `step`, which runs on
    // the store's serial queue; `continuation` is Sendable.
    private var last: ObjectID?
    /// The commits left to tell of the chain to `pending.head`, when a turn stopped at `batch`.
    private var pending: (head: ObjectID, commits: ArraySlice<(commit: Commit, parent: ObjectID?)>)?
    private var tables = KindsTables()
    /// The members' keys read along the walk, to name who signed each commit.
    private var keys: MemberKeysAtCommit?
    private let token: ChangeToken?
    private var started = false
    private let identity: Identity
    private let continuation: AsyncThrowingStream<ChangeEvent, Error>.Continuation

    init(token: ChangeToken?, identity: Identity, continuation: AsyncThrowingStream<ChangeEvent, Error>.Continuation) {
        (self.token, self.identity, self.continuation) = (token, identity, continuation)
    }

    /// One turn: the commits after the last one told, up to main (at most `batch`).
    func step(_ profile: Profile, watch: Watch) -> StoreSubscription.Next {
        do {
            let history = profile.history
            if !started {
                started = true
                if let token {
                    guard let id = ObjectID(hex: token.commit) else { throw ConcordError.changeTokenNotInHistory(token: token.commit) }
                    last = id
                }
            }
            let head = try history.head()
            watch.read(at: head)
            guard let head, head != last else { return .wait }
            let commits: ArraySlice<(commit: Commit, parent: ObjectID?)>
            if let pending, pending.head == head {
                commits = pending.commits
            } else if let chain = try history.commitsAfter(last, upTo: head) {
                commits = chain[...]
            } else {
                throw ConcordError.changeTokenNotInHistory(token: last?.hex ?? "")
            }
            pending = nil
            let keys = self.keys ?? history.memberKeys()
            self.keys = keys
            for (commit, parent) in commits.prefix(Self.batch) {
                continuation.yield(.commit(try history.commitChange(commit, from: parent, as: identity, tables: &tables, keys: keys)))
                last = commit.id
            }
            guard commits.count > Self.batch else { return .wait }
            pending = (head, commits.dropFirst(Self.batch))
            return .more
        } catch {
            continuation.finish(throwing: error)
            return .end
        }
    }

    /// Watching ended with `error`: access removed or the profile deleted end the feed with that
    /// event; anything else is thrown.
    func end(_ error: Error) {
        switch error as? ConcordError {
        case .accessRemoved(let member, let by, let profile):
            continuation.yield(.accessRemoved(member: member, by: by, profile: profile))
            continuation.finish()
        case .profileDeleted(let profile, let by, let at):
            continuation.yield(.profileDeleted(profile: profile, by: by, at: at))
            continuation.finish()
        default:
            continuation.finish(throwing: error)
        }
    }
}
