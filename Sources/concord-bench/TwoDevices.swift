import ConcordTestSupport
import Foundation

/// Two devices of one member (alice on A and on B) sharing a bare repository over a path or over ssh:
/// A creates an `aac` profile, registers B's key, publishes it; B clones it. Over ssh, a real sshd on
/// loopback serves the repository; `stop()` stops it.
struct TwoDevices {
    let homeA: URL, homeB: URL
    let profileA: URL, profileB: URL
    let bare: URL
    let server: SSHServer?
    /// Deletes the root-owned copy of the program sshd's AuthorizedKeysCommand ran, if one was made.
    let removeCopy: @Sendable () -> Void

    /// With `throughServe`, the sshd is a concord server: `concord server init` in `<root>/server`,
    /// sshd's AuthorizedKeysCommand is `concord-lookup` (as `init` advises; `concord serve --lookup`
    /// when no concord-lookup was built beside concord), and A's first sync creates the profile.
    static func make(_ context: BenchContext, in root: URL, overSSH: Bool, throughServe: Bool = false) throws -> TwoDevices {
        let concord = context.concord
        let homeA = root.appendingPathComponent("home-a"), homeB = root.appendingPathComponent("home-b")
        try concord.makeHome(homeA, member: "alice", device: "a")
        try concord.makeHome(homeB, member: "alice", device: "b")
        let keyB = try concord.publicKey(home: homeB)
        let bare = root.appendingPathComponent("remote.git")
        var server: SSHServer?
        let serverRoot = root.appendingPathComponent("server")
        var copyRemoval: @Sendable () -> Void = {}
        if throughServe {
            // sshd runs an AuthorizedKeysCommand only by a root-owned path (a copy, for a checkout under /tmp).
            let lookup = lookupPath(beside: concord.path)
            let (binary, removeCopy) = try SSHServer.authorizedKeysCommandPath(for: lookup ?? concord.path)
            copyRemoval = removeCopy
            try concord.run(["server", "init", "--root", serverRoot.path, "--admin-key", try concord.publicKey(home: homeA)],
                            home: homeA, what: "concord server init")
            let command = lookup == nil ? "\(binary) serve --root \(serverRoot.path) --lookup %u %k" : "\(binary) \(serverRoot.path) %u %k"
            let sshd = try SSHServer(directory: root.appendingPathComponent("sshd"), logLevel: "INFO", authorizedKeysCommand: command)
            server = sshd
            try sshd.start()
        } else if overSSH {
            let sshd = try SSHServer(directory: root.appendingPathComponent("sshd"), logLevel: "INFO")
            server = sshd
            try sshd.start()
            try sshd.authorize(publicKeyLine: try concord.publicKey(home: homeA))
            try sshd.authorize(publicKeyLine: keyB)
        }
        do {
            let url = throughServe ? "ssh://\(server?.user ?? "root")@127.0.0.1:\(server?.port ?? 22)/bench.git"
                : server?.url(for: bare) ?? bare.path
            let profileA = root.appendingPathComponent("device-a"), profileB = root.appendingPathComponent("device-b")
            func onA(_ arguments: [String], _ what: String) throws {
                try concord.run(arguments, home: homeA, what: "concord \(what)")
            }
            if !throughServe { try onA(["init", "--bare", bare.path], "init --bare") }
            try onA(["init", profileA.path, "--name", "bench", "--template", "aac"], "init (A)")
            // B's proof of possession of its key (format 5); a baseline binary from before key proofs has no
            // 'identity prove' and makes a format 4 profile, which needs none.
            let info = try JSONSerialization.jsonObject(with: Data(contentsOf: profileA.appendingPathComponent(".concord/profile.json")))
            let profileID = (info as? [String: Any])?["id"] as? String ?? ""
            let proof = (try? concord.run(["identity", "prove", profileID], home: homeB, what: "concord identity prove (B)"))
                .map { ["--proof", $0.output.trimmingCharacters(in: .whitespacesAndNewlines)] } ?? []
            try onA(["members", "add", "alice", "--role", "admin", "--key", keyB, "--device", "b", "-C", profileA.path] + proof,
                    "members add (B's key)")
            try onA(["remote", "add", "origin", url, "-C", profileA.path], "remote add (A)")
            if overSSH || throughServe { try onA(["remote", "trust", "origin", "-C", profileA.path], "remote trust (A)") }
            try onA(["sync", "-C", profileA.path], "sync (A publishes)")
            let trust = server.map { ["--trust-host", $0.hostKeyFingerprint] } ?? []
            try concord.run(["clone", url, profileB.path] + trust, home: homeB, what: "concord clone (B)")
            return TwoDevices(homeA: homeA, homeB: homeB, profileA: profileA, profileB: profileB,
                              bare: throughServe ? serverRoot.appendingPathComponent("repositories/bench.git") : bare, server: server,
                              removeCopy: copyRemoval)
        } catch {
            server?.stop()
            copyRemoval()
            throw error
        }
    }

    /// `concord-lookup` in the directory of the concord binary at `concord`, if it was built there.
    static func lookupPath(beside concord: String) -> String? {
        let path = URL(fileURLWithPath: concord).deletingLastPathComponent().appendingPathComponent("concord-lookup").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    func stop() {
        server?.stop()
        removeCopy()
    }
}
