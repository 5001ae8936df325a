import ConcordGit
import Foundation

/// The one thread of a store that watches main move, for every observer and change feed of the
/// store (`observe`, `changes(since:)`): it runs while at least one is subscribed and ends when
/// the last one leaves.
///
/// It reads where main is (one ref read, ~20 µs, in a block on the store's queue: the store's one
/// engine, no `Profile` of the watcher's own) when the store's own
/// write, import, sharing call or sync tells it (`moved()`), so a local transaction reaches its
/// observers at once, and when another process (the `concord` CLI, `concord watch`, a plain `git
/// pull` or `git commit`) moved main: on Linux the kernel tells it (inotify on `.git` and
/// `.git/refs/heads`, `WatchWake`), so an idle store's thread sleeps and runs no timer; elsewhere,
/// or where inotify cannot watch, it looks every `pollInterval` (20 ms). Either way what it wakes
/// reads once that process let go of the profile's lock (its working tree is then written). For each
/// subscriber it compares the commit the subscriber last read at with main's (a tree diff that
/// skips unchanged directories, `History.changedKinds`) and wakes only those whose kinds changed;
/// a change feed is woken by any move (even a commit that changed no file).
final class StoreWatcher: @unchecked Sendable {
    // Safe: `subscribers`, `nextID`, `running`, `touching` and `ended` are read and written only while holding
    // `lock`; `statusHead` only by the watching thread, of which at most one runs (`running`); the store's
    // `Profile` only inside the thread's blocks on the store's queue (`engine`).
    private let lock = NSCondition()
    private var subscribers = [Int: Subscriber]()
    private var nextID = 0
    private var running = false
    /// The thread's block on the store's queue reads the profile now (`end` waits for this, not for
    /// a block still waiting for the queue, nor for the pokes and status news after it).
    private var touching = false
    /// Why the watcher ended for good (`end(_:)`): no thread starts again, and a subscriber is failed with it.
    private var ended: Error?
    /// The store's queue, whose engine the thread's looks run on.
    private let engine: ProfileQueue
    /// The store's status, read again when main moved and an app uses it; and where main was when it last was.
    private let status: StoreStatus
    private var statusHead: ObjectID?
    /// The profile's `.git` directory, whose refs the thread watches.
    private let gitDirectory: URL
    /// Whether the thread looks every `pollInterval` even where the kernel could tell it of changes (the bench's comparison).
    private let polling: Bool
    /// What the running thread sleeps on (nil while none runs): nudges from this process wake it.
    private var wake: WatchWake?
    /// How many times the thread looked at main: for tests (an idle store's thread does not).
    private var looks = 0
    /// Calls of this store that may commit, running now (`whileChanging`): the thread does not
    /// look meanwhile, and looks when the last one ends.
    private var localChanges = 0

    /// How often the thread reads main while nothing tells it of a move.
    static let pollInterval: TimeInterval = 0.02
    /// How many polls in a row may fail (a profile being replaced, say) before the subscribers are told the error.
    static let failuresTolerated = 50
    /// The thread's name.
    static let threadName = "concord-observe"

    /// The commit a subscriber last read at, once it has read.
    private enum Seen: Equatable {
        case unknown
        case at(ObjectID?)
    }

    /// One observer or feed: the kinds it reads (nil: all), whether any move of main wakes it
    /// (a feed: even a commit that changed no file), the commit it last read at (nil until its
    /// first read told it), what wakes it, and what ends it.
    private struct Subscriber {
        let kinds: Set<String>?
        let everyMove: Bool
        var seen: Seen
        let poke: @Sendable () -> Void
        let fail: @Sendable (Error) -> Void
    }

    /// A watcher of the profile in `directory` whose thread looks through `engine`, the store's
    /// queue, and keeps `status` current while it runs; `polling`: it looks every `pollInterval`.
    init(directory: URL, polling: Bool = false, status: StoreStatus, engine: ProfileQueue) {
        (self.gitDirectory, self.polling, self.status, self.engine) = (directory.appendingPathComponent(".git"), polling, status, engine)
    }

    /// Whether the watching thread runs (some observer or feed is subscribed): for tests.
    var isRunning: Bool { lock.withLock { running } }

    /// How many times the thread looked at main so far, and whether the kernel tells it of
    /// changes (else it polls): for tests.
    var looked: (count: Int, watchesDirectories: Bool) { lock.withLock { (looks, wake?.watchesDirectories ?? false) } }

    /// Runs `body`, a call of this store that may commit, and then looks. Meanwhile the thread does
    /// not look: woken by the kernel's news of that very commit, it would wait for the profile's
    /// lock, which the commit holds until it is done, and see it no sooner.
    func whileChanging<T>(_ body: () throws -> T) rethrows -> T {
        lock.withLock { localChanges += 1 }
        defer {
            lock.withLock { localChanges -= 1 }
            nudge()
        }
        return try body()
    }

    /// `whileChanging` for a call that suspends.
    func whileChanging<T>(_ body: () async throws -> T) async rethrows -> T {
        lock.withLock { localChanges += 1 }
        defer {
            lock.withLock { localChanges -= 1 }
            nudge()
        }
        return try await body()
    }

