import ConcordEngine
import ConcordKit
import Foundation

/// B10: the record index (`.git/concord/index.sqlite`) of the shared 100,000-record profile, in
/// this process through the library (a process start would hide milliseconds): (a) a query on
/// one indexed field returning 50 records against a full scan of the files (`Records.scan`, the
/// reference) in the same run; (b) opening a store whose index is ready and answering that query;
/// (c) the index update after a 10-record sync against that sync; (d) building the index from
/// nothing. The fifth B10 row (observe's latency) is another scenario's.
enum IndexBenchmark {
    static let records = 100_000
    /// `symbol` is `symbols/arasaac/<i mod 9,973>.png`: each of these five is held by 10 records.
    static let symbols = (5_000..<5_005).map { JSONValue.string("symbols/arasaac/\($0).png") }
    static let query = IndexQuery(kind: VocabularyData.kind, conditions: [.init("symbol", .isIn(symbols))], ordering: [.init("label")])
    static let kind = Kind(VocabularyData.kind, policy: .lastWriterWins, writers: .editor, indexed: ["symbol", "position"])

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let shared = try context.shared.profile(records: records, progress: context.progress)
        let identity = try Identity.load(from: shared.home)
        let environment = ConcordEnvironment(home: shared.home)
        let indexFile = shared.profile.appendingPathComponent(".git/concord/index.sqlite").path
        func removeIndex() { for suffix in ["", "-wal", "-shm"] { unlink(indexFile + suffix) } }

        // (d) From nothing: every record file of HEAD's tree read, decoded and inserted.
        var build = Samples()
        for run in 0...min(context.runs, 3) {
            context.progress("B10 build from scratch, run \(run == 0 ? "warm-up" : "\(run)")")
            removeIndex()
            let profile = try Profile.open(at: shared.profile, environment: environment)
            let seconds = try timed { try profile.index.catchUp() }
            if run > 0 { build.append(seconds) }
        }
        let store = try ConcordStore.open(at: shared.profile, identity: identity, environment: environment)
        try store.index([kind])

