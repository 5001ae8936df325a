import ConcordGit
import Foundation
import XCTest

/// Trees built by edits, signed commits, history walks.
final class TreeAndCommitTests: GitTestCase {
    private func blob(_ repository: Repository, _ text: String) throws -> ObjectID? {
        try repository.writeBlob(Array(text.utf8))
    }

    func testWriteTreeWithNestedEditsReusesUnchangedSubtrees() throws {
        let (repository, url) = try makeRepository()
        let tree1 = try repository.writeTree(base: nil, edits: [
            "a/x.json": try blob(repository, "x1"), "a/y.json": try blob(repository, "y"),
            "b/c/z.json": try blob(repository, "z"), "b/w.json": try blob(repository, "w"), "top.txt": try blob(repository, "t"),
        ])
        XCTAssertEqual(try gitOK(["ls-tree", "-r", "--name-only", tree1.hex], in: url).split(separator: "\n"),
                       ["a/x.json", "a/y.json", "b/c/z.json", "b/w.json", "top.txt"])
        XCTAssertEqual(try gitOK(["cat-file", "-p", "\(tree1.hex):a/x.json"], in: url), "x1")

        let tree2 = try repository.writeTree(base: tree1, edits: ["a/x.json": try blob(repository, "x2")])
        XCTAssertNotEqual(tree1, tree2)
        let b1 = try XCTUnwrap(repository.entry(at: "b", inTree: tree1))
        let b2 = try XCTUnwrap(repository.entry(at: "b", inTree: tree2))
        XCTAssertEqual(b1.id, b2.id, "the untouched subtree b is reused by id")
        XCTAssertEqual(b1.kind, .tree)
        XCTAssertEqual(try repository.entry(at: "top.txt", inTree: tree2)?.id, try repository.entry(at: "top.txt", inTree: tree1)?.id)
        XCTAssertNotEqual(try repository.entry(at: "a", inTree: tree2)?.id, try repository.entry(at: "a", inTree: tree1)?.id)
        XCTAssertEqual(try repository.entry(at: "a/y.json", inTree: tree2)?.id, try repository.entry(at: "a/y.json", inTree: tree1)?.id)
        // git agrees on all of it.
        XCTAssertEqual(try gitOK(["rev-parse", "\(tree2.hex):b"], in: url), try gitOK(["rev-parse", "\(tree1.hex):b"], in: url))
        XCTAssertEqual(try gitOK(["cat-file", "-p", "\(tree2.hex):a/x.json"], in: url), "x2")
        XCTAssertEqual(try gitOK(["diff-tree", "-r", "--name-only", tree1.hex, tree2.hex], in: url), "a/x.json")

        // The same content written from scratch gives the same id as the edited tree (trees are canonical).
        let scratch = try repository.writeTree(base: nil, edits: [
            "a/x.json": try blob(repository, "x2"), "a/y.json": try blob(repository, "y"),
            "b/c/z.json": try blob(repository, "z"), "b/w.json": try blob(repository, "w"), "top.txt": try blob(repository, "t"),
        ])
        XCTAssertEqual(scratch, tree2)

        // entries(inDirectory:) lists one level, sorted; a missing directory is empty.
        XCTAssertEqual(try repository.entries(inDirectory: "b", ofTree: tree2).map(\.name), ["c", "w.json"])
        XCTAssertEqual(try repository.entries(inDirectory: "", ofTree: tree2).map(\.name), ["a", "b", "top.txt"])
        XCTAssertEqual(try repository.entries(inDirectory: "nope", ofTree: tree2), [])
        XCTAssertNil(try repository.entry(at: "a/none.json", inTree: tree2))
        XCTAssertEqual(try git(["fsck", "--full", "--no-dangling"], in: url).status, 0)
    }