    /// Wakes the running thread, if one runs.
    private func nudge() {
        lock.withLock { wake }?.signal()
    }

    /// Subscribes a reader of `kinds` (nil: all): `poke` is called when main moved in a way that
    /// concerns it (`everyMove`: whenever main moved), `fail` when watching fails for good. Starts
    /// the thread if it is not running. The subscriber is not woken until it says where it read (`read(_:at:)`).
    func subscribe(kinds: Set<String>?, everyMove: Bool = false, poke: @escaping @Sendable () -> Void,
                   fail: @escaping @Sendable (Error) -> Void) -> Int {
        let (id, start, endedBy) = lock.withLock { () -> (Int, Bool, Error?) in
            nextID += 1
            if let ended = self.ended { return (nextID, false, ended) }
            subscribers[nextID] = Subscriber(kinds: kinds, everyMove: everyMove, seen: .unknown, poke: poke, fail: fail)
            defer { running = true }
            return (nextID, !running, nil)
        }
        if let endedBy {
            // Told off the caller's thread: it may be subscribing under a lock the failure takes too.
            DispatchQueue.global().async { fail(endedBy) }
        } else if start {
            Thread.detachNewThread { [self] in
                nameCurrentThread(Self.threadName)
                Thread.current.threadDictionary[Self.threadName] = threadMark
                watch()
            }
        }
        return id
    }

    /// Subscriber `id` read the profile as of `head` (its first read): from now on it is woken by moves past it.
    func read(_ id: Int, at head: ObjectID?) {
        lock.withLock {
            if subscribers[id]?.seen == .unknown { subscribers[id]?.seen = .at(head) }
        }
        nudge()
    }

    /// Subscriber `id` leaves; the thread ends once none is left.
    func unsubscribe(_ id: Int) {
        lock.withLock { _ = subscribers.removeValue(forKey: id) }
        nudge()
    }

    /// Main may have moved (this store wrote or synced): look now rather than at the next poll.
    func moved() {
        nudge()
    }

    /// Ends every subscriber with `error` (a sync of this store learned the copy's access was removed).
    func failAll(_ error: Error) {
        let failing = lock.withLock {
            defer { subscribers = [:] }
            return subscribers.values.map(\.fail)
        }
        for fail in failing { fail(error) }
        nudge()
    }

    /// Ends the watcher for good (the store was closed, or its copy removed): every subscriber is
    /// failed with `error`, so is any later one, and once this returns the thread touches the
    /// directory no more. It waits only for the thread's read of the profile running on the store's
    /// queue (a block still waiting for the queue reads nothing once it runs), never for what the
    /// thread tells after it (pokes, the status's `onChange` handlers, which may call the store);
    /// and not at all when called on that thread, or when not `waiting` (closed inside a write,
    /// whose lock the read waits for): the read then ends on its own.
    func end(_ error: Error, waiting: Bool = true) {
        let failing = lock.withLock {
            if ended == nil { ended = error }
            defer { subscribers = [:] }
            return subscribers.values.map(\.fail)
        }
        for fail in failing { fail(error) }
        nudge()
        lock.withLock {
            if waiting, !isWatchingThread { while touching { lock.wait() } }
        }
    }

    /// True on the watching thread.
    var isWatchingThread: Bool { Thread.current.threadDictionary[Self.threadName] as? String == threadMark }

    /// What the watching thread carries in its thread dictionary: `end` called on it does not wait for itself.
    private var threadMark: String { "\(ObjectIdentifier(self))" }

    /// The thread: look, wake whom a move concerns, wait for the next poll or a nudge; end when
    /// no subscriber is left.
    private func watch() {
        var failures = 0
        // Made before the first look: a nudge from then on is not lost (one before it needs none).
        let wake = try? WatchWake(watching: polling ? [] : [gitDirectory.path, gitDirectory.appendingPathComponent("refs/heads").path])
        lock.withLock { self.wake = wake }
        while true {
            let current: [Int: Subscriber]? = lock.withLock {
                if subscribers.isEmpty || ended != nil {
                    self.wake = nil
                    running = false
                    lock.broadcast()
                    return nil
                }
                // A call of this store is committing: it tells when it is done.
                if localChanges > 0 { return [:] }
                looks += 1
                return subscribers
            }
            guard let current else { return }
            guard !current.isEmpty else {
                sleep(wake, failing: failures > 0)
                continue
            }
            var told = [() -> Void]()
            let looked = Result { try engine.run { profile in try lookUnlessEnded(current, in: profile, telling: &told) } }
            for tell in told { tell() }
            do {
                try looked.get()
                failures = 0
            } catch {
                failures += 1
                if failures > Self.failuresTolerated {
                    failures = 0
                    failAll(error)
                }
            }
            sleep(wake, failing: failures > 0)
        }
    }

