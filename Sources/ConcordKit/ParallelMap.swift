import Dispatch
import Foundation

/// `map` over a large array with one contiguous share per core.
enum ParallelMap {
    static func map<Element: Sendable, Result: Sendable>(_ items: [Element], minimumPerThread: Int = 256,
                                                         _ transform: @Sendable (Element) -> Result) -> [Result] {
        let cores = min(8, max(1, ProcessInfo.processInfo.activeProcessorCount))
        let threads = max(1, min(cores, items.count / minimumPerThread))
        guard threads > 1 else { return items.map(transform) }
        let share = (items.count + threads - 1) / threads
        let parts = Parts<Result>(count: threads)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let start = thread * share, end = min(items.count, start + share)
            parts.set(thread, start < end ? items[start..<end].map(transform) : [])
        }
        return parts.joined()
    }
}

/// Each share's results, set by the one worker that computed it, read after all have finished.
private final class Parts<Result>: @unchecked Sendable {
    private var storage: UnsafeMutableBufferPointer<[Result]>

    init(count: Int) {
        storage = .allocate(capacity: count)
        storage.initialize(repeating: [])
    }

    deinit {
        storage.deinitialize()
        storage.deallocate()
    }

    func set(_ index: Int, _ value: [Result]) { storage[index] = value }

    func joined() -> [Result] { Array(storage.joined()) }
}
