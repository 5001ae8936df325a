import ConcordTestSupport
import Foundation

/// Runs the chosen scenarios one after another, each in its own temporary directory, then prints
/// the table and writes the report.
struct Bench {
    let options: BenchOptions
    let scenarios: [Scenario]

    func run() throws {
        let clock = ContinuousClock()
        let start = clock.now
        guard FileManager.default.isExecutableFile(atPath: options.concordPath) else {
            throw BenchError("no concord binary at \(options.concordPath): build it with "
                + "'swift build -c release --scratch-path .build-release --product concord' or pass --concord PATH")
        }
        if let baseline = options.baselinePath, !FileManager.default.isExecutableFile(atPath: baseline) {
            throw BenchError("no concord binary at --baseline \(baseline): build one with `make bench BASELINE=<revision>`")
        }
        guard let gitPath = executableInPath("git") else { throw BenchError("git is not in PATH") }

        let unique = "concord-bench-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
        let root = URL(fileURLWithPath: options.temporaryDirectory).appendingPathComponent(unique)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: false)
        var cleaned = false
        func cleanUp() {
            guard !cleaned else { return }
            cleaned = true
            if options.keepTemporaryFiles {
                FileHandle.standardError.write(Data("temporary files kept in \(root.path)\n".utf8))
            } else {
                FileHandle.standardError.write(Data("removing \(root.path)\n".utf8))
                Self.remove(root)
            }
        }
        defer { cleanUp() }
        let runner = CommandRunner(scratch: root)
        let concord = ConcordCLI(path: options.concordPath, runner: runner)
        let git = GitCLI(path: gitPath, runner: runner)
        let facts = try MachineFacts.collect(concord: concord, git: git, runner: runner,
                                             home: root.appendingPathComponent("facts-home"))

        let shared = SharedDatasets(directory: root.appendingPathComponent("shared"), concord: concord, git: git)
        // The baseline binary makes its own data (its own data format) in its own directories.
        let baseline = options.baselinePath.map { ConcordCLI(path: $0, runner: runner) }
        let baselineShared = baseline.map {
            SharedDatasets(directory: root.appendingPathComponent("shared-baseline"), concord: $0, git: git)
        }
        var results = [ScenarioResult]()
        var durations = [(id: String, seconds: Double)]()
        for scenario in scenarios where options.only?.contains(scenario.id) ?? true {
            let directory = root.appendingPathComponent(scenario.id)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var context = BenchContext(scenario: scenario, concord: concord, git: git, runs: options.runs, directory: directory, shared: shared,
                                       soak: (options.soakPolls, options.soakSyncs))
            if let baseline, let baselineShared {
                context.baseline = BenchContext.Baseline(
                    context: BenchContext(scenario: scenario, concord: baseline, git: git, runs: options.runs,
                                          directory: directory.appendingPathComponent("baseline"), shared: baselineShared,
                                          soak: (options.soakPolls, options.soakSyncs)),
                    binary: baseline.path)
                try FileManager.default.createDirectory(at: directory.appendingPathComponent("baseline"), withIntermediateDirectories: true)
            }
            let (result, seconds) = try measure { try scenario.run(context) }
            context.progress("\(scenario.id) done in \(Format.duration(seconds))")
            results.append(result)
            durations.append((scenario.id, seconds))
        }

        let probeAfter = try MachineFacts.probeFileCreation(in: root.appendingPathComponent("probe-end"))
        let cleanUpSeconds = measure { cleanUp() }.seconds
        let wall = start.duration(to: clock.now).seconds
        FileHandle.standardError.write(Data("bench wall time: \(Format.duration(wall))\n".utf8))
        print(Report.table(results))
        if let output = options.outputPath {
            var report = Report(facts: facts, results: results, runs: options.runs, wallSeconds: wall,
                                scenarioSeconds: durations, cleanUpSeconds: cleanUpSeconds,
                                loadAverageAfter: MachineFacts.currentLoadAverage(), fileCreationProbeAfter: probeAfter,
                                temporaryRoot: options.temporaryDirectory)
            if let baseline = options.baselinePath, options.only != nil {
                report.regenerate = (make: "make bench-baseline",
                                     command: ([".build-release/release/concord-bench", "--concord", ".build-release/release/concord",
                                                "--baseline", baseline, "--only", (options.only ?? []).sorted().joined(separator: ","),
                                                "--runs", String(options.runs), "--tmpdir", options.temporaryDirectory,
                                                "--output", output]).joined(separator: " "))
            }
            try Data(report.markdown.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
            FileHandle.standardError.write(Data("wrote \(output)\n".utf8))
        }
    }

    /// Deletes `root` (hundreds of thousands of files): two `rm -rf` processes at a time, each given the
    /// next directory two levels down (a scenario's repositories), then whatever is left. On this
    /// machine's ext4 two deleters finish ~20% sooner than one.
    static func remove(_ root: URL) {
        let manager = FileManager.default
        var pending = [URL]()
        for scenario in (try? manager.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? [] {
            pending += (try? manager.contentsOfDirectory(at: scenario, includingPropertiesForKeys: nil)) ?? []
        }
        var running = [ChildProcess]()
        while !pending.isEmpty || !running.isEmpty {
            running.removeAll { $0.exitStatus() != nil }
            while running.count < 2, let next = pending.popLast() {
                guard let child = try? ChildProcess(path: "/bin/rm", arguments: ["-rf", next.path], environment: [:],
                                                    output: URL(fileURLWithPath: "/dev/null")) else { continue }
                running.append(child)
            }
            usleep(2_000)
        }
        try? manager.removeItem(at: root)
    }
}
