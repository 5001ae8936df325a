import ConcordGit
import Foundation
import XCTest

/// Repositories, blobs, references and errors.
final class RepositoryTests: GitTestCase {
    func testCreateAndOpen() throws {
        let (repository, url) = try makeRepository()
        XCTAssertFalse(repository.isBare)
        XCTAssertEqual(repository.workdir, url.path + "/")
        XCTAssertEqual(repository.gitDirectory, url.path + "/.git/")
        XCTAssertEqual(try repository.headBranch(), "refs/heads/main")
        XCTAssertNil(try repository.resolveReference("HEAD"), "a new repository has no commit")
        XCTAssertEqual(try gitOK(["symbolic-ref", "HEAD"], in: url), "refs/heads/main")
        XCTAssertEqual(try gitOK(["rev-parse", "--is-inside-work-tree"], in: url), "true")

        let reopened = try Repository.open(url.path)
        XCTAssertEqual(reopened.gitDirectory, repository.gitDirectory)

        let bare = try Repository.create(at: sandbox.appendingPathComponent("remote.git").path, bare: true, initialBranch: "trunk")
        XCTAssertTrue(bare.isBare)
        XCTAssertNil(bare.workdir)
        XCTAssertEqual(try bare.headBranch(), "refs/heads/trunk")
        XCTAssertEqual(try gitOK(["rev-parse", "--is-bare-repository"], in: sandbox.appendingPathComponent("remote.git")), "true")
    }

    func testCreateRefusesAnExistingRepositoryAndOpenNamesTheFunction() throws {
        let (_, url) = try makeRepository()
        let again = gitError { try Repository.create(at: url.path, bare: false) }
        XCTAssertEqual(again?.function, "git_repository_init_ext")
        XCTAssertEqual(again?.code, .exists)

        let missing = sandbox.appendingPathComponent("nothing-here").path
        let error = gitError { try Repository.open(missing) }
        XCTAssertEqual(error?.function, "git_repository_open_ext")
        XCTAssertEqual(error?.code, .notFound)
        XCTAssertTrue(error?.description.hasPrefix("git_repository_open_ext failed: ") == true, error?.description ?? "")
        XCTAssertFalse(error?.message.isEmpty ?? true, "libgit2's own message is kept")
        XCTAssertFalse(error?.message.hasSuffix("\n") ?? true)
        XCTAssertLessThan(error?.rawCode ?? 0, 0)
    }

    func testBlobRoundTripAndIDsMatchGit() throws {
        let (repository, url) = try makeRepository()
        let samples: [[UInt8]] = [[], Array("hello\n".utf8), [0, 1, 2, 255, 0, 10], Array(repeating: 0x61, count: 100_000)]
        for bytes in samples {
            let id = try repository.writeBlob(bytes)
            XCTAssertEqual(try repository.blob(id), bytes)
            XCTAssertEqual(try Repository.blobID(of: bytes), id)
            XCTAssertTrue(repository.contains(id))
            XCTAssertEqual(try gitOK(["hash-object", "--stdin"], in: url, input: Data(bytes)), id.hex)
            let catFile = try git(["cat-file", "blob", id.hex], in: url)
            XCTAssertEqual(Array(catFile.stdoutData), bytes)
        }
        // blobID writes nothing.
        let unwritten = try Repository.blobID(of: Array("never written".utf8))
        XCTAssertFalse(repository.contains(unwritten))
        XCTAssertNotEqual(try git(["cat-file", "-e", unwritten.hex], in: url).status, 0)
        let missing = gitError { try repository.blob(unwritten) }
        XCTAssertEqual(missing?.function, "git_blob_lookup")
        XCTAssertEqual(missing?.code, .notFound)
    }

    func testObjectIDHex() throws {
        let hex = "0123456789abcdef0123456789abcdef01234567"
        let id = try XCTUnwrap(ObjectID(hex: hex))
        XCTAssertEqual(id.hex, hex)
        XCTAssertEqual(id.bytes.count, 20)
        XCTAssertEqual(id.short, "0123456")
        XCTAssertEqual(ObjectID(hex: hex.uppercased()), id)
        XCTAssertNil(ObjectID(hex: String(hex.dropLast())))
        XCTAssertNil(ObjectID(hex: String(hex.dropLast()) + "g"))
        XCTAssertLessThan(try XCTUnwrap(ObjectID(hex: "00" + String(hex.dropFirst(2)))), id)
    }

