import ConcordGit
import Foundation

/// `concord-wait`: live updates for `concord watch` on a concord server. The device names the main
/// it has; the server holds the ssh connection until the profile's main is something else (read
/// from the ref files every `pollInterval`, without libgit2 or a lock) or `seconds` pass, then
/// answers with git's v0 ref advertisement of `refs/heads/main` (what `git-upload-pack` would
/// have said first), so the device reads it with the code that reads every ref advertisement.
public enum ServerWait {
    /// How often the ref is read while waiting.
    static let pollInterval: useconds_t = 25_000

    /// Waits in repository `path` until main (`ref`: a revoked member's view of it has another
    /// name) differs from `known` or `seconds` pass; returns main then. Stops early, returning nil,
    /// when `clientLeft` says the device hung up.
    public static func wait(repository path: String, ref: String = "refs/heads/main", known: ObjectID?, seconds: Int,
                            clientLeft: () -> Bool = { false }) -> ObjectID? {
        let deadline = Date().addingTimeInterval(TimeInterval(seconds))
        var main = known
        while Date() < deadline {
            if clientLeft() { return nil }
            // A ref caught mid-rewrite reads as an error: read it again on the next round.
            if let now = try? Repository.localRemoteHead(at: path, ref: ref), now != known {
                main = now
                break
            }
            usleep(pollInterval)
        }
        return main
    }

    /// Whether standard input has reached its end: sshd closes it when the device's connection
    /// goes, while a device that still waits sends nothing.
    public static func standardInputClosed() -> Bool {
        var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        if descriptor.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 { return true }
        var byte: UInt8 = 0
        return read(0, &byte, 1) == 0
    }

    /// The ref advertisement for `main` (just the flush packet when there is none).
    public static func advertisement(main: ObjectID?) -> [UInt8] {
        guard let main else { return Array("0000".utf8) }
        let line = "\(main.hex) refs/heads/main\0\n"
        return Array((String(format: "%04x", line.utf8.count + 4) + line + "0000").utf8)
    }
}
