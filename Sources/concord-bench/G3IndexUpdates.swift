import ConcordGit
import ConcordKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// G3: index updates: `IndexPatch` vs libgit2's index (read, add, write).
enum IndexUpdateRows {
    static func run(_ context: BenchContext) throws -> ScenarioResult {
        var rows = [ResultRow](), runs = [String]()
        for records in [10_000, 100_000] {
            let shared = try context.sharedProfile(records: records)
            let repository = try Repository.open(shared.profile.path)
            guard let head = try repository.resolveReference("refs/heads/main") else { throw BenchError("no main") }
            let tree = try repository.commit(head).tree
            let indexPath = repository.gitDirectory + "index"
            // One record's update as a put makes it: its path, its blob, its file's stat data. The
            // record keeps its content, so the profile is left as it was.
            func update(_ run: Int, side: Int) throws -> IndexPatch.Update {
                let index = (run * 4_099 + side * 2_003 + 11) % records
                let path = RecordPaths.file(directory: VocabularyData.kind, id: VocabularyData.id(index))
                guard let entry = try repository.entry(at: path, inTree: tree) else { throw BenchError("no \(path) in HEAD") }
                var info = stat()
                guard lstat(shared.profile.path + "/" + path, &info) == 0 else { throw BenchError("cannot stat \(path)") }
                return IndexPatch.Update(path: try TreePath(path), file: (info, entry.id))
            }
            let label = records == 10_000 ? "10k" : "100k"
            let samples = try Pieces.alternate(runs: context.runs, context.progress, label: "G3 index update at \(label)", hand: { run in
                let change = try update(run, side: 0)
                let checksum = repository.indexChecksum
                var outcome = IndexPatch.Outcome.unsupported
                let seconds = try timed { outcome = try IndexPatch.apply([change], indexPath: indexPath, checksum: checksum) }
                guard outcome == .patched else { throw BenchError("G3: IndexPatch did not patch the \(label) index (\(outcome))") }
                return seconds
            }, libgit2: { run in
                let change = try update(run, side: 1)
                try repository.restoreIndexChecksumForLibgit2()
                return try timed { try repository.updateIndexUsingLibgit2([change]) }
            })
            let status = try context.git.status(shared.profile)
            guard status.isEmpty else { throw BenchError("G3: git status of the \(label) profile is not clean afterwards:\n\(status)") }
            let size = ((try? FileManager.default.attributesOfItem(atPath: indexPath)[.size]) as? Int) ?? 0
            rows.append(ResultRow(label: "G3 index update of one put at \(label) (\(Format.bytes(size)) index; hand-written vs libgit2)",
                                  concord: samples.hand, git: samples.libgit2))
            runs.append("\(label): hand \(Format.runs(samples.hand)); libgit2 \(Format.runs(samples.libgit2))")
        }
        return ScenarioResult(
            scenario: context.scenario,
            rows: rows,
            notes: [
                Pieces.columnsNote("`IndexPatch.apply`: the index mapped, the one entry spliced, written under `index.lock` "
                                   + "(SHA-1 trailer skipped above 2 MiB, as `index.skipHash` does)",
                                   "`Repository.updateIndexUsingLibgit2`: `git_index_read`, `git_index_add`, `git_index_write` "
                                   + "(what Concord falls back to for an index `IndexPatch` leaves alone)"),
                "Each run records one record's blob and its file's stat data (the record's own, unchanged, so the shared "
                    + "profile stays as it was) in the shared profile's index: the index step of a `concord put`. Before each "
                    + "libgit2 run (untimed) the checksum the patch skipped is restored: an index only libgit2 writes always has "
                    + "one. Check: `git status` is clean afterwards.",
                "Runs: " + runs.joined(separator: ". ") + ".",
            ])
    }
}
