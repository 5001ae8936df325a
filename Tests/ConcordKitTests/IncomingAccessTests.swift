import ConcordGit
import ConcordTestSupport
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// The access rule through the library: `profile.sync.run` throws `ConcordError.unauthorizedCommit`
/// naming the commit, the signer and the rule, and moves nothing.
final class IncomingAccessTests: KitTestCase {
    func testASyncThrowsOnAViewersVocabularyCommitAndMovesNothing() throws {
        let (alice, vera, profile, clone, url) = try publishedWithAViewer(label: "puzzle")
        // Vera edits the record with plain git, signs with her device key and pushes.
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

    /// A path fetch verifies signatures while it copies (`SignaturePrefetch`): Alice's good commit,
    /// then a commit carrying her very signature over other bytes (its message changed) is
    /// refused as a bad signature, though her signature's good answer was just kept.
    func testASignatureMovedOntoOtherBytesIsRefusedAfterTheGoodOneWasVerifiedAhead() throws {
        let (alice, _, profile, clone, url) = try publishedWithAViewer(label: "label-0")
        try Data(try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "\"label-0\"", with: "\"hers\"").utf8).write(to: url)
        try gitOK(GitSigning.options(keyFile: alice.privateKeyPath.path)
                  + ["-c", "user.name=alice", "-c", "user.email=alice@example.com", "commit", "-S", "--quiet", "-am", "by alice"], in: clone)
        let good = try gitOK(["rev-parse", "HEAD"], in: clone)
        let raw = try git(["cat-file", "commit", good], in: clone).stdout
        let movedText = raw.replacingOccurrences(of: "\nby alice\n", with: "\nby alice, moved\n")
        XCTAssertNotEqual(movedText, raw)
        // A child of the good commit with the good commit's tree and signature, another message.
        let child = movedText.replacingOccurrences(of: try XCTUnwrap(raw.split(separator: "\n").first { $0.hasPrefix("parent ") }), with: "parent \(good)")
        let file = sandbox.appendingPathComponent("moved-commit")
        try Data(child.utf8).write(to: file)
        let moved = try gitOK(["hash-object", "-t", "commit", "-w", file.path], in: clone)
        try gitOK(["push", "--quiet", "origin", "\(moved):refs/heads/main"], in: clone)

        let head = try gitOK(["rev-parse", "HEAD"], in: profile.root)
        let error = concordError { try profile.sync.run(as: alice) }
        guard case .unauthorizedCommit(let commit, _, _, let reason)? = error else { return XCTFail("\(String(describing: error))") }
        XCTAssertEqual(commit, String(moved.prefix(7)))
        XCTAssertTrue(reason.hasPrefix("its signature does not verify"), reason)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: profile.root), head)
        XCTAssertNotEqual(try gitOK(["rev-parse", "refs/remotes/origin/main"], in: profile.root), moved)
    }

    /// What a path fetch keeps for the check (the changes it found while copying, the signatures
    /// it verified ahead) is what the check uses, and the check decides exactly as it does with
    /// nothing kept: four of Alice's commits pass both ways; with a Viewer's edit and more after
    /// it, both refuse it with the same error.
    func testTheCheckUsesWhatAPathFetchKeptAndDecidesAsWithoutIt() throws {
        let (alice, vera, profile, clone, url) = try publishedWithAViewer(label: "label-0")
        let bare = try gitOK(["remote", "get-url", "origin"], in: clone)
        var label = "label-0"
        func edit(as identity: Identity, _ name: String) throws {
            let text = try String(contentsOf: url, encoding: .utf8)
            try Data(text.replacingOccurrences(of: "\"\(label)\"", with: "\"\(name)\"").utf8).write(to: url)
            label = name
            try gitOK(GitSigning.options(keyFile: identity.privateKeyPath.path)
                      + ["-c", "user.name=\(identity.member)", "-c", "user.email=x@example.com", "commit", "-S", "--quiet", "-am", name], in: clone)
        }
        func verdicts() throws -> (kept: String, unkept: String, hits: Int, changesKept: Int) {
            let known = try [profile.repository.resolveReference("HEAD"), profile.repository.resolveReference("refs/remotes/origin/main")]
                .compactMap { $0 }
            let quarantine = try Quarantine(for: profile.repository, tips: known)
            let prefetch = SignaturePrefetch(memo: SignatureMemo())
            let fetch = try XCTUnwrap(try quarantine.repository.fetchObjectsFromLocalRepository(
                at: bare, ref: "refs/heads/main", into: "refs/concord/incoming", durable: false, commitCopied: prefetch.add(rawCommit:)))
            let tip = fetch.tip
            let changesKept = fetch.objects.changes.count
            var kept = IncomingCheck(repository: quarantine.repository, profileID: profile.info.id, caches: EngineCaches())
            kept.prefetchedSignatures = prefetch
            kept.fetched = fetch.objects
            let first = Self.verdict { try kept.verify(tip: tip, known: known) }
            quarantine.repository.releaseCaches()
            let unkept = IncomingCheck(repository: quarantine.repository, profileID: profile.info.id, caches: EngineCaches())
            XCTAssertTrue(unkept.fetched.changes.isEmpty)
            let second = Self.verdict { try unkept.verify(tip: tip, known: known) }
            return (first, second, prefetch.memo.hits, changesKept)
        }
        for index in 1...4 { try edit(as: alice, "alice-\(index)") }
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        let passing = try verdicts()
        XCTAssertEqual(passing.kept, "checked 4")
        XCTAssertEqual(passing.unkept, passing.kept)
        XCTAssertEqual(passing.hits, 4, "every signature answered by the prefetch")
        XCTAssertEqual(passing.changesKept, 4)

        try edit(as: vera, "vera")
        for index in 5...7 { try edit(as: alice, "alice-\(index)") }
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        let refused = try verdicts()
        XCTAssertTrue(refused.kept.contains("Viewers may not write vocabulary"), refused.kept)
        XCTAssertEqual(refused.unkept, refused.kept)
        XCTAssertEqual(refused.changesKept, 8)
        XCTAssertGreaterThanOrEqual(refused.hits, 5, "the signatures up to the Viewer's commit")
    }

    /// "checked N", or the error `body` threw.
    static func verdict(_ body: () throws -> Int) -> String {
        do { return "checked \(try body())" } catch { return "\(error)" }
    }

    /// Signatures are verified ahead of the rest of the check, on other threads (`SignaturePipeline`).
    /// In chunks of 2 commits with 2 chunks in flight, a bad commit in a middle chunk (later chunks
    /// still being verified) is refused as checking everything in one chunk refuses it, and the
    /// history before it passes whole.
    func testSignaturesVerifiedAheadInChunksReportWhatOneChunkReports() throws {
        let (alice, vera, profile, clone, url) = try publishedWithAViewer(label: "label-0")
        // Alice's edits by hand around Vera's (a Viewer's) one.
        var label = "label-0"
        func edit(as identity: Identity, _ name: String) throws -> String {
            let text = try String(contentsOf: url, encoding: .utf8)
            try Data(text.replacingOccurrences(of: "\"\(label)\"", with: "\"\(name)\"").utf8).write(to: url)
            label = name
            try gitOK(GitSigning.options(keyFile: identity.privateKeyPath.path)
                      + ["-c", "user.name=\(identity.member)", "-c", "user.email=x@example.com", "commit", "-S", "--quiet", "-am", name], in: clone)
            return try gitOK(["rev-parse", "HEAD"], in: clone)
        }
        for index in 1...4 { _ = try edit(as: alice, "alice-\(index)") }
        let forged = try edit(as: vera, "vera")
        for index in 5...11 { _ = try edit(as: alice, "alice-\(index)") }

        let repository = try Repository.open(clone.path)
        let tip = try XCTUnwrap(ObjectID(hex: try gitOK(["rev-parse", "HEAD"], in: clone)))
        let beforeForged = try XCTUnwrap(ObjectID(hex: try gitOK(["rev-parse", "\(forged)~1"], in: clone)))
        let inBatches = IncomingCheck(repository: repository, caches: EngineCaches(), profileID: profile.info.id, signatureChunks: (size: 2, ahead: 2))
        let inOne = IncomingCheck(repository: repository, caches: EngineCaches(), profileID: profile.info.id, signatureChunks: (size: 1_000, ahead: 0))
        XCTAssertGreaterThan(try repository.newCommits(from: tip, excluding: []).count, 8, "more than four chunks of two")
        let expected = ConcordError.unauthorizedCommit(commit: String(forged.prefix(7)), signer: "vera@tablet", change: "vocabulary/puzzle",
                                                       reason: "Viewers may not write vocabulary")
        XCTAssertEqual(concordError { try inOne.verify(tip: tip, known: []) }, expected)
        XCTAssertEqual(concordError { try inBatches.verify(tip: tip, known: []) }, expected)
        let passing = try inOne.verify(tip: beforeForged, known: [])
        XCTAssertEqual(try inBatches.verify(tip: beforeForged, known: []), passing)
        XCTAssertEqual(passing, Int(try gitOK(["rev-list", "--count", beforeForged.hex], in: clone)))
    }

    /// Alice's profile, with Vera as a Viewer and vocabulary/puzzle labelled `label`, synced to a bare
    /// remote; a plain git clone of that remote, and the record's file in it.
    private func publishedWithAViewer(label: String) throws -> (alice: Identity, vera: Identity, profile: Profile, clone: URL, record: URL) {
        let alice = try makeIdentity("alice", device: "laptop")
        let vera = try makeIdentity("vera", device: "tablet")
        let profile = try makeProfile("alice", identity: alice)
        try profile.members.add("vera", role: .viewer, device: "tablet", key: vera.key.publicKey, as: alice)
        try profile.records.write(as: alice) { try $0.put("vocabulary", "puzzle", data: ["label": .string(label)]) }
        let bare = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: bare)
        try profile.sync.addRemote("origin", url: bare.path)
        _ = try profile.sync.run(as: alice)
        let clone = sandbox.appendingPathComponent("by-hand")
        try gitOK(["clone", "--quiet", "--branch", "main", bare.path, clone.path], in: sandbox)
        fsckAtEnd(profile.root, bare, clone)
        let file = try XCTUnwrap(try gitOK(["ls-files", "vocabulary"], in: clone).split(separator: "\n").first { $0.hasSuffix("/puzzle.json") })
        return (alice, vera, profile, clone, clone.appendingPathComponent(String(file)))
    }
}
