import ConcordGit
import ConcordKit
import Foundation

/// G5: fetch from and push to a path remote: `ObjectTransfer` + `SourceObjects` vs libgit2's local transport.
enum PathRemoteRows {
    static let main = "refs/heads/main"
    static let tracking = "refs/remotes/origin/main"

    static func run(_ context: BenchContext) throws -> ScenarioResult {
        let small = try context.sharedProfile(records: 10_000)
        let large = try context.sharedProfile(records: 100_000)

        // A clone's fetch: the whole 10k-record history into an empty repository.
        context.progress("G5 preparing: a bare copy of the 10k-record profile")
        let origin10k = context.path("origin-10k.git")
        let source10k = try Pieces.bareCopy(of: small.profile, at: origin10k)
        let tip10k = try source10k.resolveReference(main)
        let clone = try Pieces.alternate(runs: context.runs, context.progress, label: "G5 fetch 10k into empty", hand: { run in
            let target = try Repository.create(at: context.path("clone-hand-\(run).git").path, bare: true)
            let seconds = try timed {
                try target.fetchFromLocalRepository(at: origin10k.path, ref: main, into: tracking, intoEmpty: true)
            }
            guard try target.resolveReference(tracking) == tip10k else { throw BenchError("G5: hand-written fetch missed the tip") }
            return seconds
        }, libgit2: { run in
            let target = try Repository.create(at: context.path("clone-libgit2-\(run).git").path, bare: true)
            let seconds = try timed {
                try target.fetch(url: origin10k.path, refspecs: ["+\(main):\(tracking)"], options: TransportOptions())
            }
            guard try target.resolveReference(tracking) == tip10k else { throw BenchError("G5: libgit2 fetch missed the tip") }
            return seconds
        })

        // A sync at 100k: one new commit (one record) fetched by one copy, pushed to another.
        context.progress("G5 preparing: five bare copies of the 100k-record profile")
        let origin = context.path("origin-100k.git")
        let work = try Pieces.bareCopy(of: large.profile, at: origin)
        let fetchHand = try Pieces.bareCopy(of: origin, at: context.path("fetch-hand.git"))
        let fetchLibgit2 = try Pieces.bareCopy(of: origin, at: context.path("fetch-libgit2.git"))
        let pushHand = context.path("push-hand.git"), pushLibgit2 = context.path("push-libgit2.git")
        try Pieces.bareCopy(of: origin, at: pushHand)
        try Pieces.bareCopy(of: origin, at: pushLibgit2)
        try work.addRemote("g5-libgit2", url: pushLibgit2.path)
        var tips = [ObjectID]()
        var fetch = (hand: Samples(), libgit2: Samples()), push = (hand: Samples(), libgit2: Samples())
        for run in 0...context.runs {
            context.progress("G5 sync at 100k run \(run == 0 ? "warm-up" : "\(run)/\(context.runs)")")
            let old = try work.resolveReference(main)
            let tip = try Pieces.commitChange(in: work, index: (run * 3_989 + 17) % 100_000, revision: 3_000 + run)
            tips.append(tip)
            let fetchHandTime = try timed {
                try fetchHand.fetchFromLocalRepository(at: origin.path, ref: main, into: tracking)
            }
            let fetchLibgit2Time = try timed {
                try fetchLibgit2.fetch(url: origin.path, refspecs: ["+\(main):\(tracking)"], options: TransportOptions())
            }
            let pushHandTime = try timed {
                try work.pushToLocalRepository(at: pushHand.path, ref: main, tip: tip, expected: old)
            }
            let pushLibgit2Time = try timed { try work.pushUsingLibgit2(remote: "g5-libgit2", refspec: "\(main):\(main)") }
            guard try fetchHand.resolveReference(tracking) == tip, try fetchLibgit2.resolveReference(tracking) == tip,
                  try Repository.open(pushHand.path).resolveReference(main) == tip,
                  try Repository.open(pushLibgit2.path).resolveReference(main) == tip else {
                throw BenchError("G5: a fetch or push at 100k did not bring the new tip")
            }
            if run > 0 {
                fetch.hand.append(fetchHandTime)
                fetch.libgit2.append(fetchLibgit2Time)
                push.hand.append(pushHandTime)
                push.libgit2.append(pushLibgit2Time)
            }
        }
        for repository in [pushHand, pushLibgit2, context.path("fetch-hand.git"), context.path("fetch-libgit2.git")] {
            try context.git.run(["fsck", "--connectivity-only", "--no-dangling"], in: repository, what: "git fsck \(repository.lastPathComponent)")
        }

        return ScenarioResult(
            scenario: context.scenario,
            rows: [
                ResultRow(label: "G5 fetch a 10k-record profile into an empty repository (hand-written vs libgit2 local transport)",
                          concord: clone.hand, git: clone.libgit2),
                ResultRow(label: "G5 fetch one new commit at 100k from a path remote (hand-written vs libgit2)",
                          concord: fetch.hand, git: fetch.libgit2),
                ResultRow(label: "G5 push one new commit at 100k to a path remote (hand-written vs libgit2)",
                          concord: push.hand, git: push.libgit2),
            ],
            notes: [
                Pieces.columnsNote("`fetchFromLocalRepository` / `pushToLocalRepository`: `SourceObjects` reads the remote's "
                                   + "files, `ObjectTransfer` walks only the changed trees, re-hashes every object and writes "
                                   + "one `ObjectPack`; the push moves the ref by compare-and-swap",
                                   "`Repository.fetch(url:)` / `pushUsingLibgit2`: `git_remote_fetch` / `git_remote_push` on "
                                   + "the path URL (libgit2's local transport: packbuilder, indexer, forced ref update)"),
                "Fetch 10k: the shared 10k profile as a bare repository; each run fetches its `main` into a new empty bare "
                    + "repository (fsync on). Sync at 100k: bare copies of the shared 100k profile; each run adds one commit "
                    + "changing one record to the origin, then one copy per side fetches it and the origin pushes it to one "
                    + "copy per side. Checks: every side ends on the new tip; `git fsck --connectivity-only` of the copies.",
                "**Safety, whatever the figures:** libgit2 1.5.1 reads a path remote's objects with its own loose-object code, "
                    + "which overflows the heap on a loose object whose header understates its size and loops forever on a "
                    + "truncated one (found by the Integrity work). `SourceObjects` exists to read a path remote, which is "
                    + "not trusted, safely; so libgit2's local transport must not replace it for fetching, however fast it is. "
                    + "libgit2's local push also forces the remote ref (no compare-and-swap against another pusher).",
                "Runs: fetch 10k hand \(Format.runs(clone.hand)); libgit2 \(Format.runs(clone.libgit2)). Fetch at 100k hand "
                    + "\(Format.runs(fetch.hand)); libgit2 \(Format.runs(fetch.libgit2)). Push at 100k hand "
                    + "\(Format.runs(push.hand)); libgit2 \(Format.runs(push.libgit2)).",
            ])
    }
}