    func testRemovingTheLastFileOfADirectoryRemovesTheDirectory() throws {
        let (repository, url) = try makeRepository()
        let tree1 = try repository.writeTree(base: nil, edits: [
            "b/c/z.json": try blob(repository, "z"), "b/w.json": try blob(repository, "w"), "keep.txt": try blob(repository, "k"),
        ])
        let tree2 = try repository.writeTree(base: tree1, edits: ["b/c/z.json": ObjectID?.none])
        XCTAssertNil(try repository.entry(at: "b/c", inTree: tree2))
        XCTAssertEqual(try repository.entries(inDirectory: "b", ofTree: tree2).map(\.name), ["w.json"])
        let tree3 = try repository.writeTree(base: tree2, edits: ["b/w.json": ObjectID?.none])
        XCTAssertNil(try repository.entry(at: "b", inTree: tree3))
        XCTAssertEqual(try gitOK(["ls-tree", "-r", "--name-only", tree3.hex], in: url), "keep.txt")

        // Removing everything leaves git's empty tree.
        let empty = try repository.writeTree(base: tree3, edits: ["keep.txt": ObjectID?.none])
        XCTAssertEqual(empty.hex, try gitOK(["hash-object", "-t", "tree", "--stdin"], in: url, input: Data()))
        XCTAssertEqual(try gitOK(["ls-tree", empty.hex], in: url), "")
    }

    func testRemovingAMissingFileChangesNothing() throws {
        let (repository, _) = try makeRepository()
        let tree = try repository.writeTree(base: nil, edits: ["dir/keep.txt": try blob(repository, "k")])
        XCTAssertEqual(try repository.writeTree(base: tree, edits: ["nothing": ObjectID?.none]), tree)
        XCTAssertEqual(try repository.writeTree(base: tree, edits: ["dir/missing": ObjectID?.none]), tree)
        XCTAssertEqual(try repository.writeTree(base: tree, edits: ["missing/file": ObjectID?.none]), tree)
    }

    func testRemovingAPathBelowAFileLeavesTheFileAlone() throws {
        // "a" is a file; removing "a/b" (which cannot exist) must not delete "a".
        let (repository, url) = try makeRepository()
        let tree = try repository.writeTree(base: nil, edits: ["a": try blob(repository, "file a"), "other": try blob(repository, "o")])
        let edited = try repository.writeTree(base: tree, edits: ["a/b": ObjectID?.none])
        XCTAssertEqual(try gitOK(["ls-tree", "-r", "--name-only", edited.hex], in: url).split(separator: "\n"), ["a", "other"])
        XCTAssertEqual(edited, tree)
    }

    func testCreateSignedCommitStoresTheSignatureOverTheCommitText() throws {
        let (repository, url) = try makeRepository()
        let tree = try repository.writeTree(base: nil, edits: ["f.txt": try blob(repository, "f")])
        var signed = [UInt8]()
        let author = GitSignature(name: "Alice", email: "alice@laptop", time: 1_767_261_600, offsetMinutes: 60)
        let message = "summary line\n\nConcord-Action: added\n"
        let id = try repository.createSignedCommit(tree: tree, parents: [], author: author, message: message) { bytes in
            signed = bytes
            return Self.fakeSignature
        }
        let raw = try git(["cat-file", "commit", id.hex], in: url).stdout
        XCTAssertTrue(raw.contains("\ngpgsig -----BEGIN SSH SIGNATURE-----\n U0lHTkFUVVJF\n -----END SSH SIGNATURE-----\n"), raw)
        // The signer saw exactly the commit without its gpgsig header: what git hands to ssh-keygen.
        let unsigned = raw.replacingOccurrences(of: "gpgsig -----BEGIN SSH SIGNATURE-----\n U0lHTkFUVVJF\n -----END SSH SIGNATURE-----\n", with: "")
        XCTAssertEqual(String(decoding: signed, as: UTF8.self), unsigned)
        XCTAssertTrue(unsigned.hasPrefix("tree \(tree.hex)\nauthor Alice <alice@laptop> 1767261600 +0100\ncommitter Alice <alice@laptop> 1767261600 +0100\n\n"),
                      unsigned)
        XCTAssertTrue(unsigned.hasSuffix("\n\n" + message), unsigned)
        XCTAssertEqual(try gitOK(["log", "-1", "--format=%(trailers:key=Concord-Action,valueonly)", id.hex], in: url), "added")

        let extracted = try XCTUnwrap(repository.signature(ofCommit: id))
        XCTAssertEqual(extracted.signature, Self.fakeSignature)
        XCTAssertEqual(extracted.signedData, signed)

        let commit = try repository.commit(id)
        XCTAssertEqual(commit.id, id)
        XCTAssertEqual(commit.tree, tree)
        XCTAssertEqual(commit.parents, [])
        XCTAssertEqual(commit.author, author)
        XCTAssertEqual(commit.committer, author)
        XCTAssertEqual(commit.message, message)

        // A commit made by plain git without a signature has none.
        let plain = try gitOK(["-c", "user.name=G", "-c", "user.email=g@x", "commit-tree", tree.hex, "-m", "plain"], in: url)
        XCTAssertNil(try repository.signature(ofCommit: try XCTUnwrap(ObjectID(hex: plain))))
        XCTAssertEqual(try git(["fsck", "--full", "--strict", "--no-dangling"], in: url).status, 0)
    }

