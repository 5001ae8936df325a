import ConcordTrust
import Foundation
import XCTest
@_exported import ConcordTestSupport

/// Runs the real `ssh-keygen`, the independent judge of what ConcordTrust writes.
enum SSHKeygen {
    static let path = "/usr/bin/ssh-keygen"

    /// Skips the calling test when ssh-keygen is not installed.
    static func require() throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw XCTSkip("ssh-keygen is not installed at \(path)")
        }
    }

    /// Runs ssh-keygen with `arguments` (in this process's environment), feeding `stdin` if given, in `directory`.
    @discardableResult
    static func run(_ arguments: [String], stdin: [UInt8]? = nil, in directory: URL? = nil) throws -> RunResult {
        try require()
        return try ProcessRunner.run(path, arguments, environment: ProcessInfo.processInfo.environment, in: directory,
                                     input: stdin.map { Data($0) })
    }
}

extension XCTestCase {
    /// A fresh temporary directory, removed when the test ends.
    func makeTempDirectory() throws -> URL {
        try makeSandbox(prefix: "concord-trust-tests", removedBy: addTeardownBlock)
    }

    /// Writes `text` to `url` with `mode`.
    func write(_ text: String, to url: URL, mode: Int = 0o600) throws {
        try Data(text.utf8).write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
    }

    /// The permission bits of `url`.
    func mode(of url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    /// The `TrustError` that `body` throws; fails the test (and returns nil) if it throws nothing
    /// or another error type.
    func trustError<T>(file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T) -> TrustError? {
        let thrown = thrownError(TrustError.self, by: body)
        if let problem = thrown.problem { XCTFail(problem, file: file, line: line) }
        return thrown.error
    }
}
