import ConcordGit
import Foundation

/// `concord-wait`: live updates for `concord watch` on a concord server. The device names the main
/// it has; the server holds the ssh connection until the profile's main is something else (read
/// from the ref files every `pollInterval`, without libgit2 or a lock) or `seconds` pass, then
/// answers with git's v0 ref advertisement of `refs/heads/main` (what `git-upload-pack` would
/// have said first), so the device reads it with the code that reads every ref advertisement.
public enum ServerWait {
    /// How often the ref is read while waiting (one small file read, ~10 µs).
    static let pollInterval: useconds_t = 10_000

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
            // The repository is gone (`concord destroy`): say so now, so the device asks why.
            if !FileManager.default.fileExists(atPath: path) { return nil }
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

    /// The most pack bytes a `concord-wait … pack` answer carries; past it the device fetches.
    public static let packLimit = Repository.concordWaitPackLimit

    /// `concord-wait … pack`: what main (`tip`) has beyond `known` in repository `path`, as one
    /// thin pack from git's own `git pack-objects` (as upload-pack would send it). Nil when git
    /// cannot make it (`known` is not in this repository) or it exceeds `packLimit`: the device
    /// then fetches as usual. Objects come from `tip` alone, which the key may read.
    public static func pack(repository path: String, from known: ObjectID, to tip: ObjectID) -> [UInt8]? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git", "pack-objects", "--revs", "--thin", "--stdout", "--delta-base-offset", "-q"]
        var environment = ProcessInfo.processInfo.environment
        environment["GIT_DIR"] = path
        process.environment = environment
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        input.fileHandleForWriting.write(Data("\(tip.hex)\n^\(known.hex)\n".utf8))
        try? input.fileHandleForWriting.close()
        var pack = [UInt8]()
        while true {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            pack += chunk
            if pack.count > packLimit {
                process.terminate()
                process.waitUntilExit()
                return nil
            }
        }
        process.waitUntilExit()
        return process.terminationStatus == 0 && !pack.isEmpty ? pack : nil
    }

    /// The ref advertisement for `main` (just the flush packet when there is none).
    public static func advertisement(main: ObjectID?) -> [UInt8] {
        guard let main else { return Array("0000".utf8) }
        let line = "\(main.hex) refs/heads/main\0\n"
        return Array((String(format: "%04x", line.utf8.count + 4) + line + "0000").utf8)
    }
}

extension ConcordServer {
    /// The whole `concord-wait` for a key let in as `admitted`: waits for main to move, then
    /// answers from what the key may read NOW, decided again (`admit`): a revocation is often what
    /// moved main, and the key must not be handed what came after it. A revoked member's answer
    /// is their view of main (`RevocationView`); a key let in no more is refused. With `pack`, the
    /// answer carries `ServerWait.pack` of that main beyond the device's.
    public func answerWait(_ request: ServeRequest, key: String, admitted: Admitted, clock: () -> Int64,
                           clientLeft: () -> Bool = ServerWait.standardInputClosed) throws -> [UInt8] {
        let waited = ServerWait.wait(repository: admitted.repository, ref: admitted.mainRef, known: request.known,
                                     seconds: request.seconds, clientLeft: clientLeft)
        // A revoked member's view is recorded by the post-receive, just after main moved: give it a moment.
        var attempt = 0
        let now: Admitted
        while true {
            do {
                now = try admit(request, key: key, now: clock())
                break
            } catch where attempt < 40 {
                attempt += 1
                usleep(50_000)
            }
        }
        let main = now.mainRef == admitted.mainRef && now.repository == admitted.repository
            ? waited : (try? Repository.localRemoteHead(at: now.repository, ref: now.mainRef)) ?? nil
        var answer = ServerWait.advertisement(main: main)
        if request.withPack, let main, let known = request.known, main != known,
           let pack = ServerWait.pack(repository: now.repository, from: known, to: main) {
            answer += pack
        }
        return answer
    }
}
