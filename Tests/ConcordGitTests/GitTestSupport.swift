import ConcordGit
import Foundation
import XCTest
@_exported import ConcordTestSupport

/// What the real git printed and how it exited.
struct GitOutput {
    let status: Int32
    let stdoutData: Data
    let stderr: String
    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
}

/// Base class of the libgit2-layer tests: temp repositories, and the git CLI as the judge.
class GitTestCase: XCTestCase {
    private(set) var sandbox: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("concord-git-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        sandbox = url
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    }

    /// A new non-bare repository with HEAD on `main`.
    func makeRepository(_ name: String = "repo") throws -> (Repository, URL) {
        let url = sandbox.appendingPathComponent(name)
        return (try Repository.create(at: url.path, bare: false), url)
    }

    /// Runs the real git in `directory`, with no user or system config, feeding `input` on stdin.
    @discardableResult
    func git(_ arguments: [String], in directory: URL, input: Data? = nil,
             environment: [String: String] = [:]) throws -> GitOutput {
        let scratch = sandbox.appendingPathComponent("git-io-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let inURL = scratch.appendingPathComponent("in")
        let outURL = scratch.appendingPathComponent("out"), errURL = scratch.appendingPathComponent("err")
        try (input ?? Data()).write(to: inURL)
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let inHandle = try FileHandle(forReadingFrom: inURL)
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin", "HOME": sandbox.path, "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C.UTF-8"]
            .merging(environment) { $1 }
        process.currentDirectoryURL = directory
        process.standardInput = inHandle
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try inHandle.close()
        try out.close()
        try err.close()
        return GitOutput(status: process.terminationStatus, stdoutData: try Data(contentsOf: outURL),
                         stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
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
        do {
            let value = try body()
            XCTFail("expected a GitError, got \(value)", file: file, line: line)
        } catch let error as GitError {
            return error
        } catch {
            XCTFail("expected a GitError, got \(type(of: error)): \(error)", file: file, line: line)
        }
        return nil
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
    func blobs(_ repository: Repository, files: [String: String]) throws -> (edits: [String: ObjectID?], changes: [WorkingTreeChange]) {
        var edits = [String: ObjectID?]()
        var changes = [WorkingTreeChange]()
        for (path, text) in files.sorted(by: { $0.key < $1.key }) {
            let bytes = Array(text.utf8)
            let blob = try repository.writeBlob(bytes)
            edits[path] = .some(blob)
            changes.append(WorkingTreeChange(path: path, bytes: bytes, blob: blob))
        }
        return (edits, changes)
    }

    func commit(_ repository: Repository, files: [String: String?], base: ObjectID? = nil, parents: [ObjectID] = [],
                message: String = "test\n", time: Int64 = 1_767_261_600) throws -> ObjectID {
        var edits = [String: ObjectID?]()
        for (path, text) in files {
            edits[path] = .some(try text.map { try repository.writeBlob(Array($0.utf8)) })
        }
        let tree = try repository.writeTree(base: base, edits: edits)
        let author = GitSignature(name: "Tester", email: "tester@example.com", time: time)
        return try repository.createSignedCommit(tree: tree, parents: parents, author: author, message: message,
                                                 sign: { _ in Self.fakeSignature })
    }
}
