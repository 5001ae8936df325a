import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.ProcessMemory
import Foundation
import Synchronization

/// Exit code for "the remote could not be reached" (documented in docs/cli.md).
let offlineExitCode: Int32 = 3

/// A change a merge left out because its author lost the rights to make it concurrently.
func leftOutSentence(_ change: LeftOutChange) -> String {
    let cause = switch change.cause {
    case .rightsLowered: "the revocation or demotion of \(change.member) made concurrently"
    case .keyRemoved(let fingerprint): "the removal of the key that signed it (\(fingerprint)) on the main line"
    case .kindsChanged: "the kinds where it lands, which do not let \(change.member) write it"
    }
    return "\(change.path): \(change.member)'s change (commit \(change.commit.prefix(7))) lost to \(cause); it stays in history "
        + "(concord history \(change.path))"
}

/// A member two Admins added at once with different keys.
func contestedSentence(_ name: String) -> String {
    "\(name) was added on two devices at once with different keys; neither is admitted (\(name) is left revoked) — an Admin "
        + "adds or invites \(name) again"
}

func syncLine(_ report: SyncReport) -> String {
    "synced with \(report.remote): received \(report.received) commits, sent \(report.sent), "
        + "\(report.changedFiles.count) files changed, \(report.resolved.count) conflicts resolved"
}

func failOnUnresolved(_ unresolved: [UnresolvedFile]) throws {
    guard !unresolved.isEmpty else { return }
    for file in unresolved {
        let saved = file.savedAs.map { "; the other version is saved in \($0)" } ?? ""
        writeError("concord: unresolved: \(file.path): \(file.reason)\(saved) — fix \(file.path), then commit it with concord put\n")
    }
    throw ExitCode(ExitStatus.failure)
}

/// Ctrl-C or SIGTERM during a clone: what the clone wrote is removed, as when it fails, and the
/// process exits (130 or 143). Only for a target that was missing or empty (anything else is
/// refused by the clone, and is not touched here). A clone killed outright (SIGKILL) leaves
/// `.git/concord/cloning` naming its pid: the next clone into the directory removes what it left.
///
/// The signal is handled on another thread while the clone goes on: the handler and the clone's
/// end take one lock, so a clone that finished is left whole (the signal then ends nothing), and
/// one that did not is removed until nothing of it comes back (the clone may still be writing its
/// files) before the process exits, without the clone ever finishing in between.
final class CloneInterruption {
    private let sources: [Int32: any DispatchSourceSignal]
    /// Whether the clone is whole; a signal's handler holds it until the process exits.
    private let finished = Finished()

    private final class Finished: Sendable {
        let flag = Mutex(false)
    }

    init?(_ target: URL) {
        guard CommandContext.current.ownsProcess else { return nil }   // a run in another program's process
        let manager = FileManager.default
        let existed = manager.fileExists(atPath: target.path)
        if existed, !((try? manager.contentsOfDirectory(atPath: target.path))?.isEmpty ?? false) { return nil }
        sources = Dictionary(uniqueKeysWithValues: [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            return (number, DispatchSource.makeSignalSource(signal: number, queue: .global()))
        })
        for (number, source) in sources {
            source.setEventHandler { [finished] in
                finished.flag.withLock { finished in   // held until the process exits: the clone cannot finish meanwhile
                    guard !finished else { return }
                    var quiet = 0
                    while quiet < 3 {
                        Maintenance.removeUnfinishedClone(at: target, madeDirectory: !existed)
                        usleep(2_000)
                        let left = (try? manager.contentsOfDirectory(atPath: target.path)) ?? []
                        quiet = left.isEmpty ? quiet + 1 : 0
                    }
                    writeError("concord: clone interrupted; nothing was left in \(target.path)\n")
                    _exit(128 + number)
                }
            }
            source.resume()
        }
    }

    /// The clone is whole: a signal from now on ends the process as usual, and removes nothing.
    func cancel() {
        finished.flag.withLock { $0 = true }
        for source in sources.values { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
