// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest

/// A concord server for a test: `concord server init` in `<sandbox>/server`, and a real sshd on
/// 127.0.0.1 whose AuthorizedKeysCommand is `concord-lookup <root> %u %k`, so every connection
/// goes through `concord serve` as the forced command.
package struct ConcordServeHost {
    package let sshd: SSHServer
    package let root: URL
    package let admin: TestDevice

    /// `ssh://<user>@127.0.0.1:<port>/<profile>.git`.
    package func url(_ profile: String) -> String { "ssh://\(sshd.user)@127.0.0.1:\(sshd.port)/\(profile).git" }

    /// The bare repository of `profile` on the server.
    package func repository(_ profile: String) -> URL { root.appendingPathComponent("repositories/\(profile).git") }
}

/// Base class of the tests that run a concord server: `concord server init` behind a real sshd.
open class ConcordServeTestCase: ConcordTestCase {
    /// The concord-lookup binary at a path sshd accepts as an AuthorizedKeysCommand (a root-owned copy
    /// when the checkout is under a world-writable directory such as /tmp); the copy goes when the test ends.
    package func secureLookupBinary() throws -> String {
        guard getuid() == 0 else { throw XCTSkip("sshd's AuthorizedKeysCommand needs a root-owned program: run the tests as root") }
        let (path, remove) = try SSHServer.authorizedKeysCommandPath(for: try ConcordBinary.requiredLookup())
        addTeardownBlock { remove() }
        return path
    }

    /// `admin` runs `concord server init`, and an sshd serves it; stopped when the test ends. sshd
    /// finds keys through `concord-lookup` (AuthorizedKeysCommand), or with `authorizedKeysFile`
    /// in its authorized_keys file, whose block concord keeps.
    package func makeHost(admin: TestDevice, authorizedKeysFile: Bool = false, file: StaticString = #filePath, line: UInt = #line) throws -> ConcordServeHost {
        guard FileManager.default.isExecutableFile(atPath: SSHServer.sshdPath) else {
            throw XCTSkip("\(SSHServer.sshdPath) is missing: run `make test` or `apt-get install openssh-server`")
        }
        let root = sandbox.appendingPathComponent("server")
        let directory = try makeDirectory("sshd")
        let sshd = try authorizedKeysFile
            ? SSHServer(directory: directory)
            : SSHServer(directory: directory, authorizedKeysCommand: "\(try secureLookupBinary()) \(root.path) %u %k")
        try concordOK(["server", "init", "--root", root.path, "--admin-key", admin.publicKeyLine]
                      + (authorizedKeysFile ? ["--authorized-keys", sshd.authorizedKeysURL.path] : []), as: nil, file: file, line: line)
        addTeardownBlock { sshd.stop() }
        try sshd.start()
        return ConcordServeHost(sshd: sshd, root: root, admin: admin)
    }

    /// Writes the server's host key into `device`'s `$CONCORD_HOME/known_hosts` and a known_hosts
    /// file for plain ssh; returns the latter.
    @discardableResult
    package func trust(_ host: ConcordServeHost, by device: TestDevice) throws -> URL {
        let knownHosts = device.home.appendingPathComponent("known_hosts")
        let old = (try? String(contentsOf: knownHosts, encoding: .utf8)) ?? ""
        if !old.contains(host.sshd.knownHostsLine) {
            try Data((old + host.sshd.knownHostsLine + "\n").utf8).write(to: knownHosts)
        }
        return knownHosts
    }

