import ConcordModel
import Foundation

/// The verbs that look after a profile's copy rather than use it, for this package's command-line
/// tool: checking the git config and the unsent commits (`doctor`), re-checking the whole history
/// (`verify`), making a bare remote, cleaning up after an interrupted clone, and moving the copy to this build's data format (`upgradeFormat`). They open the
/// profile themselves and need no membership of it: a copy someone else made, one of an older
/// format, or one in trouble, is exactly what they are for. Everything else goes through a store.
package enum Maintenance {
    /// What `doctor` found and did: the config findings, the unsent commits that sync would refuse
    /// (nil: none, or no remote `remote`), and what setting them aside did (nil: not asked or nothing to do).
    package struct DoctorOutcome {
        package var findings: [DoctorFinding]
        package var unpublishable: UnpublishableCommits?
        package var setAside: SetAsideReport?
    }

    /// Checks (with `fix`, repairs) the git config plain git needs, and finds the unsent commits
    /// against remote `remote` that every other device would refuse; with `fix`, sets them aside
    /// as `identity` (`identity()` is asked only when something needs it).
    package static func doctor(at directory: URL, environment: ConcordEnvironment, remote: String, fix: Bool,
                               identity: () throws -> Identity) throws -> DoctorOutcome {
        let profile = try Profile.open(at: directory, environment: environment)
        let signer = fix ? try? identity() : nil
        let findings = try profile.recovery.doctor(fix: fix, as: signer)
        // Only against a remote this profile has: without one, nothing is published.
        let hasRemote = try profile.sync.remotes().contains { $0.name == remote }
        var outcome = DoctorOutcome(findings: findings, unpublishable: hasRemote ? try profile.setAside.find(remote: remote) : nil)
        if fix, outcome.unpublishable != nil {
            outcome.setAside = try profile.setAside.perform(remote: remote, as: try signer ?? identity())
            if outcome.setAside == nil { outcome.unpublishable = nil }
        }
        return outcome
    }

    /// Checks every commit of the copy's history against the rule (`Verification.run`).
    package static func verify(at directory: URL, environment: ConcordEnvironment) throws -> VerificationReport {
        try Profile.open(at: directory, environment: environment).verification.run()
    }

    /// Creates an empty bare repository at `path` for devices to sync through (`Sync.createBareRemote`).
    package static func createBareRemote(at path: URL) throws { try Sync.createBareRemote(at: path) }

    /// Removes what an interrupted clone left in `root` (`Sync.removeUnfinishedClone`).
    package static func removeUnfinishedClone(at root: URL, madeDirectory: Bool) {
        Sync.removeUnfinishedClone(at: root, madeDirectory: madeDirectory)
    }

    /// Moves the copy to this build's data format in one commit signed by `identity`, an Admin (`Records.upgradeFormat`).
    package static func upgradeFormat(at directory: URL, environment: ConcordEnvironment, as identity: Identity) throws -> FormatUpgrade {
        try Profile.open(at: directory, environment: environment).records.upgradeFormat(as: identity)
    }
}
