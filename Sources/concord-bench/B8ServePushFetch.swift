import Foundation

/// B8: what `concord serve` costs a device's sync: the same 10-record push and fetch through a
/// concord server (sshd's AuthorizedKeysCommand, the forced command, the pre-receive hook checking
/// every pushed commit, the post-receive) and through a stock sshd serving a bare repository.
enum ServePushFetchBenchmark {
    static let recordCount = 10
    /// `--baseline`: this build's push + fetch through concord serve may take at most 10% longer than the earlier build's.
    static let baselineTarget = 1.10

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        context.progress("B8 preparing: a stock sshd with a bare repository, and a concord server, each with devices A and B")
        let stock = try TwoDevices.make(context, in: context.path("stock"), overSSH: true)
        defer { stock.stop() }
        let served = try TwoDevices.make(context, in: context.path("serve"), overSSH: true, throughServe: true)
        defer { served.stop() }
        let lookup = TwoDevices.lookupPath(beside: context.concord.path) == nil ? "`concord serve --lookup`" : "`concord-lookup`"
        // With a baseline: the earlier binary's own two servers and devices, timed in turns with these.
        var baselineDevices: (stock: TwoDevices, served: TwoDevices)?
        if let other = context.baseline {
            context.progress("B8 preparing the baseline's servers and devices (\(other.binary))")
            let baselineStock = try TwoDevices.make(other.context, in: other.context.path("stock"), overSSH: true)
            do {
                baselineDevices = (baselineStock, try TwoDevices.make(other.context, in: other.context.path("serve"), overSSH: true,
                                                                      throughServe: true))
            } catch {
                baselineStock.stop()
                throw error
            }
        }
        defer { baselineDevices?.stock.stop(); baselineDevices?.served.stop() }

