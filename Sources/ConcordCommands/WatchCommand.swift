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
        let store = try profile.open(syncingOnItsQueue: false)
        let engine = SyncEngine(identity: store.identity, environment: store.environment)
        try engine.add(store, remote: remote, interval: interval, keepCopy: keep)
        // Signals only stop the engine: each profile's thread finishes what it is doing, then ends.
        var sources = [DispatchSourceSignal]()
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { engine.stop() }
            source.resume()
            sources.append(source)
        }
        // ...and never on the engine's threads, which inherit this thread's mask: a signal delivered
        // there would interrupt the poll or sync in progress (libssh2's poll() returns EINTR, which it
        // reports as a timeout), and the watch would report "offline" just before it stops. Other
        // threads take the signal instead.
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGINT)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        defer { withExtendedLifetime(sources) {} }
        let events = engine.events()
        let ended = DispatchSemaphore(value: 0)
        Task.detached { [json] in
            // Until the profile's last event: stopped, or its copy removed.
            for await event in events {
                Self.emit(event.kind, json: json)
                if event.kind.isLast { break }
            }
            ended.signal()
        }
        engine.start()
        ended.wait()
        engine.stop()
        // The same error `sync` throws: "access removed: … (this device's copy was deleted; …)", exit 4.
        if let removal = engine.progress(of: store.directory)?.removal { throw removal.error }
    }

    private static func emit(_ event: SyncEvent, json: Bool) {
        let time = HLClock.formatInstant(ConcordEnvironment.systemClock())
        let line: (name: String, text: String, fields: EventOutput.Fields)? = {
            switch event {
            case .started(let remote, let interval):
                return ("started", "watching \(remote) every \(interval) s", .remote(remote))
            case .synced(let report):
                // The member's own writes that merges left out are told here too, as by `sync`.
                let told = report.yours.map { "; " + ConflictPhrasing.yours($0, utc: false) }.joined()
                return ("synced", syncLine(report) + told, .synced(SyncOutput(report)))
            case .offline(let message): return ("offline", message, .message(message))
            case .online: return ("online", "the remote is reachable again", .none)
            case .failed(let message): return ("error", message, .message(message))
            // The copy's removal is the command's error (stderr, exit 4); the event says what the remote said.
            case .accessRemoved(let removal), .profileDeleted(let removal):
                let message = removal.cause.localizedDescription
                return ("error", message, .message(message))
            case .stopped: return ("stopped", "stopped", .none)
            // Told on the `synced` line already.
            case .lostWrites: return nil
            }
        }()
        guard let (name, text, fields) = line else { return }
        if json {
            guard let object = try? JSONValueEncoder().encode(EventOutput(event: name, time: time, fields: fields)) else { return }
            writeOutput(Data(object.canonicalLine() + [0x0A]))
        } else {
            writeOutput(Data("\(time) \(name): \(text)\n".utf8))
        }
    }
}

/// One line of `concord watch --json`: the event, its time, and the event's fields beside them (a
/// `synced` event's are those of `concord sync --json`).
struct EventOutput: Encodable {
    enum Fields {
        case none
        case remote(String)
        case message(String)
        case synced(SyncOutput)
    }

    private enum Key: String, CodingKey { case event, time, remote, message }

    let event: String
    let time: String
    let fields: Fields

    func encode(to encoder: any Encoder) throws {
        if case .synced(let report) = fields { try report.encode(to: encoder) }
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(event, forKey: .event)
        try container.encode(time, forKey: .time)
        switch fields {
        case .remote(let remote): try container.encode(remote, forKey: .remote)
        case .message(let message): try container.encode(message, forKey: .message)
        case .none, .synced: break
        }
    }
}
