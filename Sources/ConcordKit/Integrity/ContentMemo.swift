import Foundation

/// Answers remembered by this process for questions about content-addressed objects (a tree, a
/// commit, a file's bytes): the same key always has the same answer, whichever repository or
/// quarantine asked, so an answer is reused as it is. Bounded: at `limit` answers it starts over.
/// Safe from any thread; two threads asking at once may both compute (the answers are equal).
final class ContentMemo<Key: Hashable & Sendable, Value>: @unchecked Sendable {   // unchecked: `answers` under `lock`
    private let lock = NSLock()
    private var answers = [Key: Value]()
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// The answer for `key`, computed by `compute` the first time (a throw is not remembered).
    func value(_ key: Key, _ compute: () throws -> Value) rethrows -> Value {
        if let known = lock.withLock({ answers[key] }) { return known }
        let value = try compute()
        lock.withLock {
            if answers.count >= limit { answers.removeAll(keepingCapacity: true) }
            answers[key] = value
        }
        return value
    }
}
