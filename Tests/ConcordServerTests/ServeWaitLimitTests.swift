import ConcordKit
import ConcordServer
import ConcordTestSupport
import Foundation
import XCTest

/// `concord-wait` connections a server holds at once (`WaitSlots`): one key could hold any number
/// (25 took 616 MB of the server). Past `WaitSlots.maxPerKey` of one key, or
/// `WaitSlots.maxPerProfile` on one profile, a wait is refused with one line and a non-zero
/// exit; a place whose `concord serve` was killed is free again at once.
final class ServeWaitLimitTests: ConcordServeTestCase {
    /// Four waits of Alice's key are held open over a real sshd (`concord serve` the forced
    /// command); a fifth is refused with one line. One waiting `concord serve` is killed
    /// (SIGKILL, no clean-up of its own): the next wait is let in.
    func testOneKeyHoldsAtMostFourWaitsAndAKilledWaitFreesItsPlace() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        _ = try publish("kid", on: host)
        let main = try serverMain("kid", host: host)
        let knownHosts = try trust(host, by: alice)
        func sshWords(_ command: String) -> String {
            ["/usr/bin/ssh", "-T", "-F", "/dev/null", "-i", alice.keyFile.path, "-o", "IdentitiesOnly=yes",
             "-o", "UserKnownHostsFile=\(knownHosts.path)", "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
             "-o", "BatchMode=yes", "-p", String(host.sshd.port), "\(host.sshd.user)@127.0.0.1", command]
                .map(ProcessRunner.shellQuoted).joined(separator: " ")
        }
        // Each wait over plain ssh whose input stays open (a wait ends when its device hangs up).
        var waits = [ChildProcess]()
        defer { for wait in waits where wait.exitStatus() == nil { _ = wait.stop(grace: 2) } }
        for index in 0..<WaitSlots.maxPerKey {
            let script = "exec 3< <(sleep 60); \(sshWords("concord-wait '/kid.git' \(main) 60")) <&3; status=$?; kill $! 2>/dev/null; exit $status"
            waits.append(try ChildProcess(path: "/bin/bash", arguments: ["-c", script], environment: environment(),
                                          output: sandbox.appendingPathComponent("wait-\(index).log")))
        }
        func servePIDs() -> [Int32] {
            let result = try? ProcessRunner.run("/usr/bin/pgrep", ["-f", "serve --root \(host.root.path)"], environment: environment())
            return (result?.stdout ?? "").split(separator: "\n").compactMap { Int32($0) }
        }
        // Every wait holds its place: its concord serve runs, and the places are all taken.
        XCTAssertTrue(waitUntil(30) { servePIDs().count == WaitSlots.maxPerKey }, "the waits did not start: \(servePIDs())")
        let places = host.root.appendingPathComponent("waits")
        XCTAssertTrue(waitUntil(10) {
            (try? FileManager.default.contentsOfDirectory(atPath: places.path).filter { $0.hasPrefix("key-") }.count) == WaitSlots.maxPerKey
        })
        Thread.sleep(forTimeInterval: 1)
        XCTAssertTrue(waits.allSatisfy { $0.exitStatus() == nil }, "a wait ended before anything moved")

        let refused = try ssh("concord-wait '/kid.git' \(main) 60", as: alice, host: host)
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.summary)
        XCTAssertTrue(refused.stderr.hasPrefix("concord serve: this key already holds 4 concord-wait connections"), refused.summary)
        XCTAssertTrue(refused.stderr.contains("stop a watch of this key"), refused.summary)
        XCTAssertEqual(refused.stdout, "", "a refused wait answers nothing")

        // One waiting concord serve killed outright: its place is free, and a wait is let in (it
        // ends at once, as plain ssh's empty input closes: exit 0).
        let killed = try XCTUnwrap(servePIDs().first)
        kill(killed, SIGKILL)
        XCTAssertTrue(waitUntil(10) { !servePIDs().contains(killed) })
        let admitted = try ssh("concord-wait '/kid.git' \(main) 5", as: alice, host: host)
        XCTAssertEqual(admitted.status, 0, admitted.summary)
        XCTAssertEqual(admitted.stderr, "", admitted.summary)
    }

    /// The places of one profile are shared by every key waiting on it, and those of one key by
    /// every profile it waits on; a place let go (here: its holder released) is taken again.
    func testThePlacesOfAKeyAndOfAProfileAreCountedApart() throws {
        let root = try makeDirectory("server-root")
        func take(_ key: String, _ profile: String) -> Result<WaitSlots, ServerRefusal> {
            Result { try WaitSlots(root: root, key: key, profile: profile, perKey: 2, perProfile: 3) }.mapError { $0 as! ServerRefusal }
        }
        var held = [try take("SHA256:a/b+c", "kid").get(), try take("SHA256:a/b+c", "kid").get()]
        guard case .failure(let keyFull) = take("SHA256:a/b+c", "other") else { return XCTFail("a third place of one key") }
        XCTAssertTrue(keyFull.message.contains("2 concord-wait connections"), keyFull.message)
        held.append(try take("SHA256:d", "kid").get())
        guard case .failure(let profileFull) = take("SHA256:e", "kid") else { return XCTFail("a fourth place of one profile") }
        XCTAssertTrue(profileFull.message.contains("\"kid\" already has 3 concord-wait connections"), profileFull.message)
        XCTAssertNoThrow(try take("SHA256:e", "other").get(), "another profile has places")
        held.removeFirst()
        XCTAssertNoThrow(try take("SHA256:e", "kid").get(), "a place let go is taken again")
        XCTAssertEqual(held.count, 2)
    }
}
