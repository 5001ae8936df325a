// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest

/// How devices reach the bare repository in a scenario.
package enum SyncTransport: String, CaseIterable {
    /// A directory path on this machine.
    case path
    /// `ssh://user@127.0.0.1:<port>/abs/path.git` through the SSHServer fixture.
    case ssh
}

/// Two devices sharing one profile through one remote (``ConcordTestCase/makeTwoDevices``).
package struct TwoDevices {
    package let remote: SyncRemote
    package let owner: TestDevice, other: TestDevice
    package let ownerProfile: URL, otherProfile: URL
}

/// A bare repository made by `concord init --bare`, and the URL devices use for it.
package struct SyncRemote {
    package let transport: SyncTransport
    package let bare: URL
    package let url: String
    /// The sshd serving `bare` (ssh only); stopped when the test ends.
    package let server: SSHServer?
}

/// What one `concord sync --json` reported.
package struct SyncSummary {
    package let received: Int
    package let sent: Int
    package let head: String
    package let attempts: Int

    package var movedAnything: Bool { received > 0 || sent > 0 }
}

extension ConcordTestCase {
    /// A bare repository `<sandbox>/<name>` made with `concord init --bare`; for ssh also a started server
    /// (one per test) and its URL for the repository.
    package func makeRemote(_ transport: SyncTransport, name: String = "remote.git", server existing: SSHServer? = nil,
                            file: StaticString = #filePath, line: UInt = #line) throws -> SyncRemote {
        let bare = sandbox.appendingPathComponent(name)
        try concordOK(["init", "--bare", bare.path], as: nil, file: file, line: line)
        fsckAtEnd.append(bare)
        switch transport {
        case .path:
            return SyncRemote(transport: transport, bare: bare, url: bare.path, server: nil)
        case .ssh:
            let server = try existing ?? startSSHServer()
            return SyncRemote(transport: transport, bare: bare, url: server.url(for: bare), server: server)
        }
    }

    /// Lets `device` reach `remote`: over ssh its key is authorized and, unless `trustHost` is false, the
    /// server's host key is written into its `$CONCORD_HOME/known_hosts` (as `concord remote trust` would).
    package func allow(_ device: TestDevice, on remote: SyncRemote, trustHost: Bool = true) throws {
        guard let server = remote.server else { return }
        try server.authorize(publicKeyLine: device.publicKeyLine)
        if trustHost {
            let knownHosts = device.home.appendingPathComponent("known_hosts")
            let old = (try? String(contentsOf: knownHosts, encoding: .utf8)) ?? ""
            try Data((old + server.knownHostsLine + "\n").utf8).write(to: knownHosts)
        }
    }