    func testUpdateReferenceIsCompareAndSwap() throws {
        let (repository, url) = try makeRepository()
        let first = try commit(repository, files: ["a": "1"])
        let second = try commit(repository, files: ["a": "2"], parents: [first])
        let third = try commit(repository, files: ["a": "3"], parents: [second])
        let branch = "refs/heads/main"

        try repository.updateReference(branch, to: first, expected: nil, message: "create")
        XCTAssertEqual(try repository.resolveReference("HEAD"), first)
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: url), first.hex)

        // "Must not exist yet" fails once it exists.
        let exists = gitError { try repository.updateReference(branch, to: second, expected: nil, message: "again") }
        XCTAssertEqual(exists?.code, .exists)
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: url), first.hex)

        // A wrong expectation moves nothing.
        let stale = gitError { try repository.updateReference(branch, to: third, expected: second, message: "stale") }
        XCTAssertEqual(stale?.code, .modified)
        XCTAssertEqual(stale?.function, "git_reference_create_matching")
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: url), first.hex)
        XCTAssertEqual(try repository.resolveReference(branch), first)

        // The right expectation moves it, and the reflog records the message.
        try repository.updateReference(branch, to: second, expected: first, message: "concord: step")
        XCTAssertEqual(try gitOK(["rev-parse", "main"], in: url), second.hex)
        XCTAssertTrue(try gitOK(["reflog", "-1", "--format=%gs", "main"], in: url).contains("concord: step"))

        // A branch moved by the git CLI is seen too.
        try gitOK(["update-ref", branch, third.hex], in: url)
        XCTAssertEqual(gitError { try repository.updateReference(branch, to: first, expected: second, message: "x") }?.code, .modified)
        try repository.deleteReference(branch)
        XCTAssertNil(try repository.resolveReference(branch))
        try repository.deleteReference(branch)   // deleting a missing reference is fine
    }

    func testConfigGoesToTheRepositoryFile() throws {
        let (repository, url) = try makeRepository()
        try repository.setConfig("gpg.format", "ssh")
        try repository.setConfig("concord.flag", true)
        XCTAssertEqual(try repository.configString("gpg.format"), "ssh")
        XCTAssertEqual(try gitOK(["config", "--local", "--get", "gpg.format"], in: url), "ssh")
        XCTAssertEqual(try gitOK(["config", "--local", "--get", "concord.flag"], in: url), "true")
        XCTAssertNil(try repository.configString("concord.missing"))
        try repository.removeConfig("gpg.format")
        try repository.removeConfig("gpg.format")
        XCTAssertNil(try repository.configString("gpg.format"))
        XCTAssertNotEqual(try git(["config", "--local", "--get", "gpg.format"], in: url).status, 0)
    }

    func testApplyToWorkingTreeKeepsGitStatusClean() throws {
        let (repository, url) = try makeRepository()
        let files = ["notes/a.json": "{}\n", "notes/deep/b.json": "[]\n", "top.txt": "top\n"]
        let (edits, changes) = try blobs(repository, files: files)
        let tree = try repository.writeTree(base: nil, edits: edits)
        let first = try repository.createSignedCommit(tree: tree, parents: [], author: Self.author, message: "one\n",
                                                      sign: { _ in Self.fakeSignature })
        try repository.updateReference("refs/heads/main", to: first, expected: nil, message: "one")
        try repository.applyToWorkingTree(changes)
        XCTAssertEqual(try String(contentsOf: url.appendingPathComponent("notes/deep/b.json"), encoding: .utf8), "[]\n")
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: url), "")

        // Removing the only file of notes/deep removes the directory too.
        let tree2 = try repository.writeTree(base: tree, edits: ["notes/deep/b.json": ObjectID?.none])
        let second = try repository.createSignedCommit(tree: tree2, parents: [first], author: Self.author, message: "two\n",
                                                       sign: { _ in Self.fakeSignature })
        try repository.updateReference("refs/heads/main", to: second, expected: first, message: "two")
        try repository.applyToWorkingTree([WorkingTreeChange(removing: "notes/deep/b.json")])
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.appendingPathComponent("notes/deep").path))
        XCTAssertTrue(FileManager.default.fileExists(atPath: url.appendingPathComponent("notes/a.json").path))
        XCTAssertEqual(try gitOK(["status", "--porcelain", "--untracked-files=all"], in: url), "")

        // resetIndex makes the index match a tree exactly.
        try repository.resetIndex(to: tree2)
        XCTAssertEqual(try gitOK(["diff-index", "--cached", "--name-only", "HEAD"], in: url), "")
    }

    /// The working-tree writer's own line of defence, behind the check of fetched commits: it
    /// refuses any path that would leave the working tree or reach `.git`, and any directory on
    /// the way that is a symbolic link (or a file), and writes nothing for such a batch.
    func testTheWorkingTreeWriterRefusesPathsOutsideAndThroughLinks() throws {
        let (repository, url) = try makeRepository()
        let outside = sandbox.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let blob = try repository.writeBlob(Array("x\n".utf8))
        // The writer takes only `TreePath`s, and none names a place outside or in `.git`.
        for path in ["../outside/escaped", ".git/config", ".GIT/hooks/x", "a/../../outside/escaped", "/tmp/escaped", "a/./b", "a//b",
                     "git~1/config", ".git./config"] {
            XCTAssertThrowsError(try TreePath(path), "\(path) was accepted")
        }
        // A directory on the way that is a link to somewhere else.
        try FileManager.default.createSymbolicLink(at: url.appendingPathComponent("linked"), withDestinationURL: outside)
        XCTAssertThrowsError(try repository.applyToWorkingTree([WorkingTreeChange(path: "linked/escaped", bytes: Array("x\n".utf8), blob: blob)]))
        XCTAssertThrowsError(try repository.applyToWorkingTree([WorkingTreeChange(removing: "linked/victim")]))
        // A file where a directory should be.
        try Data("f".utf8).write(to: url.appendingPathComponent("plain"))
        XCTAssertThrowsError(try repository.applyToWorkingTree([WorkingTreeChange(path: "plain/x", bytes: Array("x\n".utf8), blob: blob)]))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: outside.path), [], "something was written outside")
        XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent(".git/config")).isEmpty, false)
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/escaped"))
        // And an ordinary path still goes through.
        try repository.applyToWorkingTree([WorkingTreeChange(path: "fine/file.json", bytes: Array("x\n".utf8), blob: blob)])
        XCTAssertTrue(FileManager.default.fileExists(atPath: url.appendingPathComponent("fine/file.json").path))
    }

    /// A batch large enough to be written on every core is still checked whole first: a link
    /// on the way of one file among thousands means no file of the batch is written.
    func testABulkWriteWithOneLinkOnTheWayWritesNoFile() throws {
        let (repository, url) = try makeRepository()
        let outside = sandbox.appendingPathComponent("outside-bulk")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: url.appendingPathComponent("zz"), withDestinationURL: outside)
        let blob = try repository.writeBlob(Array("x\n".utf8))
        var changes = (0..<3_000).map { try! WorkingTreeChange(path: TreePath("d\($0 % 50)/f\($0).json"), bytes: Array("x\n".utf8), blob: blob) }
        changes.append(WorkingTreeChange(path: "zz/escaped.json", bytes: Array("x\n".utf8), blob: blob))
        XCTAssertThrowsError(try repository.applyToWorkingTree(changes)) { error in
            XCTAssertTrue("\(error)".contains("zz"), "\(error)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: outside.path), [], "something was written through the link")
        let written = (0..<3_000).filter { FileManager.default.fileExists(atPath: url.appendingPathComponent("d\($0 % 50)/f\($0).json").path) }
        XCTAssertEqual(written, [], "files of the refused batch were written")
        // Without the link the same batch is written whole.
        try FileManager.default.removeItem(at: url.appendingPathComponent("zz"))
        try repository.applyToWorkingTree(changes)
        XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent("d7/f2007.json")), Data("x\n".utf8))
        XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent("zz/escaped.json")), Data("x\n".utf8))
    }

    /// A removal that empties a directory does not take away the directory of a file written in
    /// the same batch (they were made before the removal ran, and the file then had nowhere to go).
    func testARemovalDoesNotTakeTheDirectoryOfAFileWrittenWithIt() throws {
        let (repository, url) = try makeRepository()
        let blob = try repository.writeBlob(Array("x\n".utf8))
        try repository.applyToWorkingTree([WorkingTreeChange(path: "d/b.json", bytes: Array("x\n".utf8), blob: blob)])
        try repository.applyToWorkingTree([WorkingTreeChange(path: "d/a.json", bytes: Array("y\n".utf8), blob: blob),
                                           WorkingTreeChange(removing: "d/b.json")])
        XCTAssertEqual(try Data(contentsOf: url.appendingPathComponent("d/a.json")), Data("y\n".utf8))
        XCTAssertFalse(FileManager.default.fileExists(atPath: url.appendingPathComponent("d/b.json").path))
    }
}

/// libgit2's start-up without the system's CA certificates (CLibgit2Startup).
final class Libgit2StartupTests: GitTestCase {
    func testLibgit2StartsWithoutParsingCACertificatesAndStillWorks() throws {
        // The dynamic linker resolves libgit2's mbedTLS certificate loading to Concord's no-op.
        XCTAssertTrue(Libgit2Startup.skipsCACertificates, "libgit2 would parse /etc/ssl/certs at start-up")
        // And libgit2 works as before: a repository, a blob, a reference.
        let (repository, url) = try makeRepository()
        XCTAssertNil(try repository.resolveReference("HEAD"))
        XCTAssertEqual(try gitOK(["rev-parse", "--is-inside-work-tree"], in: url), "true")
    }
}