        // (a) The indexed query against the full scan.
        var indexed = Samples(), scanned = Samples()
        let profile = try Profile.open(at: shared.profile, environment: environment)
        for run in 0...context.runs {
            context.progress("B10 query, run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            var found = [Record](), reference = [Record]()
            let query = try timed { found = try store.read { try $0.query(Self.query) } }
            let scan = try timed { reference = try profile.records.scan(Self.query) }
            guard found.count == 50, found == reference else {
                throw BenchError("B10: the index returned \(found.count) records, the scan \(reference.count) (want the same 50)")
            }
            if run > 0 { indexed.append(query); scanned.append(scan) }
        }

        // (b) Opening a store whose index is at HEAD, and its first query.
        var opening = Samples()
        for run in 0...context.runs {
            let seconds = try timed {
                let opened = try ConcordStore.open(at: shared.profile, identity: identity, environment: environment)
                guard try opened.read({ try $0.count(Self.query) }) == 50 else { throw BenchError("B10: an opened store counted other than 50") }
            }
            if run > 0 { opening.append(seconds) }
        }

        let (sync, update) = try syncAndUpdate(context, shared: shared, identity: identity, environment: environment)
        let ratio = update.median / sync.median
        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                ResultRow(label: "B10 a query on one indexed field returning 50 of \(Format.count(records)) records (index) vs a full scan of the files",
                          concordCell: Format.duration(indexed.median), gitCell: Format.duration(scanned.median),
                          ratio: indexed.median / scanned.median, targetCell: "≤ 5 ms", met: indexed.median <= 0.005,
                          fastest: "index \(Format.duration(indexed.fastest)), scan \(Format.duration(scanned.fastest))"),
                ResultRow(label: "B10 opening a \(Format.count(records))-record store with its index ready, and its first query",
                          concordCell: Format.duration(opening.median), gitCell: "—", ratio: .nan, targetCell: "≤ 50 ms",
                          met: opening.median <= 0.050, fastest: "\(Format.duration(opening.fastest))"),
                ResultRow(label: "B10 the index update after a 10-record sync vs that sync (\(Format.count(records)) records)",
                          concordCell: Format.duration(update.median), gitCell: Format.duration(sync.median), ratio: ratio,
                          targetCell: "≤ 0.10", met: ratio <= 0.10,
                          fastest: "update \(Format.duration(update.fastest)), sync \(Format.duration(sync.fastest))"),
                ResultRow(label: "B10 building the index from scratch at \(Format.count(records)) records",
                          concordCell: Format.duration(build.median), gitCell: "—", ratio: .nan, targetCell: "≤ 2 s",
                          met: build.median <= 2.0, fastest: "\(Format.duration(build.fastest))"),
            ],
            notes: [
                "Set-up, not timed: the shared \(Format.count(records))-record `aac` profile; in this process, through the library. "
                    + "The store declares expression indexes on the vocabulary's `symbol` and `position` (`ConcordStore.index`).",
                "Query: `symbol` in five values (each held by 10 records), ordered by `label`: 50 records, through `store.read { $0.query }` "
                    + "(the index is at HEAD: one SQLite statement), against `Records.scan` of the same query (every file read and "
                    + "decoded), which must return the same records. In the table's git column: the scan.",
                "Open: `ConcordStore.open` and its first `count` of that query, the index already at HEAD.",
                "Sync: a bare copy of the profile (`git clone --bare`) holds one more commit of 10 changed records; each run moves the "
                    + "profile's main and its tracking ref back before it, catches the index up there (not timed), then times "
                    + "`Sync.run` (fetch, check, fast-forward of the 10 files) and then the index's catch-up to the new HEAD (the 10 "
                    + "files the fast-forward listed, handed over in this process by `RecentTreeChanges`, read and applied in one "
                    + "transaction; another process compares the two trees itself, about 2 ms more). In the git column: the sync.",
                "Build: the index file deleted, then `RecordIndex.catchUp` on a newly opened profile: HEAD's tree listed, every record "
                    + "blob read, decoded (on every core) and inserted in one transaction.",
                "Runs: query \(Format.runs(indexed)); scan \(Format.runs(scanned)); open \(Format.runs(opening)); sync \(Format.runs(sync)); "
                    + "update \(Format.runs(update)); build \(Format.runs(build)).",
            ])
    }

    /// (c): per run, the 10-record sync's time and the index update's after it.
    static func syncAndUpdate(_ context: BenchContext, shared: SharedDatasets.Profile, identity: Identity,
                              environment: ConcordEnvironment) throws -> (sync: Samples, update: Samples) {
        let directory = shared.profile
        let bare = context.path("b10-remote.git")
        try context.git.run(["clone", "-q", "--bare", directory.path, bare.path], in: nil, what: "git clone --bare")
        let profile = try Profile.open(at: directory, environment: environment)
        try profile.sync.addRemote("b10", url: bare.path)
        let before = try context.git.run(["rev-parse", "HEAD"], in: directory, what: "git rev-parse").output
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try profile.records.write(as: identity) { transaction in
            for index in 0..<10 {
                let number = index * 9_901
                try transaction.put(VocabularyData.kind, VocabularyData.id(number), data: VocabularyData.data(number, revision: 10))
            }
        }
        _ = try profile.sync.run(remote: "b10", as: identity)
        var sync = Samples(), update = Samples()
        for run in 0...context.runs {
            context.progress("B10 sync, run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            try context.git.run(["reset", "-q", "--hard", before], in: directory, what: "git reset")
            try context.git.run(["update-ref", "refs/remotes/b10/main", before], in: directory, what: "git update-ref")
            let moved = try Profile.open(at: directory, environment: environment)
            try moved.index.catchUp()
            let synced = try timed { _ = try moved.sync.run(remote: "b10", as: identity) }
            let updated = try timed { try moved.index.catchUp() }
            if run > 0 { sync.append(synced); update.append(updated) }
        }
        return (sync, update)
    }

    static func timed(_ body: () throws -> Void) throws -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }
}
