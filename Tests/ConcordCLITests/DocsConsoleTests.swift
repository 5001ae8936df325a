import ConcordTestSupport
import Foundation
import XCTest

/// The console blocks of README.md and docs/cli.md (ConsoleBlock says which fences count and how
/// a block is read), run as written with the built `concord` and compared with the output they show
/// (ConsoleOutput says what is compared by shape only), so the documented commands and their output
/// cannot drift.
///
/// A file's commands run in order in ONE `/bin/sh`, as a reader would type them into one terminal:
/// later blocks build on earlier ones, and `cd` and `export` hold for the commands after them. The
/// sandbox is HOME and the first working directory, so the identity a doc makes is in `~/.concord`
/// (the default CONCORD_HOME); a doc gives a second person their own with `CONCORD_HOME=~/…`. Each
/// command's standard output and standard error are caught together, as a terminal shows them;
/// `concord` is the one the tests run (first on PATH), TZ is UTC, the clock is the real one. A
/// command must exit 0; after one that does not, the file's later commands are not run (they
/// would fail for its sake).
final class DocsConsoleTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    /// The commands the test does not run, by file and exact command text, with why. A skip that
    /// names no command of its file fails the test, so the list cannot go stale.
    static let skipped: [String: [String: String]] = [
        "README.md": [
            "make demo": "installs system packages with apt-get (root) and builds a release binary: minutes",
            "make test": "runs every test of the package, this one included",
        ],
    ]

    func testREADME() throws {
        try runConsoleBlocks(of: "README.md")
    }

    func testCLIReference() throws {
        try runConsoleBlocks(of: "docs/cli.md")
    }

    /// The reading and the normalising the two tests above rely on: which fences count, where a
    /// command's output ends, and that ids and times are masked but the text around them is not.
    func testConsoleBlocksAreReadAndNormalisedAsDocumented() throws {
        let markdown = """
            ```sh
            make demo   # builds
            # a comment
            ```
            ```json
            {"not": "commands"}
            ```
              ```console
              $ concord rm vocabulary/puzzle
              vocabulary/puzzle: deleted
              commit 0ec292e
              $ cd sam
              ```
            """
        XCTAssertEqual(try ConsoleBlock.blocks(in: markdown, file: "x.md"), [
            ConsoleBlock(line: 1, infoString: "sh", commands: [DocCommand(line: 2, text: "make demo", expected: nil)]),
            ConsoleBlock(line: 8, infoString: "console", commands: [
                DocCommand(line: 9, text: "concord rm vocabulary/puzzle", expected: ["vocabulary/puzzle: deleted", "commit 0ec292e"]),
                DocCommand(line: 12, text: "cd sam", expected: []),
            ]),
        ])
        XCTAssertThrowsError(try ConsoleBlock.blocks(in: "```console\noutput\n$ concord ls\n```", file: "x.md"))

        let home = "/tmp/concord-cli-tests-1"
        for (doc, real) in [("2026-11-22 02:44:02  parent@phone  deleted vocabulary/puzzle  0ec292e [signature: good]",
                             "2026-11-27 11:30:41  parent@phone  deleted vocabulary/puzzle  42e33da [signature: good]"),
                            ("  \"updatedAt\": \"2026-11-22T02:44:02.124Z-0000\",", "  \"updatedAt\": \"2026-11-27T11:30:33.599Z-0001\","),
                            ("created identity parent@phone in ~/.concord", "created identity parent@phone in \(home)/.concord"),
                            ("commit 0ec292ef8af293995763825cbaf8fde480e70680", "commit 42e33daa8ab356c31c34d53e22cddb3f7b4bd106"),
                            ("977ecfe6-5465-4557-aaf2-80a4660d16c5", "7bd6fa27-6370-43a9-bfb1-09dff6337b5b"),
                            ("Date:   Sun Nov 22 02:44:02 2026 +0000", "Date:   Fri Nov 27 11:30:33 2026 +0000"),
                            ("x (10:02, bob@mac)", "x (11:31, bob@mac)"), ("", "    ")] {
            XCTAssertEqual(ConsoleOutput.normalised(doc, home: home), ConsoleOutput.normalised(real, home: home), doc)
        }
        for (doc, real) in [("2026-11-22 02:44:02  parent@phone", "2026-11-22T02:44:02.000Z  parent@phone"),
                            ("vocabulary/puzzle: added", "vocabulary/puzzle: deleted"), ("commit 0ec292e", "commit 0ec292ef"),
                            ("in ~/.concord", "in ~/home-parent")] {
            XCTAssertNotEqual(ConsoleOutput.normalised(doc, home: home), ConsoleOutput.normalised(real, home: home), doc)
        }
    }

    /// Runs every command of `file`'s console blocks in one shell in the sandbox and compares each
    /// one's output with what the doc shows, naming the file, the command's line and both versions.
    private func runConsoleBlocks(of file: String, testFile: StaticString = #filePath, testLine: UInt = #line) throws {
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let markdown = try String(contentsOf: package.appendingPathComponent(file), encoding: .utf8)
        let commands = try ConsoleBlock.blocks(in: markdown, file: file).flatMap(\.commands)
        XCTAssertFalse(commands.isEmpty, "\(file) has no console block: nothing of it is checked", file: testFile, line: testLine)
        let skips = Self.skipped[file] ?? [:]
        for stale in Set(skips.keys).subtracting(commands.map(\.text)).sorted() {
            XCTFail("\(file): the skip list names `\(stale)`, which no console block of it shows", file: testFile, line: testLine)
        }
        let run = commands.filter { skips[$0.text] == nil }

        // Command i writes what it prints to output/i; one that fails leaves its status in output/i.status and ends the script.
        let output = try makeSandbox(prefix: "concord-docs-console", removedBy: addTeardownBlock)
        let script = run.indices.map { index in
            "{\n\(run[index].text)\n} >'\(output.path)/\(index)' 2>&1 || { echo $? >'\(output.path)/\(index).status'; exit 0; }"
        }.joined(separator: "\n")
        var environment = isolatedEnvironment(home: sandbox)
        let concordDirectory = URL(fileURLWithPath: try ConcordBinary.required()).deletingLastPathComponent().path
        environment["PATH"] = concordDirectory + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["TZ"] = "UTC"
        let shell = try ProcessRunner.run("/bin/sh", ["-c", script], environment: environment, in: sandbox, deadline: 120)
        XCTAssertFalse(shell.timedOut, "\(file): its commands were still running after 120 s", file: testFile, line: testLine)

        for (index, command) in run.enumerated() {
            let place = "\(file):\(command.line): $ \(command.text)"
            guard let printed = try? String(contentsOf: output.appendingPathComponent("\(index)"), encoding: .utf8) else {
                XCTFail("\(place)\nwas not run: \(shell.summary)", file: testFile, line: testLine)
                return
            }
            if let status = try? String(contentsOf: output.appendingPathComponent("\(index).status"), encoding: .utf8) {
                XCTFail("\(place)\nexited \(status.trimmingCharacters(in: .newlines)):\n\(printed)(the file's later commands were not run)",
                        file: testFile, line: testLine)
                return
            }
            guard let expected = command.expected else { continue }
            let shown = expected.map { ConsoleOutput.normalised($0, home: sandbox.path) }
            let actual = RunResult.lines(printed).map { ConsoleOutput.normalised($0, home: sandbox.path) }
            if shown != actual {
                XCTFail("\(place)\nprints other than the doc shows (normalised)\n--- doc\n\(shown.joined(separator: "\n"))"
                        + "\n--- concord\n\(actual.joined(separator: "\n"))\n---", file: testFile, line: testLine)
            }
        }
    }
}
