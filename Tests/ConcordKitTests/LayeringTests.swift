import Foundation
import XCTest

/// The layering docs/architecture.md draws, checked on the sources themselves, so that a change
/// that breaks it fails here rather than in a review: the engine (Sources/ConcordKit/Profile/) alone
/// touches a profile's repository and lock; capabilities get their parts from it; the pure rule
/// target reads no git; ConcordKit does not know the server.
final class LayeringTests: XCTestCase {
    /// The package's `Sources/` directory, found from this file's path.
    private let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")

    /// Every Swift file under `Sources/<target>/`, as (path relative to `Sources/`, text).
    private func files(in target: String) throws -> [(path: String, text: String)] {
        let root = sources.appendingPathComponent(target)
        guard let walker = FileManager.default.enumerator(atPath: root.path) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: root.path])
        }
        var found = [(path: String, text: String)]()
        while let relative = walker.nextObject() as? String {
            guard relative.hasSuffix(".swift") else { continue }
            found.append((target + "/" + relative, try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)))
        }
        return found.sorted { $0.path < $1.path }
    }

    /// The lines of `files` matching `pattern`, as `path: line`.
    private func lines(_ files: [(path: String, text: String)], matching pattern: String) throws -> [String] {
        let expression = try NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        return files.flatMap { file in
            file.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).filter { line in
                expression.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil
            }.map { "\(file.path): \($0.trimmingCharacters(in: .whitespaces))" }
        }
    }

    func testOnlyTheEngineFolderTouchesAProfilesRepositoryOrLock() throws {
        let kit = try files(in: "ConcordKit")
        XCTAssertFalse(kit.isEmpty, "no sources found under \(sources.path)")
        let outside = kit.filter { !$0.path.hasPrefix("ConcordKit/Profile/") }
        XCTAssertEqual(try lines(outside, matching: #"\b(profile|provisional|restored|engine)\.(repository|lock\(\))"#), [],
                       "outside Sources/ConcordKit/Profile/, a capability uses the repository it was handed, and takes the lock with `locked`")
        let elsewhere = try ["concord", "ConcordServer", "concord-bench"].flatMap { try files(in: $0) }
        XCTAssertEqual(try lines(elsewhere, matching: #"\.repository\.|\.lock\(\)"#).filter { $0.contains("profile") }, [])
    }

    func testAtMostThreeFilesExtendTheProfileType() throws {
        let extending = try ["ConcordKit", "ConcordServer", "concord"].flatMap { try files(in: $0) }
            .filter { $0.text.range(of: #"(?m)^(public |package )?extension Profile\b"#, options: .regularExpression) != nil }
            .map(\.path)
        XCTAssertLessThanOrEqual(extending.count, 3, "files extending Profile: \(extending)")
        XCTAssertTrue(extending.allSatisfy { $0.hasPrefix("ConcordKit/Profile/") }, "only the engine extends Profile: \(extending)")
    }

    func testThePureRuleTargetReadsNoGitAndDoesNoIO() throws {
        let rules = try files(in: "ConcordRules")
        XCTAssertFalse(rules.isEmpty)
        XCTAssertEqual(try lines(rules, matching: #"^\s*(@_exported |internal |package )?import (ConcordGit|CLibgit2|CLibssh2|ConcordKit)\b"#), [])
        XCTAssertEqual(try lines(rules, matching: #"FileManager|FileHandle|contentsOfFile|Data\(contentsOf"#), [])
    }

    func testConcordKitDoesNotKnowTheServer() throws {
        XCTAssertEqual(try lines(try files(in: "ConcordKit"), matching: #"^\s*(@_exported |internal |package )?import ConcordServer\b"#), [])
    }
}
