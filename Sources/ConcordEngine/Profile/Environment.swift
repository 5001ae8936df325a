import ConcordGit
import ConcordModel
import Foundation

/// Where this device keeps its identity and which clock it uses: read once from the process
/// environment (`CONCORD_HOME`, `CONCORD_CLOCK`) or given explicitly by an embedding app.
public struct ConcordEnvironment: Sendable {
    /// The identity directory (`CONCORD_HOME`, default `~/.concord`).
    public var home: URL
    /// The wall clock in Unix milliseconds.
    public var wallClock: @Sendable () -> Int64
    /// The `concord` executable that plain git should run as the merge driver; nil leaves the
    /// repository's merge-driver config alone (an embedding app may not ship the CLI).
    public var driverExecutable: String?
    /// Seconds a remote may send nothing before a sync or clone gives up on it as offline
    /// (`CONCORD_NETWORK_TIMEOUT`, default 30); the profile lock is never held longer for it.
    public var networkTimeout: TimeInterval = 30
    /// Seconds a write waits for git's `.git/index.lock` (held by a `git commit` or `git add` in
    /// the profile's folder, for milliseconds as a rule) before failing with
    /// `ConcordError.gitIndexLocked` (`CONCORD_GIT_LOCK_TIMEOUT`, default 10). The lock is never
    /// removed for its age.
    public var gitLockTimeout: TimeInterval = 10
    /// Test-only fault (`CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE=1`, read nowhere else): once a
    /// write, merge or set-aside has moved the branch, putting the new index in place fails, as a
    /// disk error there would — the files are written, the index is not, and the next command
    /// finishes the update. It stands in for what git holding `index.lock` did before issue 42
    /// (concord now holds that lock across the whole sequence), so the recovery stays tested.
    package var failIndexAfterBranchMove = false
    /// For the bench's comparison (B10O): a store's watcher looks every 20 ms instead of being told
    /// of changes by the kernel (what it does where inotify cannot watch).
    package var watchesByPolling = false
    /// A private key file ssh remotes are offered when they refuse this device's key: set by
    /// `Members.accept` to a link invitation's one-time key for its clone and acceptance push (a
    /// concord server knows that key, and not yet this device's); nil otherwise.
    public var invitationLoginKey: String?
    /// Cuts the connections Concord opens itself for the profiles opened with this environment (a
    /// check of the remote's refs): a `SyncEngine` stops a profile's thread with it. Nil: none is cut.
    package var transferCancellation: TransferCancellation?

    /// An environment with `home` for the identity and registry, a wall clock (the system's by default) and the merge driver's path.
    public init(home: URL, wallClock: @escaping @Sendable () -> Int64 = ConcordEnvironment.systemClock,
                driverExecutable: String? = nil) {
        self.home = home
        self.wallClock = wallClock
        self.driverExecutable = driverExecutable
    }

    /// The environment of this process. `CONCORD_CLOCK` (an ISO-8601 UTC instant such as
    /// `2026-01-01T10:00:00.001Z`) fixes the clock: a test aid for replaying "10:00 on device A".
    /// `driverExecutable` is this running program when it is the `concord` CLI.
    public static func fromProcess(driverExecutable: String? = nil) throws -> ConcordEnvironment {
        try from(variables: ProcessInfo.processInfo.environment, driverExecutable: driverExecutable)
    }

    /// The environment `variables` describe (`CONCORD_HOME`, `HOME`, `CONCORD_CLOCK`,
    /// `CONCORD_NETWORK_TIMEOUT`, `CONCORD_GIT_LOCK_TIMEOUT`), as `fromProcess` reads this process's:
    /// for a client that runs commands for another environment than its own (the CLI's commands in
    /// a test's process).
    public static func from(variables: [String: String], driverExecutable: String? = nil) throws -> ConcordEnvironment {
        let home: URL
        if let path = variables["CONCORD_HOME"], !path.isEmpty {
            home = URL(fileURLWithPath: path)
        } else {
            let userHome = variables["HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
                ?? FileManager.default.homeDirectoryForCurrentUser
            home = userHome.appendingPathComponent(".concord")
        }
        var environment = ConcordEnvironment(home: home, driverExecutable: driverExecutable)
        if let fixed = variables["CONCORD_CLOCK"], !fixed.isEmpty {
            guard let millis = HLClock.parseInstant(fixed) else {
                throw ConcordError.invalidInput(.badSetting, 
                    "CONCORD_CLOCK=\(fixed) is not an ISO-8601 UTC instant: use e.g. 2026-01-01T10:00:00.001Z or unset it")
            }
            environment.wallClock = { millis }
        }
        if let text = variables["CONCORD_NETWORK_TIMEOUT"], !text.isEmpty {
            guard let seconds = TimeInterval(text), seconds > 0, seconds <= 86_400 else {
                throw ConcordError.invalidInput(.badSetting, "CONCORD_NETWORK_TIMEOUT=\(text) is not a number of seconds (0–86400): use e.g. 30 or unset it")
            }
            environment.networkTimeout = seconds
        }
        if let text = variables["CONCORD_GIT_LOCK_TIMEOUT"], !text.isEmpty {
            guard let seconds = TimeInterval(text), seconds >= 0, seconds <= 3_600 else {
                throw ConcordError.invalidInput(.badSetting, "CONCORD_GIT_LOCK_TIMEOUT=\(text) is not a number of seconds (0–3600): use e.g. 10 or unset it")
            }
            environment.gitLockTimeout = seconds
        }
        environment.failIndexAfterBranchMove = variables["CONCORD_TEST_FAIL_INDEX_AFTER_BRANCH_MOVE"] == "1"
        return environment
    }

    /// The system's wall clock, in milliseconds since 1970.
    public static let systemClock: @Sendable () -> Int64 = {
        Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
    }
}
