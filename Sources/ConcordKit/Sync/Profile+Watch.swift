import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// Something `watch` did or saw.
public enum WatchEvent: Sendable {
    case started(remote: String, interval: Double)
    case synced(SyncReport)
    /// The remote became unreachable (reported once per outage): what could not be reached and why,
    /// with no `offline:` of its own (a client names the event).
    case offline(String)
    /// The remote is reachable again.
    case online
    case failed(String)
    case stopped
}