    /// The start of the invitation tests: a new remote over `transport`, and alice@laptop's profile
    /// in `<sandbox>/alice`, published to it (`publishProfile`).
    package func publishAlicesProfile(over transport: SyncTransport, file: StaticString = #filePath, line: UInt = #line) throws
        -> (remote: SyncRemote, alice: TestDevice, profile: URL) {
        let remote = try makeRemote(transport, file: file, line: line)
        let alice = try makeDevice("alice", device: "laptop", file: file, line: line)
        return (remote, alice, try publishProfile(owner: alice, remote: remote, directory: "alice", file: file, line: line))
    }

    /// `owner` creates a profile of `template` (aac) in `<sandbox>/<directory>`, adds each of `members`
    /// (device, role) by key, adds `remote` as origin and publishes it with `concord sync`.
    package func publishProfile(owner: TestDevice, remote: SyncRemote, directory: String = "profile-\(UUID().uuidString.prefix(6))",
                                template: String = "aac", members: [(TestDevice, String)] = [], records: [(String, String)] = [],
                                file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let profile = sandbox.appendingPathComponent(directory)
        try concordOK(["init", profile.path, "--name", "Shared", "--template", template], as: owner, file: file, line: line)
        for (device, role) in members {
            // Another device of the owner's own needs its proof of possession; another member's key is the Admin's word.
            let proof = device.member == owner.member ? ["--proof", try keyProof(of: device, for: profile, file: file, line: line)] : []
            try concordOK(["members", "add", device.member, "--role", role, "--key", device.publicKeyLine, "--device", device.device] + proof,
                          as: owner, in: profile, file: file, line: line)
        }
        for (reference, json) in records {
            try concordOK(["put", reference, "--json", json], as: owner, in: profile, file: file, line: line)
        }
        try allow(owner, on: remote)
        try concordOK(["remote", "add", "origin", remote.url], as: owner, in: profile, file: file, line: line)
        try concordOK(["sync"], as: owner, in: profile, file: file, line: line)
        fsckAtEnd.append(profile)
        return profile
    }

    /// `device` clones `remote` into `<sandbox>/<directory>` (trusting the server's key with --trust-host over ssh).
    package func cloneProfile(_ device: TestDevice, from remote: SyncRemote, into directory: String,
                              file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        try allow(device, on: remote, trustHost: false)
        let target = sandbox.appendingPathComponent(directory)
        var arguments = ["clone", remote.url, target.path]
        if let server = remote.server { arguments += ["--trust-host", server.hostKeyFingerprint] }
        try concordOK(arguments, as: device, file: file, line: line)
        fsckAtEnd.append(target)
        return target
    }

    /// The scene most sync tests start from: a new remote over `transport`; `owner` publishes a profile
    /// (with `records`) to it after adding `other` as `role`; `other` clones it. Each profile lies in
    /// `<sandbox>/<its device name>`.
    package func makeTwoDevices(_ transport: SyncTransport = .path, owner: (member: String, device: String) = ("alice", "laptop"),
                                other: (member: String, device: String) = ("alice", "tablet"), role: String = "admin",
                                records: [(String, String)] = [], file: StaticString = #filePath, line: UInt = #line) throws -> TwoDevices {
        let remote = try makeRemote(transport, file: file, line: line)
        let first = try makeDevice(owner.member, device: owner.device, file: file, line: line)
        let second = try makeDevice(other.member, device: other.device, file: file, line: line)
        let firstProfile = try publishProfile(owner: first, remote: remote, directory: owner.device, members: [(second, role)],
                                              records: records, file: file, line: line)
        let secondProfile = try cloneProfile(second, from: remote, into: other.device, file: file, line: line)
        return TwoDevices(remote: remote, owner: first, other: second, ownerProfile: firstProfile, otherProfile: secondProfile)
    }

    /// `concord sync --json` as `device`, parsed; fails the test unless it exits 0.
    package func syncJSON(_ device: TestDevice, in profile: URL, file: StaticString = #filePath, line: UInt = #line) throws -> SyncSummary {
        let result = try concord(["sync", "--json"], as: device, in: profile, file: file, line: line)
        XCTAssertEqual(result.status, 0, "sync as \(device.member)@\(device.device) exited \(result.status): \(result.stderr)",
                       file: file, line: line)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
                                   "sync --json printed \(result.stdout)", file: file, line: line)
        return SyncSummary(received: object["received"] as? Int ?? -1, sent: object["sent"] as? Int ?? -1,
                           head: object["head"] as? String ?? "", attempts: object["attempts"] as? Int ?? -1)
    }

