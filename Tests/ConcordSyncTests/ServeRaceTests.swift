import ConcordKit
import Foundation
import XCTest

/// Devices pushing at the same time through `concord serve`: each push is checked by the hook
/// against the main it finds, a push that lost the race is refused by git as stale (not by the
/// hook), the device fetches and pushes again, and no acknowledged write is lost.
final class ServeRaceTests: ConcordServeTestCase {
    func testFiveDevicesPushingAtOnceLoseNothing() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let host = try makeHost(admin: alice)
        let editors = try (1...5).map { try makeDevice("e\($0)", device: "phone") }
        let aliceProfile = try publish("kid", on: host, members: editors.map { ($0, "editor") })
        let profiles = try editors.map { editor -> URL in
            let (cloned, profile) = try cloneThroughServer("kid", as: editor, host: host)
            XCTAssertEqual(cloned.status, 0, cloned.summary)
            return profile
        }
        let rounds = 4
        let outcomes = Outcomes()
        let binary = try ConcordBinary.required()
        let environments = editors.map { concordEnvironment($0) }
        DispatchQueue.concurrentPerform(iterations: editors.count) { index in
            for round in 0..<rounds {
                let id = "\(editors[index].member)-\(round)"
                let put = try? ProcessRunner.run(binary, ["put", "vocabulary/\(id)", "--json", #"{"label":"\#(id)"}"#],
                                                 environment: environments[index], in: profiles[index], deadline: 60)
                let sync = try? ProcessRunner.run(binary, ["sync"], environment: environments[index], in: profiles[index], deadline: 120)
                outcomes.record { outcomes in
                    if put?.status == 0 { outcomes.acknowledged.append(id) } else { outcomes.failures.append("put \(id): \(put?.summary ?? "did not run")") }
                    // After 10 lost races a sync gives up with nothing lost (documented); the next one sends it.
                    if sync == nil || (sync?.status != 0 && sync?.stderr.contains("kept changing") == false) {
                        outcomes.failures.append("sync \(id): \(sync?.summary ?? "did not run")")
                    }
                }
            }
        }
        let (acknowledged, failures) = (outcomes.acknowledged, outcomes.failures)
        XCTAssertEqual(failures, [], "every put and sync succeeds (a refusal by the hook would show here)")
        for (editor, profile) in zip(editors, profiles) { try concordOK(["sync"], as: editor, in: profile) }
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let listed = Set(try concordOK(["ls", "vocabulary"], as: alice, in: aliceProfile).split(separator: "\n").map(String.init))
        XCTAssertEqual(acknowledged.count, editors.count * rounds)
        for id in acknowledged { XCTAssertTrue(listed.contains("vocabulary/\(id)"), "\(id) was acknowledged and is lost: \(listed)") }
        XCTAssertEqual(try serverMain("kid", host: host), try revParse("HEAD", in: aliceProfile))
        try concordOK(["verify"], as: alice, in: aliceProfile)
    }
}

/// What the racing devices did, filled in from their threads.
private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    var acknowledged = [String]()
    var failures = [String]()

    func record(_ body: (Outcomes) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        body(self)
    }
}
