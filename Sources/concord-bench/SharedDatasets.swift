import Foundation

/// Profiles of N synthetic `vocabulary` records (`VocabularyData`), each made once per bench run by
/// `concord init --template aac` and ONE `concord import`, and handed to every scenario that asks
/// for that size: B1 and B3 and B5 share the 10,000-record one, B2 and B6 the 1,000- and
/// 100,000-record ones (building the 100k one takes ~12 s).
///
/// Scenarios may add commits (B2's puts, B6's changes) and remotes (each under its own name) to a
/// shared profile, and copy it, but never remove records 0..<N or rewrite its history. The plain
/// git clones (`gitClone`) are git-side scratch: whoever uses one last may reset it.
final class SharedDatasets {
    /// A profile and the identity that created it (its admin, who can write to it).
    struct Profile {
        let records: Int
        /// The `CONCORD_HOME` of the profile's creator (identity bench/bench).
        let home: URL
        let profile: URL
        /// The `{"records":[...]}` dump it was imported from.
        let dump: URL
        /// How long the one `concord import` took.
        let importSeconds: Double
    }

    /// A plain `git clone` of a shared profile, for git sides: B2 commits its puts into it, B6 then
    /// points it at its bare repository and resets it (creating another 100k-file clone would cost
    /// seconds to write and more to delete).
    struct GitClone {
        let repository: URL
        /// How long the `git clone` took.
        let cloneSeconds: Double
    }

    private let directory: URL
    private let concord: ConcordCLI
    private let git: GitCLI
    private var built = [Int: Profile]()
    private var clones = [Int: GitClone]()

    init(directory: URL, concord: ConcordCLI, git: GitCLI) {
        self.directory = directory
        self.concord = concord
        self.git = git
    }

    /// The git clone of the shared profile of `records` records, made on first use.
    func gitClone(records: Int, progress: (String) -> Void) throws -> GitClone {
        if let existing = clones[records] { return existing }
        let source = try profile(records: records, progress: progress)
        let repository = directory.appendingPathComponent("git-clone-\(records)")
        progress("preparing: git clone of the shared \(Format.count(records))-record profile")
        let seconds = try git.run(["clone", "-q", source.profile.path, repository.path], in: nil,
                                  what: "git clone (\(Format.count(records)) records)").seconds
        let clone = GitClone(repository: repository, cloneSeconds: seconds)
        clones[records] = clone
        return clone
    }

    /// The shared profile of `records` records, built on first use (outside any timing).
    func profile(records: Int, progress: (String) -> Void) throws -> Profile {
        if let existing = built[records] { return existing }
        let name = "profile-\(records)"
        let home = directory.appendingPathComponent("\(name)-home"), profile = directory.appendingPathComponent(name)
        let dump = directory.appendingPathComponent("\(name)-dump.json")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try VocabularyData.writeDump(count: records, to: dump)
        try concord.makeHome(home)
        try concord.run(["init", profile.path, "--name", "bench", "--template", "aac"], home: home, what: "concord init")
        progress("preparing the shared \(Format.count(records))-record profile: concord import")
        let seconds = try concord.run(["import", "-C", profile.path, "--file", dump.path], home: home,
                                      what: "concord import (\(Format.count(records)) records)").seconds
        let files = try VocabularyData.fileNames(in: profile.appendingPathComponent(VocabularyData.kind))
        guard files.count == records else {
            throw BenchError("concord import of \(Format.count(records)) records left \(files.count) files in \(VocabularyData.kind)/")
        }
        let dataset = Profile(records: records, home: home, profile: profile, dump: dump, importSeconds: seconds)
        built[records] = dataset
        return dataset
    }
}