    /// `concord status --json` as `device`, parsed.
    package func statusJSON(_ device: TestDevice, in profile: URL, file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let text = try concordOK(["status", "--json"], as: device, in: profile, file: file, line: line)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                             "status --json printed \(text)", file: file, line: line)
    }

    /// `git rev-parse <revision>` in `repository` (a work tree or a bare repository).
    package func revParse(_ revision: String, in repository: URL, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try gitOK(["rev-parse", "--verify", "--quiet", revision], in: repository, file: file, line: line)
    }

    /// The bare repository's `refs/heads/main`, or nil when it has none.
    package func remoteMain(_ remote: SyncRemote) throws -> String? {
        let result = try git(["rev-parse", "--verify", "--quiet", "refs/heads/main"], in: remote.bare)
        return result.status == 0 ? result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) : nil
    }

    /// Every file of a work tree (outside `.git`) with its bytes, plus HEAD and `git status`: what a refused
    /// command must leave alone.
    package func workTreeSnapshot(_ profile: URL) throws -> [String: Data] {
        var files = try workTreeFiles(of: profile)
        files["<HEAD>"] = Data(try git(["rev-parse", "HEAD"], in: profile).stdout.utf8)
        files["<status>"] = Data(try git(["status", "--porcelain", "--untracked-files=all"], in: profile).stdout.utf8)
        return files
    }

    /// Asserts a refusal: exit `status`, nothing on stdout, exactly one stderr line starting with `prefix`
    /// and containing each of `mentions`.
    package func assertOneLineRefusal(_ result: RunResult, status: Int32 = 1,
                                      prefix: String = "concord: error: ", mentions: [String] = [],
                                      file: StaticString = #filePath, line: UInt = #line) {
        let summary = "exit \(result.status)\n--- stdout:\n\(result.stdout)--- stderr:\n\(result.stderr)"
        XCTAssertEqual(result.status, status, "wrong exit status: \(summary)", file: file, line: line)
        XCTAssertEqual(result.stdout, "", "a refused command prints nothing on stdout: \(summary)", file: file, line: line)
        XCTAssertTrue(result.stderr.hasSuffix("\n"), "stderr must end with a newline: \(summary)", file: file, line: line)
        XCTAssertEqual(result.stderr.split(separator: "\n").count, 1, "want exactly one stderr line: \(summary)", file: file, line: line)
        XCTAssertTrue(result.stderr.hasPrefix(prefix), "stderr must start with \(prefix.debugDescription): \(summary)",
                      file: file, line: line)
        for mention in mentions {
            XCTAssertTrue(result.stderr.contains(mention), "stderr should mention \(mention.debugDescription): \(summary)",
                          file: file, line: line)
        }
    }
}

// MARK: - Invitations

extension ConcordTestCase {
    /// Runs `concord share arguments` as `device` and returns the invitation text it prints last.
    package func share(_ arguments: [String], as device: TestDevice, in profile: URL) throws -> String {
        let output = try concordOK(["share"] + arguments, as: device, in: profile)
        let invitation = output.split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertTrue(invitation.hasPrefix("concord-invitation-1:"), output)   // ConcordKit's `Invitation.prefix`
        return invitation
    }

    /// `share`, then `concord sync` as `device`, so that the invitation is on the remote when it is
    /// accepted; returns the invitation text.
    package func shareAndSync(_ arguments: [String], as device: TestDevice, in profile: URL) throws -> String {
        let invitation = try share(arguments, as: device, in: profile)
        try concordOK(["sync"], as: device, in: profile)
        return invitation
    }

    /// Runs `concord accept invitation <sandbox>/directory` as `device` (allowed on `remote` first).
    package func acceptResult(_ invitation: String, as device: TestDevice, remote: SyncRemote, into directory: String) throws -> RunResult {
        try allow(device, on: remote, trustHost: false)
        var arguments = ["accept", invitation, sandbox.appendingPathComponent(directory).path]
        if let server = remote.server { arguments += ["--trust-host", server.hostKeyFingerprint] }
        return try concord(arguments, as: device)
    }

    /// `acceptResult`, failing the test unless it succeeds; the joined profile (fsck'd at the end).
    package func accept(_ invitation: String, as device: TestDevice, remote: SyncRemote, into directory: String) throws -> URL {
        let result = try acceptResult(invitation, as: device, remote: remote, into: directory)
        XCTAssertEqual(result.status, 0, result.stderr)
        let profile = sandbox.appendingPathComponent(directory)
        fsckAtEnd.append(profile)
        return profile
    }
}
#endif
