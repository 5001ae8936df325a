import Foundation

/// The plumbing the scenarios share for `--baseline`: timing this build and the earlier binary in
/// turns, the rows comparing them and the notes paragraph saying what the earlier binary did.
extension BenchContext {
    /// The usual bound of a baseline row: this build may take at most 10% longer than the earlier
    /// build (the Integrity issue's "within 10% of the build before").
    static let baselineTarget = 1.10

    /// `this` for every run in `runs`, and with a baseline and its `prepared` data also `work` for
    /// the same run, the two taking turns going first (`inTurn`). Returns each side's results in run
    /// order (the baseline's empty without `--baseline`); callers drop their warm-up runs.
    func inTurns<Prepared, Timing>(_ runs: ClosedRange<Int>, with prepared: Prepared?, _ this: (_ run: Int) throws -> Timing,
                                   baseline work: (Baseline, Prepared, _ run: Int) throws -> Timing) rethrows
        -> (this: [Timing], baseline: [Timing]) {
        var results = [Timing](), baselineResults = [Timing]()
        for run in runs {
            try inTurn(run: run, with: prepared, { results.append(try this(run)) },
                       baseline: { other, prepared in baselineResults.append(try work(other, prepared, run)) })
        }
        return (results, baselineResults)
    }

    /// The notes paragraph on a scenario's baseline rows; none without `--baseline`. `work` says what
    /// the earlier binary (its argument, the binary's path in backquotes) did and on what data it made
    /// itself; `runs` names the baseline's samples. `inTurns` false: `work` says how they were ordered.
    func baselineNotes(_ work: (_ binary: String) -> String, runs: [(name: String, samples: Samples)],
                       target: Double = BenchContext.baselineTarget, inTurns: Bool = true) -> [String] {
        guard let other = baseline else { return [] }
        let counts = runs.map { "\($0.name) \(Format.runs($0.samples))" }.joined(separator: "; ")
        let percent = Int(((target - 1) * 100).rounded())
        return [
            "Baseline rows (`--baseline`): " + work("`\(other.binary)`") + ". Each binary reads and writes its own data "
                + "format in its own directories" + (inTurns ? "; the two binaries take turns going first, run by run" : "")
                + ". Baseline runs: \(counts). Target: within +\(percent)% (ratio = this build / the earlier one ≤ "
                + "\(Format.ratio(target))).",
        ]
    }
}

extension BenchContext.Baseline {
    /// The row comparing this build's latencies with the baseline's: p50 and p95 of each, ratio = this
    /// build's p95 / the baseline's p95, met at most `target`.
    func latencyRow(_ label: String, concord: Samples, baseline: Samples, target: Double) -> ResultRow {
        let ratio = concord.percentile(95) / baseline.percentile(95)
        func cell(_ samples: Samples) -> String {
            "p50 \(Format.duration(samples.median)), p95 \(Format.duration(samples.percentile(95)))"
        }
        return ResultRow(label: "\(label) (vs baseline `\(binary)`)", concordCell: cell(concord), gitCell: cell(baseline),
                         ratio: ratio, targetCell: "≤ " + Format.ratio(target), met: ratio <= target, fastest: nil)
    }
}

extension Samples {
    /// Samples holding `values`, in order.
    init(_ values: some Sequence<Double>) {
        self.init()
        for value in values { append(value) }
    }
}
