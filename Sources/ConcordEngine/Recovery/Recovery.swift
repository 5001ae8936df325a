import ConcordGit
import ConcordModel
import Foundation

/// One problem `concord doctor` found, and whether it was repaired.
package struct DoctorFinding: Sendable, Equatable {
    /// What is wrong, in one line.
    public let problem: String
    /// Whether `--fix` repaired it.
    public let fixed: Bool
    /// Why `--fix` could not repair it (the repair is a commit only an Admin may sign), or nil.
    public var notFixedBecause: String? = nil
}

/// Finding and repairing what keeps a profile usable: the checks of `doctor` here; the profile
/// lock, the checkout journal and crash repair (ProfileLock.swift, CheckoutJournal.swift) are
/// what every command runs through before it starts.
package struct Recovery {
    let profile: Profile
    let repository: Repository

    /// Checks what plain git needs to treat this profile like concord does: the merge driver
    /// config (git silently falls back to a text merge without it), the signing config, the
    /// allowed-signers file and `.gitattributes`. With `fix`, rewrites the config and signers file,
    /// and `.gitattributes`: in the working tree when the branch holds the right one, else in a
    /// commit signed by `identity`, which must be an active Admin's.
    public func doctor(fix: Bool, as identity: Identity? = nil) throws -> [DoctorFinding] {
        var problems = [String]()
        let driver = try gitCall { try repository.configString("merge.concord.driver") }
        if let driver {
            if let executable = MergeDriverConfig.executable(inCommand: driver), !FileManager.default.isExecutableFile(atPath: executable) {
                problems.append("merge.concord.driver runs \(executable), which no longer exists: plain git merges would fall back to a text merge")
            }
        } else {
            problems.append("merge.concord.driver is not set: plain git merges would fall back to a text merge")
        }
        if try gitCall({ try repository.configString("gpg.format") }) != "ssh" {
            problems.append("gpg.format is not ssh: git cannot check commit signatures")
        }
        let signers = try gitCall { try repository.configString("gpg.ssh.allowedSignersFile") }
        if signers.map({ !FileManager.default.fileExists(atPath: $0) }) ?? true {
            problems.append("the allowed-signers file is missing: git verify-commit cannot check signatures")
        }
        let attributes = FileManager.default.contents(atPath: profile.rootPath + ProfilePaths.gitattributes).map { String(decoding: $0, as: UTF8.self) }
        let staleAttributes = ".gitattributes does not match .concord/kinds.json: some record files would not use the concord merge driver"
        if attributes != profile.kinds.gitattributes() { problems.append(staleAttributes) }
        guard fix, !problems.isEmpty else { return problems.map { DoctorFinding(problem: $0, fixed: false) } }
        try profile.configureGit(members: try profile.members.list())
        let notFixedBecause = problems.contains(staleAttributes) ? try repairAttributes(as: identity) : nil
        let stillBroken = try doctor(fix: false).map(\.problem)
        return problems.map {
            let fixed = !stillBroken.contains($0)
            return DoctorFinding(problem: $0, fixed: fixed, notFixedBecause: fixed || $0 != staleAttributes ? nil : notFixedBecause)
        }
    }

    /// Puts `.gitattributes` back as `.concord/kinds.json` generates it: when the branch holds
    /// another one, in a commit signed by `identity`, which must be an active Admin's; then in the
    /// working tree. Nil when it did, else why not.
    private func repairAttributes(as identity: Identity?) throws -> String? {
        let bytes = Array(profile.kinds.gitattributes().utf8)
        let head = try gitCall { try repository.resolveReference("HEAD") }
        let committed = try head.flatMap { head in
            try gitCall { try repository.entry(at: ProfilePaths.gitattributes, inTree: try repository.commit(head).tree) }
        }
        if try committed.map({ id in try gitCall { try repository.blob(id.id) } }) != bytes {
            guard let identity else { return "only an Admin can commit it, and this device has no identity" }
            do {
                try profile.records.write(as: identity, asOwner: true) { transaction in
                    guard try transaction.currentBytes(ProfilePaths.gitattributes) != bytes else { return }
                    try profile.members.authorizeAdmin(identity, action: "committing .gitattributes")
                    transaction.stage(ProfilePaths.gitattributes, bytes, RecordChange(kind: "profile", id: ".gitattributes", action: .updated))
                }
            } catch let error as ConcordError {
                switch error {
                case .notAllowed, .notAMember, .keyNotRegistered: return "only an Admin can commit it (\(error.parts.problem))"
                default: throw error
                }
            }
        }
        let path = profile.rootPath + ProfilePaths.gitattributes
        if FileManager.default.contents(atPath: path).map(Array.init) != bytes {
            try profile.locked {
                do { try FileIO.write(bytes, to: path, makingParents: false) } catch { throw ConcordError.io(.write, path: path, "\(error)") }
            }
        }
        return nil
    }
}
