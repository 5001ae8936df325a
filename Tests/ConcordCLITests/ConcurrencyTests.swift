import ConcordTestSupport
import Foundation
import XCTest

/// Two concord processes writing the same profile at once.
final class ConcurrencyTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    /// Records per writer; 2 × 200 puts take about 15 s with the debug binary on 2 cores.
    static let perWriter = 200

    func testTwoConcurrentPutLoops() throws {
        let binary = try ConcordBinary.required()
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)

        let script = """
            for i in $(seq 1 \(Self.perWriter)); do
              "$CONCORD_BIN" put "vocabulary/$PREFIX-$i" --json "{\\"i\\":$i,\\"writer\\":\\"$PREFIX\\"}" > /dev/null || exit 1
            done
            """
        let started = Date()
        var processes = [(Process, URL)]()
        for prefix in ["a", "b"] {
            var environment = self.concordEnvironment(alice, clock: nil)
            environment["CONCORD_BIN"] = binary
            environment["PREFIX"] = prefix
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = ["-c", script]
            process.environment = environment
            process.currentDirectoryURL = profile
            let errors = sandbox.appendingPathComponent("writer-\(prefix).err")
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: errors)
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            processes.append((process, errors))
        }
        for (process, errors) in processes {
            process.waitUntilExit()
            let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            XCTAssertEqual(process.terminationStatus, 0, "a writer failed: \(stderr)")
        }
        let elapsed = Date().timeIntervalSince(started)
        print("concurrency: \(2 * Self.perWriter) puts by two processes took \(String(format: "%.1f", elapsed)) s")

        let listed = try concordOKResult(["ls", "vocabulary"], as: alice, in: profile).stdoutLines
        XCTAssertEqual(listed.count, 2 * Self.perWriter)
        let expected = ["a", "b"].flatMap { prefix in (1...Self.perWriter).map { "vocabulary/\(prefix)-\($0)" } }
        XCTAssertEqual(Set(listed), Set(expected))

        let fsck = try git(["fsck", "--full"], in: profile)
        XCTAssertEqual(fsck.status, 0, fsck.summary)
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: profile), "")

        // One commit per put plus init, each with exactly one parent (init: none): linear history.
        let parents = try gitOK(["rev-list", "--parents", "HEAD"], in: profile).split(separator: "\n")
        XCTAssertEqual(parents.count, 2 * Self.perWriter + 1)
        XCTAssertEqual(parents.filter { $0.split(separator: " ").count == 2 }.count, 2 * Self.perWriter)
        XCTAssertEqual(parents.filter { $0.split(separator: " ").count == 1 }.count, 1, "only the root has no parent")
        XCTAssertEqual(try gitOK(["rev-list", "--min-parents=2", "HEAD"], in: profile), "")

        // Every commit verifies (git checks each signature with ssh-keygen).
        let statuses = try gitOK(["log", "--format=%G? %H"], in: profile).split(separator: "\n")
        XCTAssertEqual(statuses.count, parents.count)
        let notGood = statuses.filter { !$0.hasPrefix("G ") }
        XCTAssertEqual(notGood, [], "commits without a good signature")

        // Stamps never repeat: every record got its own HLC.
        let clocks = try gitOK(["log", "--format=%(trailers:key=Concord-Clock,valueonly)"], in: profile)
            .split(separator: "\n")
        XCTAssertEqual(Set(clocks).count, clocks.count, "HLC stamps must be unique across both writers")
    }
}
