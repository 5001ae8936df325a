import ConcordGit
import ConcordKit
import Foundation

/// What the G scenarios share: each times one hand-written git piece of Concord (in the concord
/// column) against libgit2 doing the same work (in the git column), in process, on the shared
/// profiles, alternating the sides run by run. Rows: "Gn <operation> (hand-written vs libgit2)".
enum Pieces {
    /// A bare repository at `path` holding the branch of the shared profile at `source` (untimed set-up).
    @discardableResult
    static func bareCopy(of source: URL, at path: URL) throws -> Repository {
        let repository = try Repository.create(at: path.path, bare: true)
        try repository.fetchFromLocalRepository(at: source.path, ref: "refs/heads/main", into: "refs/heads/main",
                                                durable: false, intoEmpty: true)
        repository.releaseCaches()
        return repository
    }

    /// Every file of `tree`, path and blob id, in tree order.
    static func files(of tree: ObjectID, in repository: Repository, under prefix: String = "") throws -> [(path: String, blob: ObjectID)] {
        var out = [(path: String, blob: ObjectID)]()
        for entry in try repository.entries(inDirectory: prefix, ofTree: tree) {
            let path = prefix.isEmpty ? entry.name : prefix + "/" + entry.name
            if entry.kind == .tree {
                out += try files(of: tree, in: repository, under: path)
            } else {
                out.append((path, entry.id))
            }
        }
        return out
    }

    /// Every file of the shared profile's HEAD with its bytes (untimed set-up).
    static func records(of profile: URL) throws -> (tree: ObjectID, files: [(path: String, bytes: [UInt8])]) {
        let repository = try Repository.open(profile.path)
        guard let head = try repository.resolveReference("refs/heads/main") else { throw BenchError("\(profile.path) has no main") }
        let tree = try repository.commit(head).tree
        return (tree, try files(of: tree, in: repository).map { ($0.path, try repository.blob($0.blob)) })
    }

    /// A new commit on `main` of `repository` changing record `index` (signature text is a stand-in:
    /// these rows time object transfer, not verification). Returns the new tip.
    @discardableResult
    static func commitChange(in repository: Repository, index: Int, revision: Int) throws -> ObjectID {
        guard let head = try repository.resolveReference("refs/heads/main") else { throw BenchError("no main to change") }
        let id = VocabularyData.id(index)
        let path = RecordPaths.file(directory: VocabularyData.kind, id: id)
        let blob = try repository.writeBlob(JSONValue.object(VocabularyData.data(index, revision: revision)).canonicalLine())
        let tree = try repository.writeTree(base: try repository.commit(head).tree, edits: [try TreePath(path): .some(blob)])
        let commit = try repository.createSignedCommit(
            tree: tree, parents: [head], author: GitSignature(name: "bench", email: "bench@b", time: 1_700_000_000 + Int64(revision)),
            message: "\(path): updated\n", sign: { _ in "-----BEGIN SSH SIGNATURE-----\nYmVuY2g=\n-----END SSH SIGNATURE-----" })
        try repository.updateReference("refs/heads/main", to: commit, expected: head, message: "bench")
        return commit
    }

    /// Runs `hand` and `libgit2` `runs` times each after one untimed warm-up, alternating which goes
    /// first; each side returns the seconds of its timed part (see `timed`), set-up left out.
    static func alternate(runs: Int, _ progress: (String) -> Void, label: String,
                          hand: (Int) throws -> Double, libgit2: (Int) throws -> Double) throws -> (hand: Samples, libgit2: Samples) {
        var handSamples = Samples(), libgit2Samples = Samples()
        for run in 0...runs {
            progress("\(label) run \(run == 0 ? "warm-up" : "\(run)/\(runs)")")
            let handTime: Double, libgit2Time: Double
            if run % 2 == 0 {
                handTime = try hand(run)
                libgit2Time = try libgit2(run)
            } else {
                libgit2Time = try libgit2(run)
                handTime = try hand(run)
            }
            if run > 0 {
                handSamples.append(handTime)
                libgit2Samples.append(libgit2Time)
            }
        }
        return (handSamples, libgit2Samples)
    }

    /// The row note every G scenario starts with.
    static func columnsNote(_ hand: String, _ libgit2: String) -> String {
        "Columns: **concord = the hand-written piece** (\(hand)); **git = libgit2** (\(libgit2)), both in the bench "
            + "process (release build), on the same data in the same run, sides alternating which goes first; one untimed "
            + "warm-up run each."
    }

    /// A piece's result in one row `label` of `samples`: the columns note (`hand` and `libgit2` as
    /// `columnsNote` takes them), then `notes`, then the runs of each side.
    static func oneRowResult(_ context: BenchContext, label: String, samples: (hand: Samples, libgit2: Samples),
                             hand: String, libgit2: String, notes: [String]) -> ScenarioResult {
        ScenarioResult(scenario: context.scenario, rows: [ResultRow(label: label, concord: samples.hand, git: samples.libgit2)],
                       notes: [columnsNote(hand, libgit2)] + notes
                           + ["Runs: hand \(Format.runs(samples.hand)); libgit2 \(Format.runs(samples.libgit2))."])
    }
}

/// The seconds `body` takes (a side of `Pieces.alternate` returns this for its timed part).
func timed(_ body: () throws -> Void) rethrows -> Double {
    try measure(body).seconds
}
