import ConcordTrust
import Foundation
import XCTest

/// Runs the real `ssh-keygen`, the independent judge of what ConcordTrust writes.
enum SSHKeygen {
    static let path = "/usr/bin/ssh-keygen"

    struct Output {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// Skips the calling test when ssh-keygen is not installed.
    static func require() throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw XCTSkip("ssh-keygen is not installed at \(path)")
        }
    }

    /// Runs ssh-keygen with `arguments`, feeding `stdin` if given, in `directory`.
    @discardableResult
    static func run(_ arguments: [String], stdin: [UInt8]? = nil, in directory: URL? = nil) throws -> Output {
        try require()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin)) }
        try input.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(
            status: process.terminationStatus,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }
}

extension XCTestCase {
    /// A fresh temporary directory, removed when the test ends.
    func makeTempDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("concord-trust-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
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
        do {
            let value = try body()
            XCTFail("expected a TrustError, got \(value)", file: file, line: line)
        } catch let error as TrustError {
            return error
        } catch {
            XCTFail("expected a TrustError, got \(error)", file: file, line: line)
        }
        return nil
    }
}
