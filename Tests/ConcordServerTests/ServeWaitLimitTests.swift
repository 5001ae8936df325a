import ConcordKit
import ConcordServer
import ConcordTestSupport
import Foundation
import XCTest

/// `concord-wait` connections a server holds at once (`WaitSlots`): one key could hold any number
/// (25 took 616 MB of the server), then one member with 16 keys held all 64 places of a profile.
/// Past `WaitSlots.maxPerMember` of one member (all their keys together), or
/// `WaitSlots.maxPerProfile` on one profile, a wait is refused with one line and a non-zero
/// exit; a place whose `concord serve` was killed is free again at once.
final class ServeWaitLimitTests: ConcordServeTestCase {
    /// Four waits of Alice's key are held open over a real sshd (`concord serve` the forced
    /// command); a fifth is refused with one line. One waiting `concord serve` is killed
    /// (SIGKILL, no clean-up of its own): the next wait is let in.
    func testOneMemberHoldsAtMostFourWaitsAndAKilledWaitFreesItsPlace() throws {
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
        for index in 0..<WaitSlots.maxPerMember {
            let script = "exec 3< <(sleep 60); \(sshWords("concord-wait '/kid.git' \(main) 60")) <&3; status=$?; kill $! 2>/dev/null; exit $status"
            waits.append(try ChildProcess(path: "/bin/bash", arguments: ["-c", script], environment: environment(),
                                          output: sandbox.appendingPathComponent("wait-\(index).log")))
        }
        func servePIDs() -> [Int32] {
            let result = try? ProcessRunner.run("/usr/bin/pgrep", ["-f", "serve --root \(host.root.path)"], environment: environment())
            return (result?.stdout ?? "").split(separator: "\n").compactMap { Int32($0) }
        }
        // Every wait holds its place: its concord serve runs, and the places are all taken.
        XCTAssertTrue(waitUntil(30) { servePIDs().count == WaitSlots.maxPerMember }, "the waits did not start: \(servePIDs())")
        let places = host.root.appendingPathComponent("waits")
        XCTAssertTrue(waitUntil(10) {
            (try? FileManager.default.contentsOfDirectory(atPath: places.path).filter { $0.hasPrefix("member-kid-") }.count) == WaitSlots.maxPerMember
        })
        Thread.sleep(forTimeInterval: 1)
        XCTAssertTrue(waits.allSatisfy { $0.exitStatus() == nil }, "a wait ended before anything moved")

        let refused = try ssh("concord-wait '/kid.git' \(main) 60", as: alice, host: host)
        XCTAssertNotEqual(refused.status, 0, refused.summary)
        XCTAssertEqual(refused.stderr.split(separator: "\n").count, 1, refused.summary)
        XCTAssertTrue(refused.stderr.hasPrefix("concord serve: \"alice\" (all their device keys together) already holds 4 concord-wait connections on \"kid\""),
                      refused.summary)
        XCTAssertTrue(refused.stderr.contains("stop a watch on another of these devices"), refused.summary)
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

    /// One member with 16 device keys of her own takes only `maxPerMember` places of a profile,
    /// whichever keys she waits with; another member, and she on another profile, still get one.
    func testOneMembersManyKeysHoldAtMostTheMembersPlaces() throws {
        let root = try makeDirectory("server-root")
        var held = [WaitSlots]()
        var refusals = [String]()
        for index in 0..<16 {
            do {
                held.append(try WaitSlots(root: root, key: "SHA256:viewer-key-\(index)", member: "vera", profile: "kid"))
            } catch let refusal as ServerRefusal {
                refusals.append(refusal.message)
            }
        }
        XCTAssertEqual(held.count, WaitSlots.maxPerMember, "one member's keys took more than a member's places")
        XCTAssertEqual(refusals.count, 16 - WaitSlots.maxPerMember)
        XCTAssertTrue(refusals.allSatisfy { $0.hasPrefix("\"vera\" (all their device keys together) already holds 4 concord-wait connections on \"kid\"") },
                      refusals.first ?? "")
        XCTAssertNoThrow(held.append(try WaitSlots(root: root, key: "SHA256:other", member: "otto", profile: "kid")), "another member gets a wait")
        XCTAssertNoThrow(held.append(try WaitSlots(root: root, key: "SHA256:viewer-key-0", member: "vera", profile: "other")),
                         "the same member on another profile has places of her own there")
        // A name with "/" and ".." is spelled in hex: it cannot reach outside waits/ or share a file.
        XCTAssertNoThrow(held.append(try WaitSlots(root: root, key: "SHA256:x", member: "../../x/y", profile: "kid")))
        let names = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("waits").path)
        XCTAssertTrue(names.allSatisfy { !$0.contains("..") }, "\(names)")
        held.removeAll()
        XCTAssertNoThrow(try WaitSlots(root: root, key: "SHA256:viewer-key-9", member: "vera", profile: "kid"), "a place let go is taken again")
    }

    /// The places of one profile are shared by every key waiting on it, and those of one key (no
    /// member's) by every profile it waits on; a place let go (its holder released) is taken again.
    func testThePlacesOfAKeyAndOfAProfileAreCountedApart() throws {
        let root = try makeDirectory("server-root")
        func take(_ key: String, _ profile: String) -> Result<WaitSlots, ServerRefusal> {
            Result { try WaitSlots(root: root, key: key, member: nil, profile: profile, perMember: 2, perProfile: 3) }.mapError { $0 as! ServerRefusal }
        }
        var held = [try take("SHA256:a/b+c", "kid").get(), try take("SHA256:a/b+c", "kid").get()]
        guard case .failure(let keyFull) = take("SHA256:a/b+c", "other") else { return XCTFail("a third place of one key") }
        XCTAssertTrue(keyFull.message.hasPrefix("this key already holds 2 concord-wait connections"), keyFull.message)
        held.append(try take("SHA256:d", "kid").get())
        guard case .failure(let profileFull) = take("SHA256:e", "kid") else { return XCTFail("a fourth place of one profile") }
        XCTAssertTrue(profileFull.message.contains("\"kid\" already has 3 concord-wait connections"), profileFull.message)
        XCTAssertNoThrow(try take("SHA256:e", "other").get(), "another profile has places")
        held.removeFirst()
        XCTAssertNoThrow(try take("SHA256:e", "kid").get(), "a place let go is taken again")
        XCTAssertEqual(held.count, 2)
    }
}
