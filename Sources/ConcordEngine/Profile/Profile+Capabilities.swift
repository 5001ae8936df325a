import ConcordGit

/// The engine hands each capability what it needs, once: the profile (its root, kinds, environment
/// and lock, through `locked`) and its repository. A capability owns its logic and never reaches
/// into the engine for its parts; only this folder (the engine) touches `repository` and `lock()`.
extension Profile {
    /// This profile's records and logs.
    public var records: Records { Records(profile: self, repository: repository) }
    /// This profile's membership and sharing.
    public var members: Members { Members(profile: self, repository: repository) }
    /// This profile's remotes, sync, merge and deletion.
    public var sync: Sync { Sync(profile: self, repository: repository) }
    /// This device's index of the live records, for queries (`.git/concord/index.sqlite`).
    public var index: RecordIndex { RecordIndex(profile: self, repository: repository, connection: indexConnection) }
    /// This profile's history.
    public var history: History { History(profile: self, repository: repository) }
    /// Checks and repairs of this profile.
    public var recovery: Recovery { Recovery(profile: self, repository: repository) }
    /// The check of this profile's whole history (`concord verify`).
    public var verification: Verification { Verification(profile: self, repository: repository) }
    /// An Admin's restore of a remote whose main the rule refuses.
    public var remoteRestore: RemoteRestore { RemoteRestore(profile: self, repository: repository) }
    /// Finding and setting aside this device's commits the rule refuses.
    public var setAside: SetAside { SetAside(profile: self, repository: repository) }
    /// This device's clock for the profile (`.git/concord/clock`).
    var clock: LocalClock { LocalClock(repository: repository, wallClock: environment.wallClock) }
    /// The files a person sees and edits: reading records and logs, bringing a new tree in.
    package var workingTree: WorkingTree { WorkingTree(profile: self, repository: repository) }
}
