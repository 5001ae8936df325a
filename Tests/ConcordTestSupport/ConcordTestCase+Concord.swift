// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest

/// The `concord` binary run as a simulated device. Every runner comes twice: without `clock:` it runs
/// under the test class's `defaultClock`, with `clock:` under that one (nil: CONCORD_CLOCK unset).
extension ConcordTestCase {
    /// The environment `device` runs concord with (see `environment(_:)`), under the class's clock.
    package func concordEnvironment(_ device: TestDevice?) -> [String: String] {
        concordEnvironment(device, clock: Self.defaultClock)
    }

    /// The environment `device` runs concord with (see `environment(_:)`); `clock` sets CONCORD_CLOCK.
    package func concordEnvironment(_ device: TestDevice?, clock: String?) -> [String: String] {
        var extra = [String: String]()
        if let device { extra["CONCORD_HOME"] = device.home.path }
        if let clock { extra["CONCORD_CLOCK"] = clock }
        return environment(extra)
    }

    /// Runs `concord arguments` as `device` in `directory` (the sandbox when nil), with `input` on its standard input.
    @discardableResult
    package func concord(_ arguments: [String], as device: TestDevice?, in directory: URL? = nil, input: Data? = nil,
                         file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        try concord(arguments, as: device, in: directory, clock: Self.defaultClock, input: input, file: file, line: line)
    }

    /// In this process (`InProcessConcord`) unless the class runs the binary (`runsConcordInProcess`)
    /// or the command lives as a process (`serve`, `watch`, the merge driver).
    @discardableResult
    package func concord(_ arguments: [String], as device: TestDevice?, in directory: URL? = nil, clock: String?, input: Data? = nil,
                         file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        try runConcord(arguments, environment: concordEnvironment(device, clock: clock), in: directory ?? sandbox, input: input, deadline: nil)
    }

    /// `arguments` in this process or as the binary (see `concord(…)`), given `deadline` seconds when not nil.
    private func runConcord(_ arguments: [String], environment: [String: String], in directory: URL, input: Data?,
                            deadline: Double?) throws -> RunResult {
        let binary = try ConcordBinary.required()
        guard Self.runsConcordInProcess, !InProcessConcord.needsProcess(arguments) else {
            return try ProcessRunner.run(binary, arguments, environment: environment, in: directory, input: input, deadline: deadline)
        }
        guard let deadline else { return InProcessConcord.run(arguments, environment: environment, in: directory, input: input, executable: binary) }
        return InProcessConcord.run(arguments, environment: environment, in: directory, input: input, executable: binary, deadline: deadline)
    }

    /// `concord`, failing the test unless it exits 0; returns its trimmed stdout.
    @discardableResult
    package func concordOK(_ arguments: [String], as device: TestDevice?, in directory: URL? = nil, input: Data? = nil,
                           file: StaticString = #filePath, line: UInt = #line) throws -> String {
        try concordOK(arguments, as: device, in: directory, clock: Self.defaultClock, input: input, file: file, line: line)
    }

    @discardableResult
    package func concordOK(_ arguments: [String], as device: TestDevice?, in directory: URL? = nil, clock: String?, input: Data? = nil,
                           file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let result = try concord(arguments, as: device, in: directory, clock: clock, input: input, file: file, line: line)
        return assertSucceeded(result, arguments, file: file, line: line).trimmedStdout
    }

    /// `concordOK` under the class's clock, returning all concord printed.
    @discardableResult
    package func concordOKResult(_ arguments: [String], as device: TestDevice?, in directory: URL? = nil, input: Data? = nil,
                                 file: StaticString = #filePath, line: UInt = #line) throws -> RunResult {
        assertSucceeded(try concord(arguments, as: device, in: directory, input: input, file: file, line: line), arguments, file: file, line: line)
    }

    /// `result`, failing the test unless concord exited 0.
    private func assertSucceeded(_ result: RunResult, _ arguments: [String], file: StaticString, line: UInt) -> RunResult {
        XCTAssertEqual(result.status, 0, "concord \(arguments.joined(separator: " ")) failed: \(result.summary)", file: file, line: line)
        return result
    }

    /// Runs `concord arguments` as `device`, given `seconds` (a hang is a failure, not a stuck test
    /// run); `timedOut` says whether it ran past them. In this process, as `concord(…)` runs (a run
    /// past its deadline is left to its thread, and later runs are the binary's), unless the class
    /// runs the binary: then the process is killed at the deadline.
    package func concordWithDeadline(_ arguments: [String], as device: TestDevice, in directory: URL, seconds: Double = 60,
                                     environment extra: [String: String] = [:]) throws -> RunResult {
        try runConcord(arguments, environment: concordEnvironment(device).merging(extra) { $1 }, in: directory, input: nil, deadline: seconds)
    }

    /// Starts `concord watch -C copy --interval interval --json` as `device`, its output in
    /// `<sandbox>/watch-<member>.log`, and waits (up to 60 s, failing the test otherwise) for its
    /// `started` event. Returns the running watch and a reader of its output so far; stopping it is the caller's.
    package func startWatch(_ copy: URL, as device: TestDevice, interval: String,
                            file: StaticString = #filePath, line: UInt = #line) throws -> (watcher: ChildProcess, output: () -> String) {
        let log = sandbox.appendingPathComponent("watch-\(device.member).log")
        let watcher = try ChildProcess(path: try ConcordBinary.required(), arguments: ["watch", "-C", copy.path, "--interval", interval, "--json"],
                                       environment: concordEnvironment(device), output: log)
        let output = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
        XCTAssertTrue(waitUntil(60) { output().contains(#""event":"started""#) }, output(), file: file, line: line)
        return (watcher, output)
    }

    /// `device`'s proof of possession of its key for the profile in `profile` and `member` (its own
    /// member name when nil), as `concord identity prove` prints it there.
    package func keyProof(of device: TestDevice, for profile: URL, member: String? = nil,
                          file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let info = try JSONSerialization.jsonObject(with: Data(contentsOf: profile.appendingPathComponent(".concord/profile.json"))) as? [String: Any]
        let id = try XCTUnwrap(info?["id"] as? String, file: file, line: line)
        return try concordOK(["identity", "prove", id] + (member.map { ["--member", $0] } ?? []), as: device, file: file, line: line)
    }

    /// A device with a new identity (`concord identity new`) in `<sandbox>/home-<member>-<device>`.
    package func makeDevice(_ member: String, device: String = "laptop", file: StaticString = #filePath, line: UInt = #line) throws -> TestDevice {
        let home = sandbox.appendingPathComponent("home-\(member)-\(device)")
        let partial = TestDevice(member: member, device: device, home: home)
        try concordOK(["identity", "new", "--name", member, "--device", device], as: partial, file: file, line: line)
        let key = try concordOK(["identity", "show", "--public-key"], as: partial, file: file, line: line)
        return TestDevice(member: member, device: device, home: home, publicKeyLine: key)
    }
}
#endif
