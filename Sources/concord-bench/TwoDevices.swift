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

    static func make(_ context: BenchContext, in root: URL, overSSH: Bool) throws -> TwoDevices {
        let concord = context.concord
        let homeA = root.appendingPathComponent("home-a"), homeB = root.appendingPathComponent("home-b")
        try concord.makeHome(homeA, member: "alice", device: "a")
        try concord.makeHome(homeB, member: "alice", device: "b")
        let keyB = try concord.publicKey(home: homeB)
        let bare = root.appendingPathComponent("remote.git")
        var server: SSHServer?
        if overSSH {
            let sshd = try SSHServer(directory: root.appendingPathComponent("sshd"), logLevel: "INFO")
            server = sshd
            try sshd.start()
            try sshd.authorize(publicKeyLine: try concord.publicKey(home: homeA))
            try sshd.authorize(publicKeyLine: keyB)
        }
        do {
            let url = server?.url(for: bare) ?? bare.path
            let profileA = root.appendingPathComponent("device-a"), profileB = root.appendingPathComponent("device-b")
            func onA(_ arguments: [String], _ what: String) throws {
                try concord.run(arguments, home: homeA, what: "concord \(what)")
            }
            try onA(["init", "--bare", bare.path], "init --bare")
            try onA(["init", profileA.path, "--name", "bench", "--template", "aac"], "init (A)")
            try onA(["members", "add", "alice", "--role", "admin", "--key", keyB, "--device", "b", "-C", profileA.path],
                    "members add (B's key)")
            try onA(["remote", "add", "origin", url, "-C", profileA.path], "remote add (A)")
            if overSSH { try onA(["remote", "trust", "origin", "-C", profileA.path], "remote trust (A)") }
            try onA(["sync", "-C", profileA.path], "sync (A publishes)")
            let trust = server.map { ["--trust-host", $0.hostKeyFingerprint] } ?? []
            try concord.run(["clone", url, profileB.path] + trust, home: homeB, what: "concord clone (B)")
            return TwoDevices(homeA: homeA, homeB: homeB, profileA: profileA, profileB: profileB, bare: bare, server: server)
        } catch {
            server?.stop()
            throw error
        }
    }

    func stop() { server?.stop() }
}
