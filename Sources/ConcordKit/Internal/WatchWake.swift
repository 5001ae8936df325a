import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a store's watching thread sleeps on (`StoreWatcher`): a nudge from this process (a write,
/// a sync, a subscriber's first read), and, on Linux, a change in the directories where git keeps
/// main (inotify on `.git` and `.git/refs/heads`: a ref moved by another process, the CLI, `git pull`).
/// Made when the thread starts and closed when it ends, so a store nobody observes holds no descriptor.
///
/// Where inotify cannot watch (another system, no watch left, a directory missing), `watchesDirectories`
/// is false and the thread looks again every `StoreWatcher.pollInterval`, as it did before.
final class WatchWake: Sendable {
    /// The pipe a nudge writes one byte to (non-blocking both ends: a full pipe is already a nudge).
    private let nudges: (read: Int32, write: Int32)
    /// The inotify descriptor, or -1.
    private let events: Int32

    /// Ready to be nudged, and, where it can, watching `directories` for files written, renamed,
    /// made or removed in them (a ref's lock file renamed over it is one).
    init(watching directories: [String]) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw ConcordError.io(.open, path: directories.first ?? "", "the store's watcher: pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK); _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        nudges = (ends[0], ends[1])
        events = Self.watch(directories)
    }

    deinit {
        close(nudges.read)
        close(nudges.write)
        if events >= 0 { close(events) }
    }

    /// Whether a change in the directories wakes the thread (else it polls).
    var watchesDirectories: Bool { events >= 0 }

    /// Wakes the thread now, or at its next wait.
    func signal() {
        var byte: UInt8 = 1
        _ = write(nudges.write, &byte, 1)
    }

    /// Sleeps until a nudge, a change in the directories, or `timeout` (nil: no limit); what came is read.
    func wait(timeout: TimeInterval?) {
        var watched = [pollfd(fd: nudges.read, events: Int16(POLLIN), revents: 0)]
        if events >= 0 { watched.append(pollfd(fd: events, events: Int16(POLLIN), revents: 0)) }
        let milliseconds = timeout.map { Int32(max(0, $0 * 1000).rounded(.up)) } ?? -1
        _ = poll(&watched, nfds_t(watched.count), milliseconds)
        for entry in watched where entry.revents != 0 { Self.drain(entry.fd) }
    }

    /// Reads what `descriptor` holds (non-blocking) until it holds nothing.
    private static func drain(_ descriptor: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// An inotify descriptor watching every one of `directories`, or -1 where that cannot be.
    private static func watch(_ directories: [String]) -> Int32 {
        #if os(Linux) && !CONCORD_PORTABLE
        guard !directories.isEmpty else { return -1 }
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return -1 }
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
        for directory in directories where inotify_add_watch(descriptor, directory, mask) < 0 {
            close(descriptor)
            return -1
        }
        return descriptor
        #else
        return -1
        #endif
    }
}
