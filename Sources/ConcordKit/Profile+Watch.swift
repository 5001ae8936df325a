import ConcordModel
import ConcordTrust
import Foundation

/// Something `watch` did or saw.
public enum WatchEvent: Sendable {
    case started(remote: String, interval: Double)
    case synced(SyncReport)
    /// The remote became unreachable (reported once per outage).
    case offline(String)
    /// The remote is reachable again.
    case online
    case failed(String)
    case stopped
}

extension Profile {
    /// Keeps this profile in sync until `shouldStop` returns true: every `interval` seconds it
    /// checks cheaply whether there are local commits to send or the remote's main moved (reading
    /// only its ref list) and syncs when either is true. Writes made by other processes meanwhile
    /// are picked up by that check. Stops only between syncs, never inside a ref update.
    public func watch(remote: String = "origin", interval: Double, as identity: Identity,
                      shouldStop: () -> Bool, onEvent: (WatchEvent) -> Void) {
        onEvent(.started(remote: remote, interval: interval))
        var offline = false
        while !shouldStop() {
            do {
                if try needsSync(remote: remote, as: identity) {
                    let report = try sync(remote: remote, as: identity)
                    if offline { offline = false; onEvent(.online) }
                    onEvent(.synced(report))
                } else if offline {
                    offline = false
                    onEvent(.online)
                }
            } catch let error as ConcordError {
                if case .offline = error {
                    if !offline { onEvent(.offline(error.localizedDescription)) }
                    offline = true
                } else {
                    onEvent(.failed(error.localizedDescription))
                }
            } catch {
                onEvent(.failed("\(error)"))
            }
            let deadline = Date().addingTimeInterval(interval)
            while Date() < deadline, !shouldStop() { usleep(20_000) }
        }
        onEvent(.stopped)
    }
}
