import ConcordTestSupport
import Foundation
import XCTest

/// Three devices edit offline, then sync in a seeded random order until a round moves nothing: they end
/// with one tree, every record everywhere, a clean bare repository and no commit ever dropped from it.
final class SyncConvergenceTests: ConcordTestCase {
    func testThreeDevicesConvergeOverAPath() throws { try threeDevicesConverge(.path, seed: 0xC0FFEE) }

    func testThreeDevicesConvergeOverSSH() throws { try threeDevicesConverge(.ssh, seed: 0xBADC0DE) }

    /// `CONCORD_TEST_SEED=<n>` replays (or explores) another sync order.
    private func threeDevicesConverge(_ transport: SyncTransport, seed defaultSeed: UInt64) throws {
        let seed = ProcessInfo.processInfo.environment["CONCORD_TEST_SEED"].flatMap { UInt64($0) } ?? defaultSeed
        let remote = try makeRemote(transport)
        let laptop = try makeDevice("alice", device: "laptop")
        let tablet = try makeDevice("alice", device: "tablet")
        let phone = try makeDevice("bob", device: "phone")
        let origin = try publishProfile(owner: laptop, remote: remote, directory: "laptop",
                                        members: [(tablet, "admin"), (phone, "editor")],
                                        records: [("vocabulary/shared", #"{"label":"start","position":0}"#)])
        let profiles = [
            (laptop, origin),
            (tablet, try cloneProfile(tablet, from: remote, into: "tablet")),
            (phone, try cloneProfile(phone, from: remote, into: "phone")),
        ]

        // Offline: different records on each device, one lww field edited on two devices at different
        // clocks (the tablet's edit is later and must win everywhere), appends to the shared log. The two
        // edits' clocks lie in the future so that they, not the devices' earlier stamps, order them.
        var expected = Set(try concordOK(["ls"], as: laptop, in: origin).split(separator: "\n").map(String.init))
        for (index, (device, profile)) in profiles.enumerated() {
            let clock = "2026-03-0\(index + 1)T09:00:00.000Z"
            for number in 1...3 {
                let reference = "vocabulary/\(device.device)-\(number)"
                try concordOK(["put", reference, "--json", #"{"label":"\#(device.device) \#(number)","position":\#(number)}"#],
                              as: device, in: profile, clock: clock)
                expected.insert(reference)
            }
            for event in 1...2 {
                let output = try concordOK(["append", "logs", "--json", #"{"event":"\#(device.device)-\#(event)"}"#],
                                           as: device, in: profile, clock: clock)
                let id = try XCTUnwrap(output.split(separator: "\n").first.map(String.init), "append printed \(output)")
                expected.insert("logs/\(id)")
            }
        }
        try concordOK(["put", "settings/voice", "--json", #"{"rate":1.5}"#], as: laptop, in: origin, clock: "2026-03-01T09:30:00.000Z")
        expected.insert("settings/voice")
        try concordOK(["put", "vocabulary/shared", "--json", #"{"label":"laptop's","position":0}"#],
                      as: laptop, in: origin, clock: "2099-03-05T10:00:00.000Z")
        try concordOK(["put", "vocabulary/shared", "--json", #"{"label":"tablet's","position":0}"#],
                      as: tablet, in: profiles[1].1, clock: "2099-03-05T11:00:00.000Z")

        // Each device's own commits, which the remote must end up holding.
        var ownCommits = [String: [String]]()
        for (device, profile) in profiles {
            ownCommits[device.device] = try gitOK(["rev-list", "HEAD", "--not", "refs/remotes/origin/main"], in: profile)
                .split(separator: "\n").map(String.init)
            XCTAssertFalse(ownCommits[device.device]?.isEmpty ?? true, "\(device.device) made no offline commits")
        }

        // Sync in seeded random orders until one whole round moves nothing; the remote only ever moves forward.
        var generator = SeededGenerator(seed: seed)
        var remoteTip = try XCTUnwrap(try remoteMain(remote))
        var quiet = false
        var rounds = 0
        while !quiet, rounds < 6 {
            rounds += 1
            quiet = true
            for (device, profile) in profiles.shuffled(using: &generator) {
                let summary = try syncJSON(device, in: profile)
                if summary.movedAnything { quiet = false }
                let newTip = try XCTUnwrap(try remoteMain(remote))
                XCTAssertEqual(try git(["merge-base", "--is-ancestor", remoteTip, newTip], in: remote.bare).status, 0,
                               "the remote's main went from \(remoteTip) to \(newTip), which does not contain it (seed \(seed))")
                XCTAssertEqual(summary.head, newTip, "after a sync the device and the remote agree")
                remoteTip = newTip
            }
        }
        XCTAssertTrue(quiet, "still moving after \(rounds) rounds (seed \(seed))")
        XCTAssertLessThanOrEqual(rounds, 3, "three devices should be quiet by the third round (seed \(seed))")

        // One tree everywhere, the remote's included.
        let remoteTree = try revParse("refs/heads/main^{tree}", in: remote.bare)
        for (device, profile) in profiles {
            XCTAssertEqual(try revParse("HEAD^{tree}", in: profile), remoteTree, "\(device.device) has another tree")
            XCTAssertEqual(try revParse("HEAD", in: profile), remoteTip, "\(device.device) is not at the remote's main")
            XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile), "", "\(device.device) has a dirty work tree")
        }
        // Every record on every device, and the later lww edit won everywhere.
        for (device, profile) in profiles {
            let listed = try concordOK(["ls"], as: device, in: profile).split(separator: "\n").map(String.init)
            XCTAssertEqual(listed.count, expected.count, "\(device.device) lists \(listed.count) records")
            XCTAssertEqual(Set(listed), expected, "\(device.device) lists other records")
            let shared = try concordOK(["get", "vocabulary/shared"], as: device, in: profile)
            XCTAssertTrue(shared.contains("tablet's"), "\(device.device): the later edit should win: \(shared)")
        }
        // The bare repository is sound and holds every commit any device made.
        let fsck = try git(["fsck", "--full", "--strict"], in: remote.bare)
        XCTAssertEqual(fsck.status, 0, "git fsck on the bare repository: \(fsck.stdout)\(fsck.stderr)")
        for (device, commits) in ownCommits {
            for commit in commits {
                XCTAssertEqual(try git(["merge-base", "--is-ancestor", commit, remoteTip], in: remote.bare).status, 0,
                               "\(device)'s commit \(commit) is missing from the remote's main (seed \(seed))")
            }
        }
    }
}
