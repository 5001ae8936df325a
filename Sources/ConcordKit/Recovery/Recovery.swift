import ConcordGit
import ConcordModel
import Foundation

/// One problem `concord doctor` found, and whether it was repaired.
public struct DoctorFinding: Sendable, Equatable {
    public let problem: String
    public let fixed: Bool
}

/// Finding and repairing what keeps a profile usable: the checks of `doctor` here; the profile
/// lock, the checkout journal and crash repair (ProfileLock.swift, CheckoutJournal.swift) are
/// what every command runs through before it starts.
public struct Recovery {
    let profile: Profile
    private var repository: Repository { profile.repository }

    /// Checks what plain git needs to treat this profile like concord does: the merge driver
    /// config (git silently falls back to a text merge without it), the signing config, the
    /// allowed-signers file and `.gitattributes`. With `fix`, rewrites the config and signers file.
    public func doctor(fix: Bool) throws -> [DoctorFinding] {
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
        if attributes != profile.kinds.gitattributes() {
            problems.append(".gitattributes does not match .concord/kinds.json: some record files would not use the concord merge driver")
        }
        guard fix, !problems.isEmpty else { return problems.map { DoctorFinding(problem: $0, fixed: false) } }
        try profile.configureGit(members: try profile.members.list())
        let stillBroken = try doctor(fix: false).map(\.problem)
        return problems.map { DoctorFinding(problem: $0, fixed: !stillBroken.contains($0)) }
    }
}

extension Profile {
    /// Checks and repairs of this profile.
    public var recovery: Recovery { Recovery(profile: self) }
}
