import ArgumentParser
import ConcordKit
import Dispatch
import Foundation
import Synchronization

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Keep syncing: whenever there are local commits or the remote moved. Stops cleanly on Ctrl-C / SIGTERM.")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The remote to sync with.") var remote = "origin"
    @Option(help: "Seconds between checks.") var interval: Double = 2
    @Flag(help: "Print one JSON object per line per event.") var json = false
    @Flag(help: "When an admin revokes this device's member, keep the local copy (default: delete it).") var keep = false

    func validate() throws {
        if !(interval > 0 && interval <= 3600) { throw ValidationError("--interval must be between 0 and 3600 seconds") }
    }

    func run() throws {
        let profile = try profile.open()
        let identity = try loadIdentity()
        let stop = StopFlag()
        // Signals only raise the flag: the loop finishes what it is doing, then exits.
        var sources = [DispatchSourceSignal]()
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.raise() }
            source.resume()
            sources.append(source)
        }
        // ...and never on this thread: a signal delivered here would interrupt the poll or sync in
        // progress (libssh2's poll() returns EINTR, which it reports as a timeout), and the watch
        // would report "offline" just before it stops. Other threads take the signal instead.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGINT)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        defer { withExtendedLifetime(sources) {} }
        try removingCopyIfRevoked(profile, remote: remote, keep: keep) {
            try profile.sync.watch(remote: remote, interval: interval, as: identity, shouldStop: stop.isRaised) { event in
                emit(event)
            }
        }
    }

    private func emit(_ event: WatchEvent) {
        let time = HLClock.formatInstant(ConcordEnvironment.systemClock())
        let (name, text, fields): (String, String, [String: JSONValue]) = {
            switch event {
            case .started(let remote, let interval):
                return ("started", "watching \(remote) every \(interval) s", ["remote": .string(remote)])
            case .synced(let report):
                var fields: [String: JSONValue] = syncJSON(report).objectValue ?? [:]
                fields["remote"] = .string(report.remote)
                // The member's own writes that merges left out are told here too, as by `sync`.
                let told = report.yours.map { "; " + ConflictPhrasing.yours($0, utc: false) }.joined()
                return ("synced", syncLine(report) + told, fields)
            case .offline(let message): return ("offline", message, ["message": .string(message)])
            case .online: return ("online", "the remote is reachable again", [:])
            case .failed(let message): return ("error", message, ["message": .string(message)])
            case .stopped: return ("stopped", "stopped", [:])
            }
        }()
        if json {
            var object = fields
            object["event"] = .string(name)
            object["time"] = .string(time)
            FileHandle.standardOutput.write(Data(JSONValue.object(object).canonicalLine() + [0x0A]))
        } else {
            FileHandle.standardOutput.write(Data("\(time) \(name): \(text)\n".utf8))
        }
    }
}

/// A flag raised from a signal handler's queue and read by the watch loop.
final class StopFlag: Sendable {
    private let raised = Mutex(false)

    func raise() { raised.withLock { $0 = true } }
    func isRaised() -> Bool { raised.withLock { $0 } }
}
