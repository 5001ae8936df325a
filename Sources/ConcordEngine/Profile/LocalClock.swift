import ConcordGit
import ConcordModel
import Foundation

/// The local clock: the last hybrid logical clock value this device issued or saw for a profile,
/// kept in `.git/concord/clock` so every write is stamped after everything it has seen.
///
/// The file's first line is the stamp; its second names the commit whose history the clock last
/// looked at. A write first takes in the commits HEAD gained since (`seeing(_:)`), so a write
/// after a plain `git pull`, which moves HEAD without a word to concord, is stamped after what was
/// pulled. A file of one line (written by an earlier version) has looked at no commit.
///
/// Part of the engine: a profile's clock is `Profile.clock`; a write and a merge read and move it
/// under the profile lock.
struct LocalClock {
    let repository: Repository
    /// This device's wall clock (`ConcordEnvironment.wallClock`), which bounds how far ahead a saved stamp may be.
    let wallClock: @Sendable () -> Int64

    private var clockPath: String { repository.gitDirectory + "concord/clock" }

    /// The last HLC this device issued or saw for this profile.
    func last() -> HLC? {
        readClock().stamp
    }

    /// How far ahead of this device's wall clock a stamp may be and still move the saved clock.
    /// A stamp further ahead (a device whose clock is wrong, or a forged year-9999 record) would
    /// pin every later local write at that time; instead the clock stays, and the record keeps
    /// its stamp: it wins merges by that stamp, and a local edit of it is stamped just after it
    /// (so the edit wins) without moving the clock for anything else.
    static let maxClockLead: Int64 = 24 * 3_600_000

    /// How many of HEAD's newest commits (by commit time) `seeing(_:)` reads when it cannot
    /// tell what HEAD gained since the clock last looked: the clock file names no commit (a new
    /// clone, a file from an earlier version), or one this repository no longer has or HEAD no
    /// longer descends from (history rewritten). Enough for any pull between two writes of one
    /// device in practice, and a bounded read (commit objects only, no trees) however long the history.
    static let clockLookBack = 1_000

    /// False for a stamp more than `maxClockLead` ahead of this device's wall clock.
    func mayReach(_ stamp: HLC) -> Bool {
        stamp.wallMillis <= wallClock() + Self.maxClockLead
    }

    /// Moves the clock to `stamp` unless it is there already or `stamp` is too far ahead
    /// (`mayReach`); `seen`, when given, becomes the commit the clock has looked at (a commit
    /// whose history, up to commits with stamps passed over, is covered by the saved stamp).
    func save(_ stamp: HLC?, seen: ObjectID? = nil) throws {
        let old = readClock()
        let reachable = stamp.flatMap { mayReach($0) ? $0 : nil }
        let next = [old.stamp, reachable].compactMap { $0 }.max()
        let looked = seen ?? old.seen
        guard next != old.stamp || looked != old.seen, let next else { return }
        let text = next.description + "\n" + (looked.map { $0.hex + "\n" } ?? "")
        try Data(text.utf8).write(to: URL(fileURLWithPath: clockPath), options: .atomic)
    }

    /// The last HLC this device issued or saw, once it has taken in the commits `head` has and the
    /// clock has not looked at: each one's `Concord-Clock` stamp is a receive event, as a sync's
    /// records are (`updateWorkingTree`), under the same bound (`maxClockLead`). Called before a
    /// write takes its stamp from it; costs a read of each new commit, none of the records.
    func seeing(_ head: ObjectID?) throws -> HLC? {
        let (saved, seen) = readClock()
        guard let head, head != seen else { return saved }
        try save(try newestStamp(from: head, since: seen), seen: head)
        return last()
    }

    /// The newest `Concord-Clock` stamp the clock may reach among the commits reachable from
    /// `head` and not from `seen`, or among `head`'s newest `clockLookBack` commits when `seen` is
    /// nil, missing or not an ancestor of `head`. A commit with no stamp (a merge by plain git) is
    /// passed over: its records' bytes are its parents', or concord's merge driver's merge of them,
    /// which keeps their stamps, and those parents are walked too or were seen before.
    private func newestStamp(from head: ObjectID, since seen: ObjectID?) throws -> HLC? {
        let commits: [Commit]
        if let seen, repository.contains(seen), try repository.isAncestor(seen, of: head) {
            commits = try repository.newCommits(from: head, excluding: [seen])
        } else {
            commits = try repository.recentCommits(from: head, count: Self.clockLookBack)
        }
        return commits.lazy.compactMap { CommitTrailers(message: $0.message).clock.flatMap(HLC.init(parsing:)) }
            .filter(mayReach).max()
    }

    /// The clock file's stamp and the commit it names; nil for what is missing or unreadable.
    private func readClock() -> (stamp: HLC?, seen: ObjectID?) {
        guard let text = try? String(contentsOfFile: clockPath, encoding: .utf8) else { return (nil, nil) }
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        return (lines.first.flatMap(HLC.init(parsing:)), lines.dropFirst().first.flatMap(ObjectID.init(hex:)))
    }
}
