import ConcordModel
import Foundation

/// Something a `SyncEngine` did or saw for one profile, in the order it happened.
public enum SyncEvent: Sendable {
    /// The profile's thread began: it checks `remote` every `interval` seconds.
    case started(remote: String, interval: Double)
    /// A sync ended well, with what it did.
    case synced(SyncReport)
    /// Writes of this device's member that the merges of the last sync left out (the report's
    /// `yours`), told right after its `synced` event so an app can show them apart.
    case lostWrites([LostEdit])
    /// The remote became unreachable (reported once per outage): what could not be reached and why,
    /// with no `offline:` of its own (a client names the event).
    case offline(String)
    /// The remote is reachable again.
    case online
    /// A sync or check failed (reported once until the failure changes or clears); it is retried
    /// after a delay that doubles each time.
    case failed(String)
    /// The remote revoked this device's member: the profile's thread has ended, and the engine
    /// applied the removal policy (the copy deleted, its unsent edits saved, unless kept).
    case accessRemoved(CopyRemoval)
    /// An Admin deleted the profile: handled as `accessRemoved`.
    case profileDeleted(CopyRemoval)
    /// The engine was stopped: the profile's thread has ended between two syncs.
    case stopped

    /// Whether this is the profile's last event (its thread has ended).
    public var isLast: Bool {
        switch self {
        case .stopped, .accessRemoved, .profileDeleted: true
        default: false
        }
    }
}

/// Where one profile of a `SyncEngine` stands, as its status stream tells it.
public struct SyncProgress: Sendable {
    /// What the profile's thread is doing.
    public enum Phase: Sendable, Equatable {
        /// Waiting for local commits or the remote's next move.
        case idle
        /// A sync is in progress.
        case syncing
        /// The remote cannot be reached; local commits are kept and sent once it answers.
        case offline
        /// The thread has ended (the engine stopped, or the copy was removed: see `removal`).
        case stopped
    }

    /// The profile's directory, as the engine was given it (standardized).
    public let profile: URL
    /// The remote it syncs with.
    public let remote: String
    /// What its thread is doing now.
    public internal(set) var phase: Phase = .idle
    /// Commits this device has that the remote lacks, as far as the last fetch knows.
    public internal(set) var pendingCommits = 0
    /// When this device last synced with the remote, if ever (to the millisecond).
    public internal(set) var lastSync: Date?
    /// The last failure, until a sync or check succeeds again, as a typed error (nil too for a
    /// failure that is not a `ConcordError`: `lastErrorMessage` has its line).
    public internal(set) var lastError: ConcordError?
    /// The last failure's one line, until a sync or check succeeds again.
    public internal(set) var lastErrorMessage: String?
    /// True when this device's main equals the remote's, as of the last time the remote answered.
    public internal(set) var isFullySynced = false
    /// What the engine did with the copy when the remote removed it (then `phase` is `.stopped`).
    public internal(set) var removal: CopyRemoval?

    init(profile: URL, remote: String) {
        (self.profile, self.remote) = (profile, remote)
    }

    /// Sets (`error`) or clears (nil) the last failure.
    mutating func failed(_ error: Error?) {
        lastError = error as? ConcordError
        lastErrorMessage = error.map { (($0 as? LocalizedError)?.errorDescription) ?? "\($0)" }
    }

    /// Whether `other` tells anything new (the stream skips repeats).
    func differs(from other: SyncProgress) -> Bool {
        phase != other.phase || pendingCommits != other.pendingCommits || lastSync != other.lastSync || lastErrorMessage != other.lastErrorMessage
            || isFullySynced != other.isFullySynced || (removal == nil) != (other.removal == nil)
    }
}
