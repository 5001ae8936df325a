import ConcordGit
import Foundation
import XCTest
@_exported import ConcordTestSupport

/// Base class of the libgit2-layer tests: temp repositories, and the git CLI as the judge.
class GitTestCase: XCTestCase {
    private(set) var sandbox: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        sandbox = try makeSandbox(prefix: "concord-git-tests", removedBy: addTeardownBlock)
    }

    /// A new non-bare repository with HEAD on `main`.
    func makeRepository(_ name: String = "repo") throws -> (Repository, URL) {
        let url = sandbox.appendingPathComponent(name)
        return (try Repository.create(at: url.path, bare: false), url)
    }

    /// Runs the real git in `directory`, with no user or system config, feeding `input` on stdin.
    @discardableResult
    func git(_ arguments: [String], in directory: URL, input: Data? = nil,
             environment: [String: String] = [:]) throws -> RunResult {
        try ProcessRunner.run(gitPath, arguments, environment: isolatedEnvironment(home: sandbox, environment),
                              in: directory, input: input)
    }

    /// git's trimmed stdout, failing the test unless git exits 0.
    @discardableResult
    func gitOK(_ arguments: [String], in directory: URL, input: Data? = nil, environment: [String: String] = [:],
               file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let output = try git(arguments, in: directory, input: input, environment: environment)
        XCTAssertEqual(output.status, 0, "git \(arguments.joined(separator: " ")): \(output.stderr)", file: file, line: line)
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Writes `files` (path → text) into the working tree at `url` and, with `commit`, has the git
    /// CLI add and commit them (git then builds the index, cache tree included).
    func writeWithGit(_ files: [String: String], in url: URL, commit: Bool = true) throws {
        for (path, text) in files {
            let file = url.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: false, encoding: .utf8)
        }
        try gitOK(["add", "-A"], in: url)
        if commit { try gitOK(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base"], in: url) }
    }

    /// The `GitError` that `body` throws; fails the test if it throws nothing or something else.
    func gitError<T>(file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T) -> GitError? {
        let thrown = thrownError(GitError.self, by: body)
        if let problem = thrown.problem { XCTFail(problem, file: file, line: line) }
        return thrown.error
    }

    /// Loose object files under `.git/objects/xx/`.
    func looseObjects(_ repository: URL) throws -> [String] {
        let objects = repository.appendingPathComponent(".git/objects")
        return try FileManager.default.contentsOfDirectory(atPath: objects.path)
            .filter { $0.count == 2 }
            .flatMap { directory in
                try FileManager.default.contentsOfDirectory(atPath: objects.appendingPathComponent(directory).path)
                    .map { directory + $0 }
            }
    }

    /// Files in `.git/objects/pack` with `suffix`.
    func packFiles(_ repository: URL, suffix: String = ".pack") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: repository.appendingPathComponent(".git/objects/pack").path)
            .filter { $0.hasSuffix(suffix) }
    }

    static let author = GitSignature(name: "Tester", email: "tester@example.com", time: 1_767_261_600)

    /// A fake armored SSH signature: git stores whatever the signer returns.
    static let fakeSignature = "-----BEGIN SSH SIGNATURE-----\nU0lHTkFUVVJF\n-----END SSH SIGNATURE-----"

    /// Writes files (path → text) as blobs and a tree over `base`, then a commit on `parents`.
    /// Writes a blob for each of `files` (path → text); returns them as tree edits and as the
    /// working-tree changes that write the files (in path order).
    func blobs(_ repository: Repository, files: [String: String]) throws -> (edits: [TreePath: ObjectID?], changes: [WorkingTreeChange]) {
        var edits = [TreePath: ObjectID?]()
        var changes = [WorkingTreeChange]()
        for (path, text) in files.sorted(by: { $0.key < $1.key }) {
            let bytes = Array(text.utf8)
            let blob = try repository.writeBlob(bytes)
            edits[try TreePath(path)] = .some(blob)
            changes.append(WorkingTreeChange(path: try TreePath(path), bytes: bytes, blob: blob))
        }
        return (edits, changes)
    }

    func commit(_ repository: Repository, files: [String: String?], base: ObjectID? = nil, parents: [ObjectID] = [],
                message: String = "test\n", time: Int64 = 1_767_261_600) throws -> ObjectID {
        var edits = [TreePath: ObjectID?]()
        for (path, text) in files {
            edits[try TreePath(path)] = .some(try text.map { try repository.writeBlob(Array($0.utf8)) })
        }
        let tree = try repository.writeTree(base: base, edits: edits)
        let author = GitSignature(name: "Tester", email: "tester@example.com", time: time)
        return try repository.createSignedCommit(tree: tree, parents: parents, author: author, message: message,
                                                 sign: { _ in Self.fakeSignature })
    }

    /// A real sshd, stopped when the test ends, that lets in one new client key and runs `script`
    /// (a /bin/sh script) as that key's forced command, whatever the client asks for.
    func sshServer(forcedCommand script: String) throws -> (server: SSHServer, key: SSHClientKey) {
        let tag = UUID().uuidString.prefix(6)
        let server = try SSHServer(directory: sandbox.appendingPathComponent("sshd-\(tag)"))
        try server.start()
        addTeardownBlock { server.stop() }
        let key = try SSHClientKey.generate(in: sandbox, name: "client-\(tag)", home: sandbox)
        let serve = sandbox.appendingPathComponent("serve-\(tag).sh")
        try Data(("#!/bin/sh\n" + script).utf8).write(to: serve)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: serve.path)
        try server.authorize(publicKeyLine: "command=\"\(serve.path)\",restrict " + key.publicKeyLine)
        return (server, key)
    }
}
