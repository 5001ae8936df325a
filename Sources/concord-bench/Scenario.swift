import Foundation

/// One benchmark: an id (B1, B2, ...), what it compares, the target for concord/git, and the code
/// that measures it. Add a scenario by writing a `static let` in its own file and listing it in `all`.
struct Scenario: Sendable {
    let id: String
    let title: String
    /// The largest acceptable median ratio concord/git.
    let targetRatio: Double
    let run: @Sendable (BenchContext) throws -> ScenarioResult

    /// Every scenario, in report order.
    static let all: [Scenario] = [.importTenThousand, .putIntoHundredThousand]
}

/// What a scenario measured: table rows (the first is the headline row with the target) and
/// markdown for the report.
struct ScenarioResult {
    let scenario: Scenario
    var rows: [ResultRow]
    /// What exactly is timed, one markdown bullet each.
    var notes: [String]
    /// Further measurements and decisions, as markdown paragraphs.
    var findings: [String] = []
}

/// One line of the results table. `target` nil marks an informational or reference row.
struct ResultRow {
    let label: String
    let concord: Samples
    let git: Samples
    var target: Double?

    var ratio: Double { concord.median / git.median }
    var met: Bool? { target.map { ratio <= $0 } }
}

/// The timings of several runs of one command, in seconds.
struct Samples {
    private(set) var values: [Double] = []

    mutating func append(_ seconds: Double) { values.append(seconds) }

    /// The fastest run: on a shared machine noise only ever adds time, so this is the least disturbed.
    var fastest: Double { values.min() ?? .nan }

    var median: Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func + (lhs: Samples, rhs: Samples) -> Samples {
        Samples(values: zip(lhs.values, rhs.values).map { $0 + $1 })
    }
}

/// What every scenario gets: the two tools, the run count, a private temporary directory, progress output.
final class BenchContext {
    let concord: ConcordCLI
    let git: GitCLI
    let runs: Int
    /// This scenario's own temporary directory. Nothing in it is deleted until the whole bench is
    /// done: on ext4, creating files soon after deleting many is slow (the inode allocator skips
    /// recently freed inodes), so deleting one run's files would slow down the next run.
    let directory: URL

    init(concord: ConcordCLI, git: GitCLI, runs: Int, directory: URL) {
        self.concord = concord
        self.git = git
        self.runs = runs
        self.directory = directory
    }

    func path(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Prints a progress line to standard error.
    func progress(_ line: String) {
        FileHandle.standardError.write(Data("\(line)\n".utf8))
    }
}
