import ConcordModel
import ConcordTrust
import Foundation

/// `concord identity delete`: a person's account deleted from this device. Every profile in the
/// identity's registry is handled in turn: one the person alone administers is destroyed
/// (`Sync.destroy`: every remote, then the copy); from every other one the person leaves
/// (their member file marked left, with no device keys, and synced, so the others see it), then
/// the copy goes. A profile whose remote cannot be reached keeps its copy and registry entry, and
/// the identity stays, so running it again finishes the job. Once every profile is done, the
/// identity's files go. Data already synced to other people's devices is not recalled.
package struct AccountDeletion {
    /// What became of one profile.
    public enum Outcome: Sendable, Equatable {
        /// The profile was deleted everywhere (the person was its only active Admin).
        case destroyed(String)
        /// The person left it (the departure reached the remote, or was not needed).
        case left(String)
        /// Nothing to do: the copy was already gone.
        case alreadyGone(String)
        /// Not done; the copy and the registry entry are kept for the next run.
        case notDone(String)
    }

    /// One profile handled, and how.
    public struct Step: Sendable, Equatable {
        /// The profile's name.
        public let profile: String
        /// Its directory on this device.
        public let path: String
        /// What became of it.
        public let outcome: Outcome
    }

    /// What `run` did to every profile and to the identity.
    public struct Report: Sendable {
        /// One step per profile, in the registry's order.
        public let steps: [Step]
        /// Whether the identity's files were removed (every profile was done).
        public let identityDeleted: Bool
        /// The files and directories removed from the identity's home.
        public let removedFiles: [String]
    }

    /// The files `Identity.create` and the rest of concord keep in a home directory.
    static let homeFiles = ["profiles.json", "known_hosts", "saved", "id_ed25519", "id_ed25519.pub", "identity.json"]

    let identity: Identity
    let environment: ConcordEnvironment

    /// A deletion of `identity`'s owner's account, with `environment`'s home and clock.
    public init(identity: Identity, environment: ConcordEnvironment) {
        (self.identity, self.environment) = (identity.acting(as: identity.owner), environment)
    }

    /// Handles every profile, then removes the identity when all are done.
    public func run() -> Report {
        let registry = ProfileRegistry(home: environment.home)
        var steps = [Step]()
        for entry in registry.entries() where entry.removed == nil {
            let outcome: Outcome
            do { outcome = try handle(entry, registry: registry) } catch {
                outcome = .notDone((error as? LocalizedError)?.errorDescription ?? "\(error)")
            }
            steps.append(Step(profile: entry.name, path: entry.path, outcome: outcome))
        }
        let done = !steps.contains { if case .notDone = $0.outcome { return true } else { return false } }
        guard done else { return Report(steps: steps, identityDeleted: false, removedFiles: []) }
        var removed = [String]()
        for name in Self.homeFiles {
            let file = environment.home.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: file.path) else { continue }
            do {
                try FileManager.default.removeItem(at: file)
                removed.append(file.path)
            } catch {
                steps.append(Step(profile: "", path: file.path, outcome: .notDone("cannot delete \(file.path): \(error.localizedDescription)")))
                return Report(steps: steps, identityDeleted: false, removedFiles: removed)
            }
        }
        // The home itself, when nothing else is left in it.
        if (try? FileManager.default.contentsOfDirectory(atPath: environment.home.path))?.isEmpty == true {
            try? FileManager.default.removeItem(at: environment.home)
        }
        return Report(steps: steps, identityDeleted: true, removedFiles: removed)
    }

    private func handle(_ entry: ProfileRegistry.Entry, registry: ProfileRegistry) throws -> Outcome {
        guard FileManager.default.fileExists(atPath: entry.path) else {
            try registry.unregister(path: entry.path)
            return .alreadyGone("no copy at \(entry.path) any more")
        }
        let profile = try Profile.open(at: URL(fileURLWithPath: entry.path), environment: environment)
        var members = try profile.members.list()
        var mine = members.first { $0.name == identity.member }
        let remotes = try profile.sync.remotes().map(\.name)
        let first = remotes.contains("origin") ? "origin" : remotes.first
        // The remotes that still hold the profile for this identity, and why each other one does not.
        var live = remotes, gone = [String]()
        if mine?.status == .active {
            // What the remotes hold decides, not this copy: an Admin added on any of them since it last synced
            // keeps the profile (a stale copy that "alone administers" must not destroy it for everyone, and a
            // destroy deletes it on every remote), and the departure goes on top of each remote's main (a merge
            // after it would be signed by a member who left). A remote that deleted the profile or removed this
            // identity's access says nothing about the others: each is synced.
            for each in remotes.filter({ $0 != first }) + (first.map { [$0] } ?? []) {
                do {
                    _ = try profile.sync.run(remote: each, as: identity)
                } catch ConcordError.accessRemoved {
                    (live, gone) = (live.filter { $0 != each }, gone + ["\(each): access had already been removed"])
                } catch ConcordError.profileDeleted {
                    (live, gone) = (live.filter { $0 != each }, gone + ["\(each): the profile was deleted"])
                } catch {
                    let reason = (error as? LocalizedError)?.errorDescription ?? "\(error)"
                    return .notDone("\(each) could not be synced, so who else administers it is not known (\(reason)); the copy is kept: run it again once \(each) can be reached")
                }
            }
            if live.isEmpty, !remotes.isEmpty {
                return try self.gone(profile, "departure not needed (\(gone.joined(separator: "; ")))")
            }
            members = try profile.members.list()
            mine = members.first { $0.name == identity.member }
        }
        let otherAdmins = members.contains { $0.name != identity.member && $0.role == .admin && $0.status == .active }
        if mine?.status == .active, mine?.role == .admin, !otherAdmins {
            let report = try profile.sync.destroy(as: identity, forget: true, only: live)
            if let failure = report.failed.first {
                return .notDone("could not delete it on \(failure.remote): \(failure.error.localizedDescription); the copy is kept")
            }
            let done = report.deleted.map { "\($0.remote): \($0.what)" } + gone
            return .destroyed(done.isEmpty ? "it had no remote" : done.joined(separator: "; "))
        }
        var departure = "not needed: \(identity.member) is not an active member"
        if mine?.status == .active { try profile.members.leave(as: identity) }
        if mine?.status == .active || (mine?.status == .revoked && mine?.revokedBy == identity.member) {
            // The departure (made now, or by a run that could not send it) goes to every remote that still
            // holds the profile.
            var said = [String]()
            for each in (first.map { [$0] } ?? []) + live.filter({ $0 != first }) where live.contains(each) {
                do {
                    _ = try profile.sync.run(remote: each, as: identity)
                    said.append("recorded on \(each)")
                } catch ConcordError.accessRemoved {
                    said.append("not needed on \(each): access had already been removed")
                } catch ConcordError.profileDeleted {
                    said.append("not needed on \(each): the profile was deleted")
                } catch {
                    return .notDone("the departure could not be sent to \(each) (\((error as? LocalizedError)?.errorDescription ?? "\(error)")); the copy is kept")
                }
            }
            said += gone.map { "not needed on \($0)" }
            departure = said.isEmpty ? "not recorded: the profile has no remote" : said.joined(separator: "; ")
        }
        try profile.removeLocalCopy(unsentTo: "", savingUnsent: false)
        return .left("departure \(departure)")
    }

    /// The copy of a profile the remote no longer lets this identity into (or deleted): removed.
    private func gone(_ profile: Profile, _ what: String) throws -> Outcome {
        if FileManager.default.fileExists(atPath: profile.root.path) { try profile.removeLocalCopy(unsentTo: "", savingUnsent: false) }
        return .left(what)
    }
}
