import Synchronization

/// Answers remembered for questions about content-addressed objects (a tree, a commit, a file's
/// bytes): the same key always has the same answer, whichever repository or quarantine asked, so
/// an answer is reused as it is. Owned by whoever asks (an engine's `EngineCaches`, one replay),
/// never by the process. Bounded: at `limit` answers it starts over. Safe from any thread; two
/// threads asking at once may both compute (the answers are equal).
package final class ContentMemo<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let answers = Mutex<[Key: Value]>([:])
    private let limit: Int

    package init(limit: Int) {
        self.limit = limit
    }

    /// The answer for `key`, computed by `compute` the first time (a throw is not remembered).
    package func value(_ key: Key, _ compute: () throws -> Value) rethrows -> Value {
        if let known = answers.withLock({ $0[key] }) { return known }
        let value = try compute()
        answers.withLock { answers in
            if answers.count >= limit { answers.removeAll(keepingCapacity: true) }
            answers[key] = value
        }
        return value
    }

    /// How many answers are kept.
    package var count: Int { answers.withLock { $0.count } }
}

/// Member files decoded by their bytes: a replay reads the same files again for every decision
/// it judges, and an engine's replays for every merge they resolve.
package final class MemberFileMemo: Sendable {
    private let decoded = ContentMemo<[UInt8], Member?>(limit: 8_192)

    package init() {}

    /// The member `bytes` (at `path`) hold; nil when they do not read.
    package func member(_ bytes: [UInt8], path: String) -> Member? {
        decoded.value(bytes) { try? Member.decode(bytes, path: path) }
    }
}
