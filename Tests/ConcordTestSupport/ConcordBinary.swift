import Foundation
import Synchronization

/// The `concord` executable the tests run.
public enum ConcordBinary {
    /// The test class running now (`ConcordTestCase` sets it), for `noteStart`.
    public static let runningClass = Mutex("")

    /// With `CONCORD_TEST_SPAWN_LOG=<file>`, each start of the binary (`path`) appends the running
    /// test class's name to that file: which classes still start concord as a process.
    public static func noteStart(of program: String) {
        guard program == path, let log = ProcessInfo.processInfo.environment["CONCORD_TEST_SPAWN_LOG"], !log.isEmpty else { return }
        let line = Data((runningClass.withLock { $0 } + "\n").utf8)
        guard let handle = FileHandle(forWritingAtPath: log) ?? (FileManager.default.createFile(atPath: log, contents: nil)
            ? FileHandle(forWritingAtPath: log) : nil) else { return }
        handle.seekToEndOfFile()
        handle.write(line)
        try? handle.close()
    }

    public struct Missing: Error, CustomStringConvertible {
        let program: String
        public init(program: String = "concord") { self.program = program }
        public var description: String { "the \(program) binary was not found: run swift build first (or set CONCORD_BIN)" }
    }

    /// `path`, or `Missing` (which says to build it) for a test to fail with.
    public static func required() throws -> String {
        guard let path else { throw Missing() }
        return path
    }

    /// `concord-lookup` (sshd's AuthorizedKeysCommand), built beside `concord`; `Missing` when it is not there.
    public static func requiredLookup() throws -> String {
        let lookup = URL(fileURLWithPath: try required()).deletingLastPathComponent().appendingPathComponent("concord-lookup").path
        guard FileManager.default.isExecutableFile(atPath: lookup) else { throw Missing(program: "concord-lookup") }
        return lookup
    }

    /// `CONCORD_BIN`, else next to the test bundle (.build/debug), else the package's `.build/debug`.
    public static let path: String? = {
        let fileManager = FileManager.default
        func isExecutableFile(_ path: String) -> Bool {
            var isDirectory: ObjCBool = false
            return fileManager.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
                && fileManager.isExecutableFile(atPath: path)
        }
        if let path = ProcessInfo.processInfo.environment["CONCORD_BIN"], !path.isEmpty {
            return isExecutableFile(path) ? path : nil
        }
        var directories = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        if let first = CommandLine.arguments.first {
            directories.append(URL(fileURLWithPath: first).deletingLastPathComponent())
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        directories.append(packageRoot.appendingPathComponent(".build/debug"))
        return directories.map { $0.appendingPathComponent("concord").path }.first(where: isExecutableFile)
    }()
}
