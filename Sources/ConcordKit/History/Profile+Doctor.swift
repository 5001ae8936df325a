import ConcordGit
import ConcordModel
import Foundation

/// One problem `concord doctor` found, and whether it was repaired.
public struct DoctorFinding: Sendable, Equatable {
    public let problem: String
    public let fixed: Bool
}

extension Profile {
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
        let attributes = FileManager.default.contents(atPath: rootPath + ProfilePaths.gitattributes).map { String(decoding: $0, as: UTF8.self) }
        if attributes != kinds.gitattributes() {
            problems.append(".gitattributes does not match .concord/kinds.json: some record files would not use the concord merge driver")
        }
        guard fix, !problems.isEmpty else { return problems.map { DoctorFinding(problem: $0, fixed: false) } }
        try configureGit(members: try members.list())
        let stillBroken = try doctor(fix: false).map(\.problem)
        return problems.map { DoctorFinding(problem: $0, fixed: !stillBroken.contains($0)) }
    }

    /// Conflicts resolved by merges, newest first, from the `Concord-Resolved` trailers.
    public func resolvedConflicts() throws -> [(commit: String, conflict: ResolvedConflict)] {
        guard let head = try gitCall({ try repository.resolveReference("HEAD") }) else { return [] }
        var out = [(commit: String, conflict: ResolvedConflict)]()
        try gitCall {
            try repository.walkHistory(from: head) { commit in
                for value in CommitTrailers(message: commit.message).resolved {
                    if let conflict = ResolvedConflict(trailerValue: value) { out.append((commit.id.hex, conflict)) }
                }
                return true
            }
        }
        return out
    }
}
