import ConcordGit
import Crypto
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Seeded fuzzing of what a path remote can hold: forged trees (any name, any mode, entries out
/// of order), records and profile files with any content, removals, second roots, and damaged
/// object files, written straight into the bare repository as an attacker with write access
/// would. After every case: nothing was written outside the profile or into `.git`, the sync
/// finished within a deadline, a refused sync changed nothing, an accepted one left the working
/// tree equal to HEAD; the device (every 100 cases) and, at the end, the remote (restored) and
/// Alice's profile pass `git fsck --full`.
final class HostileRemoteFuzzTests: KitTestCase {
    static let cases = 1_000

    func testForgedRemotesNeverEscapeCrashHangOrChangeAnythingOnRefusal() throws {
        var fuzz = try FuzzScene(test: self)
        // Alice's profile is never touched by the attacker: it must pass git fsck when the test ends.
        fsckAtEnd(fuzz.aliceURL)
        var generator = SeededGenerator(seed: 0xC0FFEE)
        var refused = 0, accepted = 0
        for number in 1...Self.cases {
            let mutation = try fuzz.forge(&generator)
            if let verdicts = try fuzz.checkVerdicts() {
                XCTAssertEqual(verdicts.kept, verdicts.unkept, "case \(number) (\(mutation)): the check with what the fetch kept")
            }
            let before = try fuzz.deviceState()
            let outcome = fuzz.syncWithDeadline(seconds: 30)
            let context = "case \(number) (\(mutation))"
            switch outcome {
            case .hung:
                return XCTFail("\(context): sync did not finish within 30 s")
            case .refused(let error):
                refused += 1
                if ProcessInfo.processInfo.environment["FUZZ_DEBUG"] != nil { print("REFUSED \(mutation): \(error)") }
                XCTAssertEqual(try fuzz.deviceState(), before, "\(context): a refused sync (\(error)) changed the device")
                try fuzz.restoreRemote()
            case .accepted:
                accepted += 1
                let status = try gitOK(["status", "--porcelain"], in: fuzz.bobURL)
                XCTAssertEqual(status, "", "\(context): accepted, but the working tree differs from HEAD")
                try fuzz.adoptRemote()
            }
            XCTAssertEqual(fuzz.outsideState(), fuzz.outsideBaseline, "\(context): something was written outside the profile or into .git")
            if number % 100 == 0 { try assertFsck(fuzz.bobURL, context) }
        }
        try fuzz.restoreRemote()
        try assertFsck(fuzz.bobURL, "the end")
        try assertFsck(fuzz.bareURL, "the remote at the end")
        print("hostile-remote fuzz: \(Self.cases) cases, \(refused) refused, \(accepted) accepted")
        // Both outcomes must have been exercised, or the fuzzer tests nothing.
        XCTAssertGreaterThan(refused, Self.cases / 2, "refused \(refused), accepted \(accepted)")
        XCTAssertGreaterThan(accepted, 10, "refused \(refused), accepted \(accepted)")
    }

    private func assertFsck(_ url: URL, _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let output = try git(["fsck", "--full", "--no-progress", "--no-dangling"], in: url)
        XCTAssertEqual(output.status, 0, "\(context): git fsck --full in \(url.lastPathComponent): \(output.stdout)\(output.stderr)",
                       file: file, line: line)
    }
}
