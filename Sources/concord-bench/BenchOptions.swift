import Foundation

/// The command line: `concord-bench [--concord PATH] [--output PATH] [--runs N] [--only B1,B2] [--tmpdir DIR] [--keep]
/// [--soak-polls N] [--soak-syncs N] [--baseline PATH]`.
struct BenchOptions {
    /// A usage error or `--help`: the text to print, then exit 2 (or 0 for help).
    struct Usage: Error {
        let text: String
        var isHelp = false
    }

    static let help = """
    usage: concord-bench [--concord PATH] [--output PATH] [--runs N] [--only B1,B2] [--tmpdir DIR] [--keep]
                         [--soak-polls N] [--soak-syncs N] [--baseline PATH]

    Times concord against the git CLI on the same data, prints a markdown table and,
    with --output, writes the full report (docs/benchmarks.md via `make bench`).

      --concord PATH  the concord binary (default: `concord` next to this binary)
      --output PATH   write the markdown report here (default: print only)
      --runs N        timed runs per side and scenario, 1 or more (default 5)
      --only LIST     comma-separated scenario ids, e.g. B1,B2 (default: all)
      --tmpdir DIR    where the temporary directories go (default /tmp)
      --keep          keep the temporary directory for inspection
      --soak-polls N  B11: idle polls of each watch, 50 or more (default 10,000)
      --soak-syncs N  B11: syncs of each watch after the idle polls, 1 or more (default 200)
      --baseline PATH another concord binary (an earlier build) to time side by side with --concord
                      in B1–B8, each on data it made itself, runs alternating; adds rows
                      per scenario (`make bench BASELINE=<revision>` builds one)
    """

    var concordPath: String
    var outputPath: String?
    var runs = 5
    var only: Set<String>?
    var temporaryDirectory = "/tmp"
    var keepTemporaryFiles = false
    /// B11: how many idle remote checks each `watch` makes, then how many syncs.
    var soakPolls = 10_000
    var soakSyncs = 200
    /// An earlier concord binary timed side by side with `concordPath` in B1–B8.
    var baselinePath: String?

    static func parse(_ arguments: [String]) throws -> BenchOptions {
        var options = BenchOptions(concordPath: defaultConcordPath())
        var remaining = arguments[...]
        func value(for flag: String) throws -> String {
            guard let next = remaining.popFirst(), !next.hasPrefix("--") else {
                throw Usage(text: "concord-bench: \(flag) needs a value\n\n\(help)")
            }
            return next
        }
        while let argument = remaining.popFirst() {
            switch argument {
            case "--concord": options.concordPath = try value(for: argument)
            case "--output": options.outputPath = try value(for: argument)
            case "--runs":
                let text = try value(for: argument)
                guard let runs = Int(text), runs >= 1 else { throw Usage(text: "concord-bench: --runs must be a whole number ≥ 1, not \(text)") }
                options.runs = runs
            case "--only":
                let ids = try value(for: argument).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).uppercased() }
                let known = Set(Scenario.all.map(\.id))
                if let unknown = ids.first(where: { !known.contains($0) }) {
                    throw Usage(text: "concord-bench: unknown scenario \(unknown) (known: \(Scenario.all.map(\.id).joined(separator: ", ")))")
                }
                options.only = Set(ids)
            case "--tmpdir": options.temporaryDirectory = try value(for: argument)
            case "--keep": options.keepTemporaryFiles = true
            case "--soak-polls":
                let text = try value(for: argument)
                guard let polls = Int(text), polls >= 50 else { throw Usage(text: "concord-bench: --soak-polls must be a whole number ≥ 50, not \(text)") }
                options.soakPolls = polls
            case "--soak-syncs":
                let text = try value(for: argument)
                guard let syncs = Int(text), syncs >= 1 else { throw Usage(text: "concord-bench: --soak-syncs must be a whole number ≥ 1, not \(text)") }
                options.soakSyncs = syncs
            case "--baseline": options.baselinePath = try value(for: argument)
            case "--help", "-h": throw Usage(text: help, isHelp: true)
            default: throw Usage(text: "concord-bench: unknown argument \(argument)\n\n\(help)")
            }
        }
        return options
    }

    /// `concord` in the directory of this executable (both are built into the same products directory).
    static func defaultConcordPath() -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? Bundle.main.executablePath ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("concord").path
    }
}