        var push = (stock: Samples(), serve: Samples()), fetch = (stock: Samples(), serve: Samples())
        var baselinePush = (stock: Samples(), serve: Samples()), baselineFetch = (stock: Samples(), serve: Samples())
        for run in 1...context.runs {
            // Alternate which server goes first, so neither always runs on a disk the other just wrote to.
            let order = run % 2 == 1 ? [false, true] : [true, false]
            try context.inTurn(run: run, with: baselineDevices, {
                for throughServe in order {
                    let (pushed, fetched) = try pushAndFetch(context, throughServe ? served : stock, throughServe: throughServe, run: run)
                    if throughServe { push.serve.append(pushed); fetch.serve.append(fetched) } else { push.stock.append(pushed); fetch.stock.append(fetched) }
                }
            }, baseline: { other, devices in
                for throughServe in order {
                    let (pushed, fetched) = try pushAndFetch(other.context, throughServe ? devices.served : devices.stock,
                                                             throughServe: throughServe, run: run, baseline: true)
                    if throughServe {
                        baselinePush.serve.append(pushed); baselineFetch.serve.append(fetched)
                    } else {
                        baselinePush.stock.append(pushed); baselineFetch.stock.append(fetched)
                    }
                }
            })
        }
        let total = (stock: push.stock + fetch.stock, serve: push.serve + fetch.serve)
        let baselineTotal = (stock: baselinePush.stock + baselineFetch.stock, serve: baselinePush.serve + baselineFetch.serve)
        var rows = [
            ResultRow(label: "B8 push \(recordCount) records + fetch them (`concord sync` on A, then on B) through concord serve "
                          + "(git column: the same through a stock sshd + bare repository)",
                      concord: total.serve, git: total.stock, target: context.scenario.targetRatio),
            ResultRow(label: "B8 the push alone (A's `concord sync`: the push of \(recordCount) commits, one connection)",
                      concord: push.serve, git: push.stock),
            ResultRow(label: "B8 the fetch alone (B's `concord sync`: \(recordCount) new commits)", concord: fetch.serve, git: fetch.stock),
        ]
        if let other = context.baseline {
            rows.append(other.row("B8 push + fetch through concord serve, this build vs an earlier one", concord: total.serve,
                                  baseline: baselineTotal.serve, target: baselineTarget))
            rows.append(other.row("B8 push + fetch through the stock sshd (concord sync on both devices), this build vs an earlier one",
                                  concord: total.stock, baseline: baselineTotal.stock, target: baselineTarget))
            rows.append(ResultRow(label: "B8 the earlier build's own push + fetch through concord serve vs the stock sshd",
                                  concord: baselineTotal.serve, git: baselineTotal.stock))
        }
        return ScenarioResult(
            scenario: context.scenario,
            rows: rows,
            notes: [
                "Both sides use the concord CLI (`concord sync`); the server is what differs. Same machine, same run, same "
                    + "data: each run puts \(recordCount) records on A (\(recordCount) signed commits; not timed), then times "
                    + "`concord sync` on A (the push alone: A's commits are on top of the main it last fetched, which the push "
                    + "checks, so no fetch first) and `concord sync` on B (the fetch "
                    + "of those commits, fast-forward, working tree). The two servers take turns going first.",
                "Stock: the sshd fixture on 127.0.0.1 with both device keys in its authorized_keys, serving a bare "
                    + "repository made by `concord init --bare` (no hooks) through git-upload-pack / git-receive-pack.",
                "concord serve: the same sshd fixture whose AuthorizedKeysCommand is \(lookup) on a directory made by "
                    + "`concord server init`; every connection runs `concord serve --key …` as its forced command (which "
                    + "reads the profile's membership at main and decides), every push passes the repository's pre-receive "
                    + "hook (`concord serve --pre-receive`: the validity rule on each of the \(recordCount) commits) and the "
                    + "post-receive. Each sync is one ssh connection (the push on A, the fetch on B).",
                "Checks after every run: A's and B's HEAD equal the server's main.",
                "Runs, push + fetch: concord serve \(Format.runs(total.serve)); stock \(Format.runs(total.stock)). Push: concord "
                    + "serve \(Format.runs(push.serve)); stock \(Format.runs(push.stock)). Fetch: concord serve "
                    + "\(Format.runs(fetch.serve)); stock \(Format.runs(fetch.stock)).",
            ] + (context.baseline.map { other in [
                "Baseline rows (`--baseline`): the same puts, pushes and fetches by the earlier binary `\(other.binary)` on its "
                    + "own two servers and devices, set up the same way (its server's AuthorizedKeysCommand is the "
                    + "`concord-lookup` built beside it, or `concord serve --lookup` without one: "
                    + "\(TwoDevices.lookupPath(beside: other.binary) == nil ? "`concord serve --lookup`" : "`concord-lookup`") here); "
                    + "each run the two binaries take turns going first. Runs, push + fetch: concord serve "
                    + "\(Format.runs(baselineTotal.serve)); stock \(Format.runs(baselineTotal.stock)). Target: within +10%.",
            ] } ?? []))
    }

    /// `recordCount` puts on A (not timed), then A's `concord sync` (the push) and B's (the fetch); their times in seconds.
    static func pushAndFetch(_ context: BenchContext, _ devices: TwoDevices, throughServe: Bool, run: Int,
                             baseline: Bool = false) throws -> (push: Double, fetch: Double) {
        let side = (throughServe ? "concord serve" : "stock sshd") + (baseline ? " (baseline)" : "")
        context.progress("B8 run \(run)/\(context.runs), \(side): \(recordCount) puts on A, then sync A, sync B")
        for index in 0..<recordCount {
            let id = "b8-\(run)-\(index)"
            try context.concord.run(["put", "-C", devices.profileA.path, "\(VocabularyData.kind)/\(id)",
                                     "--json", "{\"label\":\"\(id)\",\"category\":\"b8\"}"],
                                    home: devices.homeA, what: "concord put (A, \(side))")
        }
        let pushed = try context.concord.run(["sync", "-C", devices.profileA.path], home: devices.homeA,
                                             what: "concord sync (A, \(side))").seconds
        let fetched = try context.concord.run(["sync", "-C", devices.profileB.path], home: devices.homeB,
                                              what: "concord sync (B, \(side))").seconds
        let heads = try [devices.profileA, devices.profileB].map { try context.git.resolve("HEAD", in: $0) }
        let main = try context.git.resolve("refs/heads/main", in: devices.bare)
        guard heads[0] == main, heads[1] == main else {
            throw BenchError("B8 \(side): after the syncs A is at \(heads[0]), B at \(heads[1]), the server's main at \(main)")
        }
        return (pushed, fetched)
    }
}
