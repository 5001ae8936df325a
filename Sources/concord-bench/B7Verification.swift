import ConcordEngine
import ConcordKit
import Foundation

/// B7: every fetched commit is verified (signature by an active member of its parent, paths its
/// role may write). A sync receiving 10,000 one-record commits must check them at 10,000
/// commits/s or more; `concord verify` of that history is compared with `git log
/// --show-signature`-style checking by git (`%G?`, ssh-keygen per commit) with the same allowed signers.
enum VerificationBenchmark {
    static let commits = 10_000
    static let rateTarget = 10_000.0
    static let remoteName = "bench-b7"

    /// What a binary's timed runs read: B's home and pristine clone, the bare repository's main and
    /// how many commits it holds.
    struct History {
        let homeB: URL
        let pristineB: URL
        let main: String
        let total: Int
    }

    /// One run's seconds: the check step, the fetch and the check, the whole sync, `concord verify`;
    /// and the synced copy of B.
    struct Timing {
        let check: Double, fetchAndCheck: Double, sync: Double, verify: Double
        let deviceB: URL
    }

    /// A profile made by a binary whose data format is not the one this build's library writes.
    struct OtherFormat: LocalizedError {
        let found: Int
        var errorDescription: String? {
            "B7: concord made a format \(found) profile, but A's commits are written by this build's library (format \(concordFormatVersion))"
        }
    }

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let history = try prepare(context)
        // With a baseline: the earlier binary's own profile, bare repository and B, its runs in turns with these.
        var baselineHistory: History?, skipped: String?
        if let other = context.baseline {
            do {
                baselineHistory = try prepare(other.context)
            } catch let error as OtherFormat {
                skipped = "No baseline rows: the earlier binary `\(other.binary)` makes format \(error.found) profiles, and A's "
                    + "\(Format.count(commits)) commits are written by this build's library, which writes format \(concordFormatVersion)."
                context.progress("B7 baseline skipped: \(skipped ?? "")")
            }
        }
        let runs = context.runs
        let timed = try context.inTurns(0...runs, with: baselineHistory, { try timeRun(context, history, run: $0, of: runs) },
                                        baseline: { try timeRun($0.context, $1, run: $2, of: runs) })
        func samples(_ timings: [Timing], _ value: (Timing) -> Double) -> Samples { Samples(timings.dropFirst().map(value)) }
        let check = samples(timed.this, \.check), fetchAndCheck = samples(timed.this, \.fetchAndCheck)
        let sync = samples(timed.this, \.sync), verify = samples(timed.this, \.verify)
        let baseline = (check: samples(timed.baseline, \.check), sync: samples(timed.baseline, \.sync),
                        verify: samples(timed.baseline, \.verify))
        let total = history.total
        var gitCheck = Samples()
        // git runs ssh-keygen once per commit: one timed run (minutes), on the last device.
        let deviceB = timed.this.last?.deviceB ?? history.pristineB
        let signers = deviceB.appendingPathComponent(".git/concord/allowed_signers").path
        context.progress("B7 git: git log --format=%G? over \(Format.count(total)) commits (ssh-keygen per commit)")
        let log = try context.git.run(["-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile=\(signers)", "log", "--format=%G?"],
                                      in: deviceB, what: "git log --format=%G?")
        let verdicts = log.output.split(separator: "\n")
        guard verdicts.count == total, verdicts.allSatisfy({ $0 == "G" }) else {
            throw BenchError("git log --format=%G? on B: \(verdicts.count) commits, not all G: \(Set(verdicts))")
        }
        gitCheck.append(log.seconds)

