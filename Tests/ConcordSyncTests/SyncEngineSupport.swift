import ConcordKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `store`'s bound engine, syncing every `interval` seconds, and a recorder of all it tells, started;
/// stopping it is the caller's.
func startedEngine(for store: ConcordStore, interval: Double) throws -> (SyncEngine, EngineRecorder) {
    let engine = try SyncEngine(for: store, interval: interval)
    let recorder = EngineRecorder(engine)
    engine.start()
    return (engine, recorder)
}

/// What a `SyncEngine`'s streams told, gathered by tasks the test starts, read with `waitUntil`.
/// Test code: every field is read and written under `lock`.
final class EngineRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var events = [SyncEngine.Event]()
    private var progress = [SyncProgress]()
    private var tasks = [Task<Void, Never>]()

    /// Starts gathering `engine`'s events and progress (call before `start()` to see everything).
    init(_ engine: SyncEngine) {
        let eventStream = engine.events(), progressStream = engine.progress()
        tasks = [
            Task.detached { [self] in for await event in eventStream { lock.withLock { events.append(event) } } },
            Task.detached { [self] in for await update in progressStream { lock.withLock { progress.append(update) } } },
        ]
    }

    func events(of profile: URL) -> [SyncEvent] {
        lock.withLock { events.filter { $0.profile == profile.standardizedFileURL }.map(\.kind) }
    }

    func progress(of profile: URL) -> [SyncProgress] {
        lock.withLock { progress.filter { $0.profile == profile.standardizedFileURL } }
    }

    /// The events' names (`synced`, `offline`…), for messages and order checks.
    func names(of profile: URL) -> [String] {
        events(of: profile).map { event in
            switch event {
            case .started: "started"
            case .synced: "synced"
            case .lostWrites: "lostWrites"
            case .offline: "offline"
            case .online: "online"
            case .failed(let message): "failed(\(message))"
            case .accessRemoved: "accessRemoved"
            case .profileDeleted: "profileDeleted"
            case .stopped: "stopped"
            }
        }
    }
}

/// A TCP port on 127.0.0.1 that takes connections and never says anything: an ssh remote there
/// holds a check or a sync until the network timeout (a dead host behind a live network).
final class SilentListener {
    let port: Int
    private let socket: Int32

    init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard socket >= 0, bound == 0, listen(socket, 16) == 0 else {
            if socket >= 0 { close(socket) }
            throw POSIXError(.EADDRINUSE)
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        (self.socket, port) = (socket, Int(UInt16(bigEndian: address.sin_port)))
    }

    deinit { close(socket) }
}

/// The names of this process's threads (`/proc/self/task/*/comm`).
func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}