    /// The environment for plain git over ssh with `device`'s key.
    package func gitSSHEnvironment(_ device: TestDevice, host: ConcordServeHost) throws -> [String: String] {
        let knownHosts = try trust(host, by: device)
        let words = ["/usr/bin/ssh", "-F", "/dev/null", "-i", device.keyFile.path, "-o", "IdentitiesOnly=yes",
                     "-o", "UserKnownHostsFile=\(knownHosts.path)", "-o", "GlobalKnownHostsFile=/dev/null",
                     "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
        return ["GIT_SSH_COMMAND": words.map(ProcessRunner.shellQuoted).joined(separator: " ")]
    }

    /// Runs `ssh <host> <command>` with `device`'s key: what `SSH_ORIGINAL_COMMAND` a client sends.
    package func ssh(_ command: String, as device: TestDevice, host: ConcordServeHost) throws -> RunResult {
        let knownHosts = try trust(host, by: device)
        return try ProcessRunner.run("/usr/bin/ssh", ["-T", "-F", "/dev/null", "-i", device.keyFile.path, "-o", "IdentitiesOnly=yes",
                                                     "-o", "UserKnownHostsFile=\(knownHosts.path)", "-o", "GlobalKnownHostsFile=/dev/null",
                                                     "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
                                                     "-p", String(host.sshd.port), "\(host.sshd.user)@127.0.0.1", command],
                                     environment: environment(), deadline: 30)
    }

    /// The admin creates profile `name` (aac template) in `<sandbox>/<name>-admin` with `members`
    /// and `records`, and publishes it to the server: its first push creates the repository.
    package func publish(_ name: String, on host: ConcordServeHost, members: [(TestDevice, String)] = [],
                         records: [(String, String)] = [], format: (old: Int, current: Int)? = nil,
                         file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let profile = sandbox.appendingPathComponent("\(name)-admin")
        try concordOK(["init", profile.path, "--name", name, "--template", "aac"], as: host.admin, file: file, line: line)
        if let format {
            // A profile of an older data format, as an older concord made it: the first commit's profile.json re-signed.
            try replace(#""formatVersion": \#(format.current)"#, with: #""formatVersion": \#(format.old)"#,
                        in: profile.appendingPathComponent(".concord/profile.json"))
            try gitOK(["add", "-A"], in: profile)
            try gitOK(GitSigning.options(keyFile: host.admin.keyFile.path) + ["commit", "-S", "--quiet", "--amend", "--no-edit"], in: profile)
        }
        for (device, role) in members {
            // Another device of the Admin's own needs its proof of possession; another member's key is the Admin's word.
            let proof = device.member == host.admin.member ? ["--proof", try keyProof(of: device, for: profile, file: file, line: line)] : []
            try concordOK(["members", "add", device.member, "--role", role, "--key", device.publicKeyLine, "--device", device.device] + proof,
                          as: host.admin, in: profile, file: file, line: line)
        }
        for (reference, json) in records {
            try concordOK(["put", reference, "--json", json], as: host.admin, in: profile, file: file, line: line)
        }
        try trust(host, by: host.admin)
        try concordOK(["remote", "add", "origin", host.url(name)], as: host.admin, in: profile, file: file, line: line)
        try concordOK(["sync"], as: host.admin, in: profile, file: file, line: line)
        fsckAtEnd += [profile, host.repository(name)]
        return profile
    }

    /// `device` runs `concord clone` of profile `name` into `<sandbox>/<name>-<member>`.
    package func cloneThroughServer(_ name: String, as device: TestDevice, host: ConcordServeHost) throws -> (RunResult, URL) {
        let target = sandbox.appendingPathComponent("\(name)-\(device.member)")
        let result = try concord(["clone", host.url(name), target.path, "--trust-host", host.sshd.hostKeyFingerprint], as: device)
        if result.status == 0 { fsckAtEnd.append(target) }
        return (result, target)
    }

    /// `device` accepts `invitation` through the server into `<sandbox>/<directory>`; fails the test
    /// unless it succeeds and the acceptance is the server's main.
    package func acceptThroughServer(_ invitation: String, as device: TestDevice, host: ConcordServeHost, profile: String,
                                     into directory: String, file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        let target = sandbox.appendingPathComponent(directory)
        let accepted = try concord(["accept", invitation, target.path, "--trust-host", host.sshd.hostKeyFingerprint], as: device)
        XCTAssertEqual(accepted.status, 0, accepted.summary, file: file, line: line)
        fsckAtEnd.append(target)
        XCTAssertEqual(try serverMain(profile, host: host), try revParse("HEAD", in: target), "the acceptance reached the server",
                       file: file, line: line)
        return target
    }

    /// Alice revokes `member` and syncs; then `device` connects once, to push (`git-receive-pack`).
    /// Returns that connection and the seconds from the revocation's push returning to its end.
    package func revokeAndConnect(_ member: String, as admin: TestDevice, in profile: URL, device: TestDevice,
                                  host: ConcordServeHost) throws -> (result: RunResult, seconds: TimeInterval) {
        try concordOK(["revoke", member], as: admin, in: profile)
        try concordOK(["sync"], as: admin, in: profile)
        let pushed = Date()
        let result = try ssh("git-receive-pack '/kid.git'", as: device, host: host)
        return (result, Date().timeIntervalSince(pushed))
    }

    /// Alice's server with profile "kid", Bob an editor of it with a copy cloned through the server.
    package func aliceAndBobThroughServer(file: StaticString = #filePath, line: UInt = #line) throws
                -> (alice: TestDevice, bob: TestDevice, host: ConcordServeHost, aliceProfile: URL, bobsCopy: URL) {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "phone")
        let host = try makeHost(admin: alice, file: file, line: line)
        let aliceProfile = try publish("kid", on: host, members: [(bob, "editor")], file: file, line: line)
        let (cloned, bobsCopy) = try cloneThroughServer("kid", as: bob, host: host)
        XCTAssertEqual(cloned.status, 0, cloned.summary, file: file, line: line)
        return (alice, bob, host, aliceProfile, bobsCopy)
    }

    /// `refs/heads/main` of profile `name` on the server.
    package func serverMain(_ name: String, host: ConcordServeHost) throws -> String {
        try gitOK(["rev-parse", "refs/heads/main"], in: host.repository(name))
    }
}
#endif
