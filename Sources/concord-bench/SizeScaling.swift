import Foundation

/// A scenario timed at each of its sizes against git on the same work: a row a size, the runs of
/// each side, and the cost per unit (a commit, a side commit) at each size, from which a note says
/// whether concord's cost grows linearly from the smallest size to the largest.
struct SizeScaling {
    /// Concord's side in the runs line ("walk", "merge").
    let runsName: String
    /// Concord's side in the per-unit figures (the runs name when nil).
    let figuresName: String
    private(set) var rows = [ResultRow]()
    private(set) var runs = [String]()
    private(set) var perUnit = [(size: Int, concord: Double, git: Double)]()

    /// Each of `sizes` (in units) measured in turn by `measure`: its row's label, concord's samples and git's.
    init(_ sizes: [Int], runs runsName: String, figures figuresName: String? = nil,
         _ measure: (Int) throws -> (label: String, concord: Samples, git: Samples)) rethrows {
        (self.runsName, self.figuresName) = (runsName, figuresName ?? runsName)
        for size in sizes {
            let (label, concord, git) = try measure(size)
            rows.append(ResultRow(label: label, concord: concord, git: git))
            runs.append("\(Format.count(size)): \(runsName) \(Format.runs(concord)); git \(Format.runs(git))")
            perUnit.append((size, concord.median / Double(size), git.median / Double(size)))
        }
    }

    /// The scenario's result: these rows and `notes`.
    func result(_ context: BenchContext, notes: [String]) -> ScenarioResult {
        ScenarioResult(scenario: context.scenario, rows: rows, notes: notes)
    }

    /// The note on the cost per `unit`: `heading`, each size's figures, then how many times
    /// `subject`'s cost per unit at the largest size is its cost at the smallest, "linear or better"
    /// up to 1.25 and `worse` beyond.
    func costNote(_ heading: String, subject: String, unit: String, worse: String = "worse than linear.") -> String {
        let (small, large) = (perUnit[0], perUnit[perUnit.count - 1])
        let growth = large.concord / small.concord
        return heading + perUnit.map { "\(Format.count($0.size)): \(figuresName) \(microseconds($0.concord)), git \(microseconds($0.git))" }
            .joined(separator: "; ") + ". \(subject)'s cost per \(unit) at \(Format.count(large.size)) is "
            + "\(Format.ratio(growth))× its cost at \(Format.count(small.size)): " + (growth <= 1.25 ? "linear or better." : worse)
    }

    /// "Runs: " and each size's runs.
    var runsNote: String { "Runs: " + runs.joined(separator: "; ") + "." }
}

/// `seconds` in microseconds, to a tenth.
func microseconds(_ seconds: Double) -> String { String(format: "%.1f µs", seconds * 1e6) }
