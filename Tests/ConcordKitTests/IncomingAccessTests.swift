import XCTest

@testable import ConcordKit

/// The access rule through the library: `profile.sync.run` throws `ConcordError.unauthorizedCommit`
/// naming the commit, the signer and the rule, and moves nothing.
final class IncomingAccessTests: KitTestCase {
    func testASyncThrowsOnAViewersVocabularyCommitAndMovesNothing() throws {
        let alice = try makeIdentity("alice", device: "laptop")
        let vera = try makeIdentity("vera", device: "tablet")
        let profile = try makeProfile("alice", identity: alice)
        try profile.members.add("vera", role: .viewer, device: "tablet", key: vera.key.publicKey, as: alice)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "puzzle", data: ["label": .string("puzzle")]) }
        let bare = sandbox.appendingPathComponent("remote.git")
        try Profile.createBareRemote(at: bare)
        try profile.sync.addRemote("origin", url: bare.path)
        _ = try profile.sync.run(as: alice)

        // Vera edits the record with plain git, signs with her device key and pushes.
        let clone = sandbox.appendingPathComponent("vera-git")
        try gitOK(["clone", "--quiet", "--branch", "main", bare.path, clone.path], in: sandbox)
        let file = try XCTUnwrap(try gitOK(["ls-files", "vocabulary"], in: clone).split(separator: "\n").first { $0.hasSuffix("/puzzle.json") })
        let url = clone.appendingPathComponent(String(file))
        try Data(try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\"puzzle\"", with: "\"mine\"").utf8).write(to: url)
        try gitOK(GitSigning.options(keyFile: vera.privateKeyPath.path)
                  + ["-c", "user.name=vera", "-c", "user.email=vera@example.com", "commit", "-S", "--quiet", "-am", "by hand"], in: clone)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        let forged = try gitOK(["rev-parse", "HEAD"], in: clone)

        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        let error = concordError { try profile.sync.run(as: alice) }
        XCTAssertEqual(error, .unauthorizedCommit(commit: String(forged.prefix(7)), signer: "vera@tablet", change: "vocabulary/puzzle",
                                                  reason: "Viewers may not write vocabulary"))
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head)
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile.root), "")
        XCTAssertNotEqual(try gitOK(["rev-parse", "refs/remotes/origin/main"], in: profile.root), forged)
        XCTAssertEqual(try profile.verification.run().commits, Int(try gitOK(["rev-list", "--count", "HEAD"], in: profile.root)))
    }
}
