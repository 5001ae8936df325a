import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Work split into one contiguous share per core (at most 8), for bulk jobs: hashing or encoding
/// thousands of records, creating thousands of files.
public enum Parallel {
    package static let cores = max(1, min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 8))

    /// `body` run on each share of `0..<count` (one share when there are fewer than
    /// `minimumPerShare` items per core), results in share order.
    public static func shares<Part: Sendable>(of count: Int, minimumPerShare: Int = 256,
                                              _ body: @Sendable (Range<Int>) -> Part) -> [Part] {
        let threads = max(1, min(cores, count / max(1, minimumPerShare)))
        guard threads > 1 else { return [body(0..<count)] }
        let share = (count + threads - 1) / threads
        let parts = Slots<Part?>(count: threads, initial: nil)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            let start = min(count, thread * share)
            parts[thread] = body(start..<min(count, start + share))
        }
        return parts.values.map { $0! }
    }

    /// `items.map(transform)`, computed in shares. Inlinable, so that it is specialized for the
    /// caller's types: called generically, the per-item work costs several times more.
    @inlinable
    public static func map<Element: Sendable, Result: Sendable>(_ items: [Element], minimumPerShare: Int = 256,
                                                                _ transform: @Sendable (Element) -> Result) -> [Result] {
        let parts = shares(of: items.count, minimumPerShare: minimumPerShare) { range in
            var part = [Result]()
            part.reserveCapacity(range.count)
            for index in range { part.append(transform(items[index])) }
            return part
        }
        guard parts.count > 1 else { return parts.first ?? [] }
        var results = [Result]()
        results.reserveCapacity(items.count)
        for part in parts { results.append(contentsOf: part) }
        return results
    }
}

/// Slots that concurrent workers fill at distinct indices (each index written by one worker only).
/// The storage is allocated once and written through a pointer: a Swift array's mutating access
/// (even `withUnsafeMutableBufferPointer`) moves its buffer out for the duration, which corrupts
/// the heap when two threads do it at once.
private final class Slots<Value>: @unchecked Sendable {   // unchecked: each index written by one worker, read after all have joined
    private let storage: UnsafeMutableBufferPointer<Value>
    package init(count: Int, initial: Value) {
        storage = .allocate(capacity: count)
        storage.initialize(repeating: initial)
    }
    deinit {
        storage.deinitialize()
        storage.deallocate()
    }
    subscript(index: Int) -> Value {
        get { storage[index] }
        set { storage[index] = newValue }
    }
    package var values: [Value] { Array(storage) }
}