    /// `signature(ofCommit:)` splits the parsed commit itself (bench row B7); it must give what
    /// libgit2's `git_commit_extract_signature` gives: a commit signed by plain git with an ssh key,
    /// one signed here, an unsigned one, and hand-made ones with the signature between other
    /// header fields, two signature fields, and a blank line inside the signature.
    func testSignatureSplitAgreesWithLibgit2() throws {
        let (repository, url) = try makeRepository()
        let tree = try repository.writeTree(base: nil, edits: ["f.txt": try blob(repository, "f")])
        let author = GitSignature(name: "Alice", email: "alice@laptop", time: 1_767_261_600, offsetMinutes: 60)
        var ids = [try repository.createSignedCommit(tree: tree, parents: [], author: author, message: "m\n\nConcord-Actor: alice\n") { _ in
            Self.fakeSignature
        }]
        let key = sandbox.appendingPathComponent("key")
        try ProcessRunner.run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "g@x", "-f", key.path], environment: [:])
        ids.append(try XCTUnwrap(ObjectID(hex: try gitOK(["-c", "user.name=G", "-c", "user.email=g@x", "-c", "gpg.format=ssh",
                                                          "-c", "user.signingkey=\(key.path)", "commit-tree", "-S", tree.hex, "-m", "by git"], in: url))))
        ids.append(try XCTUnwrap(ObjectID(hex: try gitOK(["-c", "user.name=G", "-c", "user.email=g@x", "commit-tree", tree.hex, "-m", "plain"], in: url))))
        let people = "author A <a@x> 1767261600 +0000\ncommitter A <a@x> 1767261600 +0000\n"
        for raw in [
            "tree \(tree.hex)\n\(people)gpgsig -----BEGIN SSH SIGNATURE-----\n U0lH\n -----END SSH SIGNATURE-----\nencoding UTF-8\n\nmiddle\n",
            "tree \(tree.hex)\n\(people)gpgsig first\n line\ngpgsig second\n\ntwo fields\n",
            "tree \(tree.hex)\n\(people)gpgsig -----BEGIN SSH SIGNATURE-----\n U0lH\n \n -----END SSH SIGNATURE-----\n\nblank line inside\n\ngpgsig in the message\n",
        ] {
            ids.append(try XCTUnwrap(ObjectID(hex: try gitOK(["hash-object", "-t", "commit", "-w", "--literally", "--stdin"], in: url,
                                                            input: Data(raw.utf8)))))
        }
        for id in ids where id != ids[4] {
            XCTAssertEqual(try repository.signature(ofCommit: id), try repository.libgit2Signature(ofCommit: id), id.hex)
        }
        XCTAssertNil(try repository.signature(ofCommit: ids[2]))
        // The same split from a commit's bytes (what a path fetch verifies ahead): the same
        // answer, and nothing where this reader refuses.
        for id in ids {
            let raw = Array(try git(["cat-file", "commit", id.hex], in: url).stdout.utf8)
            XCTAssertEqual(CommitSignature(rawCommit: raw), try? repository.signature(ofCommit: id), id.hex)
        }
        // Where git and libgit2 read a commit differently, it is refused: two signature fields
        // (libgit2 takes the first, git joins them), a gpgsig-sha256 field (git drops it from what
        // it verifies), a NUL byte (libgit2 stops reading there, git does not).
        XCTAssertEqual(try repository.libgit2Signature(ofCommit: ids[4])?.signature, "first\nline")
        XCTAssertThrowsError(try repository.signature(ofCommit: ids[4]))
        for raw in ["tree \(tree.hex)\n\(people)gpgsig-sha256 x\ngpgsig -----BEGIN SSH SIGNATURE-----\n U0lH\n\nsha256 field\n",
                    "tree \(tree.hex)\n\(people)gpgsig -----BEGIN SSH SIGNATURE-----\n U0lH\n\nnul\u{0}after\n"] {
            let id = try XCTUnwrap(ObjectID(hex: try gitOK(["hash-object", "-t", "commit", "-w", "--literally", "--stdin"], in: url, input: Data(raw.utf8))))
            XCTAssertThrowsError(try repository.signature(ofCommit: id), raw.debugDescription)
            XCTAssertNil(CommitSignature(rawCommit: Array(raw.utf8)), raw.debugDescription)
        }
    }

    func testSignerErrorsWriteNoCommit() throws {
        struct SignerFailed: Error {}
        let (repository, url) = try makeRepository()
        let tree = try repository.writeTree(base: nil, edits: ["f.txt": try blob(repository, "f")])
        XCTAssertThrowsError(try repository.createSignedCommit(tree: tree, parents: [], author: Self.author, message: "m\n") { _ in
            throw SignerFailed()
        }) { XCTAssertTrue($0 is SignerFailed) }
        XCTAssertEqual(try gitOK(["count-objects"], in: url).hasPrefix("2 objects"), true, "only the blob and the tree")
    }

    func testWalkHistoryNewestFirst() throws {
        let (repository, url) = try makeRepository()
        var ids = [ObjectID]()
        for index in 0..<5 {
            ids.append(try commit(repository, files: ["n": "\(index)"], parents: ids.suffix(1), message: "c\(index)\n",
                                  time: 1_767_261_600 + Int64(index)))
        }
        var seen = [ObjectID]()
        try repository.walkHistory(from: ids[4]) { commit in
            seen.append(commit.id)
            return true
        }
        XCTAssertEqual(seen, ids.reversed())
        XCTAssertEqual(seen.map(\.hex), try gitOK(["rev-list", ids[4].hex], in: url).split(separator: "\n").map(String.init))

        // Equal times (a fixed clock): parents still come after children.
        var same = [ObjectID]()
        for index in 0..<4 {
            same.append(try commit(repository, files: ["s": "\(index)"], parents: same.suffix(1), message: "s\(index)\n"))
        }
        var order = [String]()
        try repository.walkHistory(from: same[3]) { order.append($0.message); return true }
        XCTAssertEqual(order, ["s3\n", "s2\n", "s1\n", "s0\n"])

        // Returning false stops the walk.
        var count = 0
        try repository.walkHistory(from: ids[4]) { _ in count += 1; return count < 2 }
        XCTAssertEqual(count, 2)

        XCTAssertTrue(try repository.isAncestor(ids[1], of: ids[3]))
        XCTAssertTrue(try repository.isAncestor(ids[3], of: ids[3]))
        XCTAssertFalse(try repository.isAncestor(ids[3], of: ids[1]))
        XCTAssertFalse(try repository.isAncestor(same[0], of: ids[4]))
    }

    /// `recentCommits` (the clock's look back when it cannot tell what HEAD gained): the newest
    /// `count` commits, newest first as git lists them, across a merge; all of them when fewer.
    func testRecentCommitsAreTheNewestAsGitListsThem() throws {
        let (repository, url) = try makeRepository()
        var line = [ObjectID]()
        for index in 0..<6 {
            line.append(try commit(repository, files: ["n": "\(index)"], parents: line.suffix(1), message: "c\(index)\n",
                                   time: 1_767_261_600 + Int64(index) * 10))
        }
        let side = try commit(repository, files: ["side": "1"], parents: [line[2]], message: "side\n", time: 1_767_261_600 + 35)
        let merge = try commit(repository, files: ["m": "1"], parents: [line[5], side], message: "merge\n", time: 1_767_261_600 + 60)
        let listed = try gitOK(["rev-list", "--date-order", merge.hex], in: url).split(separator: "\n").map(String.init)
        XCTAssertEqual(try repository.recentCommits(from: merge, count: 4).map(\.id.hex), Array(listed.prefix(4)))
        XCTAssertEqual(try repository.recentCommits(from: merge, count: 4).map(\.id), [merge, line[5], line[4], side])
        XCTAssertEqual(try repository.recentCommits(from: merge, count: 100).map(\.id.hex), listed, "every commit, once")
    }

    func testCommitLookupErrorNamesTheFunction() throws {
        let (repository, _) = try makeRepository()
        let missing = try XCTUnwrap(ObjectID(hex: String(repeating: "ab", count: 20)))
        let error = gitError { try repository.commit(missing) }
        XCTAssertEqual(error?.function, "git_commit_lookup")
        XCTAssertEqual(error?.code, .notFound)
        XCTAssertTrue(error?.description.contains("git_commit_lookup") == true)
        let tree = gitError { try repository.writeTree(base: missing, edits: [:]) }
        XCTAssertEqual(tree?.function, "git_tree_lookup")
    }
}