    /// Until the next look: until told, when the kernel tells of changes and the last look went
    /// well (not `failing`); else for at most `pollInterval`.
    private func sleep(_ wake: WatchWake?, failing: Bool) {
        guard let wake else {
            usleep(useconds_t(Self.pollInterval * 1_000_000))
            return
        }
        wake.wait(timeout: wake.watchesDirectories && !failing ? nil : Self.pollInterval)
    }

    /// `look`, in a block on the store's queue, unless the watcher ended while the block waited for
    /// the queue; `end` waits for it meanwhile (`touching`).
    private func lookUnlessEnded(_ current: [Int: Subscriber], in profile: Profile, telling told: inout [() -> Void]) throws {
        let live = lock.withLock { () -> Bool in
            guard ended == nil else { return false }
            touching = true
            return true
        }
        guard live else { return }
        defer {
            lock.withLock {
                touching = false
                lock.broadcast()
            }
        }
        try look(current, in: profile, telling: &told)
    }

    /// One look at main through the store's `profile`: every subscriber that read at another
    /// commit gets the kinds changed since, is marked as having seen main, and its wake-up is
    /// added to `told` when they concern it; so is the status's news.
    private func look(_ current: [Int: Subscriber], in profile: Profile, telling told: inout [() -> Void]) throws {
        let history = profile.history
        guard var head = try history.head() else { return }
        // The status is read last, once the lock was free and the diffs made (a sync meanwhile
        // tells a newer one, which this read then does not overwrite: it is read again next time).
        let statusDue = head != statusHead && status.isUsed
        defer {
            if statusDue {
                let reading = status.reading(from: profile.sync, remote: "origin")
                told.append { [self] in if !reading() { statusHead = nil } }
                statusHead = head
            }
        }
        guard current.values.contains(where: { $0.seen != .unknown && $0.seen != .at(head) }) else { return }
        // A writer moves main before it writes the working tree and the index, holding the
        // profile's lock throughout: once the lock is free, what main names is on disk to read.
        try profile.locked {}
        head = try history.head() ?? head
        var diffs = [ObjectID?: ChangedKinds]()
        for (id, subscriber) in current {
            guard case .at(let seen) = subscriber.seen, seen != head else { continue }
            var changed = ChangedKinds()
            if subscriber.everyMove {
                changed.other = true
            } else if let known = diffs[seen] {
                changed = known
            } else {
                changed = try history.changedKinds(from: seen, to: head)
                diffs[seen] = changed
            }
            let marked = lock.withLock {
                guard subscribers[id]?.seen == .at(seen) else { return false }
                subscribers[id]?.seen = .at(head)
                return true
            }
            if marked, changed.concerns(subscriber.kinds) { told.append(subscriber.poke) }
        }
    }
}

/// One observer's or feed's reads on the store's queue, coalesced: woken while a read is queued
/// or running, it reads once more after that one, never more; so a burst of writes costs a few
/// reads, and the last read sees the burst's end.
final class StoreSubscription: @unchecked Sendable {
    /// What a read asks for next.
    enum Next {
        /// Nothing until woken again.
        case wait
        /// Read again at once (a feed with more commits to tell).
        case more
        /// The subscription is over.
        case end
    }

    // Safe: `scheduled`, `again`, `ended`, `step` and `failed` are read and written only while holding `lock`.
    private let lock = NSLock()
    private var scheduled = false, again = false, ended = false
    private let engine: ProfileQueue
    /// What reads, and what is told a failure: dropped when the subscription ends, for they hold
    /// the consumer's continuation and its `Watch`, which holds this subscription.
    private var step: (@Sendable (Profile) -> Next)?
    private var failed: (@Sendable (Error) -> Void)?

    /// Reads with `step` on `engine`'s queue; `failed` is told when the profile cannot be had.
    init(engine: ProfileQueue, step: @escaping @Sendable (Profile) -> Next, failed: @escaping @Sendable (Error) -> Void) {
        (self.engine, self.step, self.failed) = (engine, step, failed)
    }

    /// Asks for a read: queued now, or after the one queued or running.
    func poke() {
        let start = lock.withLock {
            if ended { return false }
            if scheduled { again = true; return false }
            scheduled = true
            return true
        }
        if start { schedule() }
    }

    /// No read after this one; what reads is let go.
    func end() {
        // Let go of outside the lock: what they hold may end the consumer's sequence, which ends this again.
        let held = lock.withLock {
            ended = true
            defer { (step, failed) = (nil, nil) }
            return (step, failed)
        }
        withExtendedLifetime(held) {}
    }

    private func schedule() {
        engine.enqueue { [self] result in
            let (step, failed) = lock.withLock {
                again = false
                return ended ? (nil, nil) : (self.step, self.failed)
            }
            var next = Next.end
            if let step, let failed {
                switch result {
                case .success(let profile): next = step(profile)
                case .failure(let error): failed(error)
                }
            }
            let rerun = lock.withLock { () -> Bool in
                if next == .end || ended { ended = true; scheduled = false; return false }
                if next == .more || again { return true }
                scheduled = false
                return false
            }
            if rerun { schedule() } else if next == .end { end() }
        }
    }
}
