import ConcordGit
import Foundation

extension ConcordStore {
    /// The value of `request`, now and after every change that may change it: the current value
    /// first, then a fresh one after every transaction of this store (a write, an import, a
    /// sharing call) and every merge or sync that touched one of the request's `observedKinds`
    /// (nil: after any change), including the commits of another process on this device (the
    /// `concord` CLI, `concord watch`, a plain `git pull`), seen within `StoreWatcher.pollInterval`
    /// (20 ms). A change that touched only other kinds does not read again.
    ///
    /// Each value is read once no writer (this process or another) holds the profile's lock, and
    /// holding it: a writer moves main before it writes the files, so a read made mid-write would
    /// pair the new commit with the old files.
    ///
    /// Values are read on the store's queue, like `read`, and coalesced: a change that comes
    /// while a read is queued or running is read once after it, and by default
    /// (`.bufferingNewest(1)`) a consumer slower than the changes gets only the newest value, never
    /// a stale one after it; so after a burst of writes the last value is the burst's end. Another
    /// policy (`.unbounded`) keeps every value read, not one per commit.
    ///
    /// The sequence ends when the consumer's task is cancelled or stops iterating (its watch is
    /// dropped, and the store's watching thread ends with the last one), and throws what the
    /// request's `fetch` threw, or what a sync learned (`ConcordError.accessRemoved`, `profileDeleted`).
    public func observe<R: StoreRequest>(
        _ request: R, bufferingPolicy: AsyncThrowingStream<R.Value, Error>.Continuation.BufferingPolicy = .bufferingNewest(1)
    ) -> AsyncThrowingStream<R.Value, Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: R.Value.self, bufferingPolicy: bufferingPolicy)
        let watch = Watch()
        let subscription = StoreSubscription(engine: engine, step: { profile in
            do {
                // A writer moves main before it writes the working tree, holding the profile's lock
                // throughout: read once no writer holds it, and hold it while reading, so the files
                // read are those of the commit read at. (Writes of this store run on this queue,
                // not during this read.) A move after the read wakes this observer again.
                let (head, value) = try profile.locked {
                    (try profile.history.head(), try request.fetch(StoreReader(profile: profile)))
                }
                continuation.yield(value)
                watch.read(at: head)
                return .wait
            } catch ConcordError.busy {
                // A writer held the lock for longer than `ProfileLock` waits: wait for it again.
                return .more
            } catch {
                continuation.finish(throwing: error)
                return .end
            }
        }, failed: { continuation.finish(throwing: $0) })
        watch.start(watcher, kinds: request.observedKinds, subscription: subscription, finish: { continuation.finish(throwing: $0) })
        continuation.onTermination = { _ in watch.stop() }
        subscription.poke()
        return stream
    }

    /// Whether the store's watching thread runs (some observer or change feed is listening): for tests.
    package var isWatching: Bool { watcher.isRunning }
}

/// One observer's or feed's place in the store's watcher: subscribed when it starts, told where
/// its reads were made, unsubscribed when its consumer goes or it ends.
final class Watch: @unchecked Sendable {
    // Safe: `id`, `watcher`, `subscription` and `stopped` are read and written only while holding `lock`.
    private let lock = NSLock()
    private var id: Int?
    private var watcher: StoreWatcher?
    private var stopped = false
    private var subscription: StoreSubscription?

    /// Subscribes to `watcher` for `kinds` (`everyMove`: woken by any move of main): its moves
    /// wake `subscription`; `finish` ends the consumer's sequence.
    func start(_ watcher: StoreWatcher, kinds: Set<String>?, everyMove: Bool = false, subscription: StoreSubscription,
               finish: @escaping @Sendable (Error) -> Void) {
        let id = watcher.subscribe(kinds: kinds, everyMove: everyMove, poke: { subscription.poke() }, fail: { error in
            subscription.end()
            finish(error)
        })
        let leave = lock.withLock {
            if !stopped { (self.id, self.watcher, self.subscription) = (id, watcher, subscription) }
            return stopped
        }
        if leave {
            subscription.end()
            watcher.unsubscribe(id)
        }
    }

    /// A read was made as of `head`.
    func read(at head: ObjectID?) {
        let (watcher, id) = lock.withLock { (self.watcher, self.id) }
        if let watcher, let id { watcher.read(id, at: head) }
    }

    /// The consumer went, or the sequence ended: no more reads, no more wake-ups. The watch lets
    /// go of its subscription and watcher, and the subscription of what reads, so nothing of the
    /// store (its queue, its watcher) outlives it through them.
    func stop() {
        let (watcher, id, subscription) = lock.withLock {
            stopped = true
            defer { (self.watcher, self.subscription) = (nil, nil) }
            return (self.watcher, self.id, self.subscription)
        }
        subscription?.end()
        if let watcher, let id { watcher.unsubscribe(id) }
    }
}