        let rate = Double(commits) / check.median
        let headline = ResultRow(
            label: "B7 sync receiving \(Format.count(commits)) one-record commits: commits verified per second",
            concordCell: "\(Format.count(Int(rate)))/s (\(Format.duration(check.median)))", gitCell: "—", ratio: .nan,
            targetCell: "≥ \(Format.count(Int(rateTarget)))/s", met: rate >= rateTarget,
            fastest: "concord \(Format.count(Int(Double(commits) / check.fastest)))/s")
        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                headline,
                ResultRow(label: "B7 concord verify vs git log --format=%G? (\(Format.count(total)) commits, same allowed signers)",
                          concord: verify, git: gitCheck, target: context.scenario.targetRatio),
                ResultRow(label: "B7 fetch and check of the \(Format.count(commits)) commits (signatures verified while copying, on the other core)",
                          concordCell: Format.duration(fetchAndCheck.median), gitCell: "—", ratio: .nan, targetCell: nil, met: nil, fastest: nil),
                ResultRow(label: "B7 the whole sync receiving \(Format.count(commits)) commits (fetch, check, fast-forward, checkout)",
                          concordCell: Format.duration(sync.median), gitCell: "—", ratio: .nan, targetCell: nil, met: nil, fastest: nil),
            ] + (baselineHistory == nil ? [] : context.baselineRows(
                ("B7 the check of \(Format.count(commits)) received commits (the headline's step), this build vs an earlier one",
                 check, baseline.check),
                ("B7 the whole sync receiving \(Format.count(commits)) commits, this build vs an earlier one", sync, baseline.sync),
                ("B7 concord verify of \(Format.count(total)) commits, this build vs an earlier one", verify, baseline.verify),
                target: BenchContext.baselineTarget)),
            notes: [
                "Set-up, not timed: A (alice@a, Admin) makes an `aac` profile, adds B (bob@b, Editor) and a bare repository, "
                    + "and pushes; B clones it. A then writes \(Format.count(commits)) commits of one vocabulary record each "
                    + "through the library in one process (each a normal signed concord commit) and pushes them.",
                "Timed, per run: a `cp -a` copy of B's clone (not timed) runs `concord sync --json` with "
                    + "`CONCORD_TRACE_PERF=1`; the fetch is the sum of its traced steps (the copy's \"commits and trees "
                    + "copied\", \"blobs read and hashed\", \"pack written\", then \"fetched into the quarantine\"; reports "
                    + "before 2026-11-27 took the last alone, which leaves the copy out); the headline is the sync's \"new commits checked\" step (signature, "
                    + "membership and role check plus the structural check of every new commit), as "
                    + "\(Format.count(commits)) / its median. A path fetch verifies each commit's signature as soon as it "
                    + "has copied it and matched its bytes to its id, on the core the copy leaves idle (`SignaturePrefetch`); "
                    + "the check step waits for any still being verified and asks the kept answers for the exact signature "
                    + "and bytes it reads. So most of the Ed25519 work (~1.1 s of CPU here) is in the fetch step: the "
                    + "fetch-and-check row adds both steps. (Before that, with every signature verified inside the check "
                    + "step, the headline measured 10,785/s, median of 5 runs, commit 2a66575.) Then `concord verify` on the synced copy (all "
                    + "\(Format.count(total)) commits). Checks: B ends at the bare repository's main; verify "
                    + "reports every commit.",
                "git side: `git log --format=%G?` in the last copy with `gpg.format=ssh` and B's own allowed-signers file "
                    + "(what `concord` generates for `git verify-commit`); git runs `ssh-keygen -Y find-principals` and "
                    + "`-Y verify` per commit, so one timed run. Every commit must show `G`.",
                "Runs: check \(Format.runs(check)); fetch and check \(Format.runs(fetchAndCheck)); sync \(Format.runs(sync)); verify \(Format.runs(verify)); git \(Format.runs(gitCheck)).",
            ] + (skipped.map { [$0] } ?? context.baselineNotes({ binary in
                "the same runs by the earlier binary \(binary) on its own A, bare repository and B, set up the same way "
                    + "(A's \(Format.count(commits)) commits written by this build's library into the profile the earlier "
                    + "binary made, which is this build's data format, format \(concordFormatVersion); the earlier binary "
                    + "syncs, checks and verifies them); same warm-up and checks"
            }, runs: [("check", baseline.check), ("sync", baseline.sync), ("verify", baseline.verify)])))
    }

    /// The set-up, not timed: A's profile with B as an editor, the bare repository, B's clone, then A's
    /// `commits` one-record commits written through the library and pushed. Throws `OtherFormat` if
    /// `context.concord` makes profiles of a data format this build's library does not write.
    static func prepare(_ context: BenchContext) throws -> History {
        let homeA = context.path("home-a"), homeB = context.path("home-b")
        try context.concord.makeHome(homeA, member: "alice", device: "a")
        try context.concord.makeHome(homeB, member: "bob", device: "b")
        let profileA = context.path("profile-a"), bare = context.path("remote.git"), pristineB = context.path("device-b")
        context.progress("B7 preparing (\(context.concord.path)): profile A, bare repository, device B")
        try context.concord.run(["init", profileA.path, "--name", "B7", "--template", "aac"], home: homeA, what: "concord init (A)")
        let info = try JSONSerialization.jsonObject(with: Data(contentsOf: profileA.appendingPathComponent(".concord/profile.json")))
        let format = (info as? [String: Any])?["formatVersion"] as? Int ?? -1
        guard format == concordFormatVersion else { throw OtherFormat(found: format) }
        try context.concord.run(["members", "add", "bob", "--role", "editor", "--key", try context.concord.publicKey(home: homeB),
                                 "--device", "b", "-C", profileA.path], home: homeA, what: "concord members add bob")
        try context.concord.run(["init", "--bare", bare.path], home: homeA, what: "concord init --bare")
        try context.concord.run(["remote", "add", remoteName, bare.path, "-C", profileA.path], home: homeA, what: "concord remote add (A)")
        try context.concord.run(["sync", "--remote", remoteName, "-C", profileA.path], home: homeA, what: "concord sync (A)")
        try context.concord.run(["clone", bare.path, pristineB.path], home: homeB, what: "concord clone (B)")

        // A's 10,000 one-record commits, written in this process through the library (10,000
        // `concord put` processes would take minutes), then pushed.
        context.progress("B7 preparing: \(Format.count(commits)) one-record commits on A")
        let environment = ConcordEnvironment(home: homeA)
        let identity = try Identity.load(from: homeA)
        let profile = try Profile.open(at: profileA, environment: environment)
        for index in 0..<commits {
            try profile.records.write(as: identity) { transaction in
                try transaction.put(VocabularyData.kind, VocabularyData.id(index), data: VocabularyData.data(index, revision: 1))
            }
            if index % 2_000 == 1_999 { context.progress("B7 preparing: \(Format.count(index + 1)) commits") }
        }
        try context.concord.run(["sync", "--remote", remoteName, "-C", profileA.path], home: homeA, what: "concord sync (A pushes)")
        let main = try context.git.resolve("refs/heads/main", in: bare)
        let total = try context.git.commitCount(bare)
        return History(homeB: homeB, pristineB: pristineB, main: main, total: total)
    }

    /// Run `run` of `runs` (0 is the warm-up) on a fresh copy of B's clone: `concord sync` traced,
    /// then `concord verify`; checked to reach the bare repository's main and verify every commit.
    static func timeRun(_ context: BenchContext, _ history: History, run: Int, of runs: Int) throws -> Timing {
        let step = run == 0 ? "warm-up" : "\(run)/\(runs)"
        let deviceB = context.path("device-b-\(run)")
        try context.copy(history.pristineB, to: deviceB)
        context.progress("B7 run \(step) (\(context.concord.path)): concord sync on B receiving \(Format.count(commits)) commits")
        var environmentB = context.concord.environment(home: history.homeB)
        environmentB["CONCORD_TRACE_PERF"] = "1"
        let result = try context.concord.runner.run(context.concord.path, ["sync", "-C", deviceB.path, "--json"],
                                                    environment: environmentB, what: "concord sync (B)")
        guard try context.git.resolve("HEAD", in: deviceB) == history.main else {
            throw BenchError("B's sync did not reach the bare repository's main")
        }
        guard let checked = checkMilliseconds(in: result.errorOutput),
              let fetched = fetchMilliseconds(in: result.errorOutput) else {
            throw BenchError("concord sync with CONCORD_TRACE_PERF=1 printed no 'fetched into the quarantine' or 'new commits checked' "
                             + "step:\n\(result.errorOutput.prefix(2000))")
        }
        context.progress("B7 run \(step): concord verify on B")
        let verified = try context.concord.run(["verify", "-C", deviceB.path], home: history.homeB, what: "concord verify (B)")
        guard verified.output.hasPrefix("\(history.total) commits verified") else {
            throw BenchError("concord verify on B printed \(verified.output.prefix(200)), expected \(history.total) commits verified")
        }
        return Timing(check: checked / 1000, fetchAndCheck: (fetched + checked) / 1000, sync: result.seconds,
                      verify: verified.seconds, deviceB: deviceB)
    }

    /// The steps a path fetch prints, in order, each timed from the one before (the first from the
    /// fetch's start): the object copy's three (`ObjectTransfer`), then the end of the fetch.
    static let fetchSteps = ["commits and trees copied", "blobs read and hashed", "pack written", "fetched into the quarantine"]

    /// The whole fetch's milliseconds in `text`: the sum of its steps (nil without the last one).
    /// "fetched into the quarantine" alone is only the time after the copy's last step.
    static func fetchMilliseconds(in text: String) -> Double? {
        guard let last = stepMilliseconds(fetchSteps[fetchSteps.count - 1], in: text) else { return nil }
        return fetchSteps.dropLast().compactMap { stepMilliseconds($0, in: text) }.reduce(last, +)
    }

    /// The check of the new commits' milliseconds in `text`: "new commits checked", and before it
    /// the wait for the signatures verified during the fetch where the build prints that step.
    static func checkMilliseconds(in text: String) -> Double? {
        stepMilliseconds("new commits checked", in: text).map { $0 + (stepMilliseconds(signaturesWaitedFor, in: text) ?? 0) }
    }
    static let signaturesWaitedFor = "signatures verified while fetching, waited for"

    /// The milliseconds of the `concord perf:` line for `step` in `text`.
    static func stepMilliseconds(_ step: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("concord perf: ") && line.hasSuffix(" " + step) {
            let fields = line.dropFirst("concord perf: ".count).split(separator: " ")
            if let value = fields.first.flatMap({ Double($0) }) { return value }
        }
        return nil
    }
}
