import ConcordGit
import ConcordModel
import Foundation

/// `concord merge-driver %O %A %B %P`: the same policies, run by plain `git merge` / `git pull`.
package enum MergeDriverRun {
    /// Merges the files git hands over and overwrites `ours` with the result. Returns nil when the
    /// merge is clean, or the reason it is not (git then marks the file conflicted). git runs the
    /// driver at the top of the working tree. The policies come from the same kinds as in process: the
    /// three-way merge of `.concord/kinds.json` in HEAD, in the commit being merged (which `git merge`
    /// and `git pull` name in a `GITHEAD_<commit>` environment variable) and in their merge base, so
    /// both directions agree whatever kinds changed. Run any other way (a rebase, a cherry-pick), the
    /// working tree's `.concord/kinds.json` decides.
    public static func run(ancestor: String, ours: String, theirs: String, path: String,
                           workingDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)) throws -> String? {
        func read(_ file: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConcordError.io(.read, path: file, "merge-driver: cannot read \(file)")
            }
            return Array(data)
        }
        let base = try read(ancestor)
        let kinds = mergedKinds(in: workingDirectory) ?? {
            let bytes = FileManager.default.contents(atPath: workingDirectory.appendingPathComponent(KindsTable.path).path)
            return bytes.flatMap { try? KindsTable.decode(Array($0)) } ?? .empty
        }()
        let planner = MergePlanner(kinds: kinds)
        // git passes an empty ancestor for add/add.
        guard let outcome = planner.outcome(path: path, base: base.isEmpty ? nil : base, ours: try read(ours), theirs: try read(theirs)) else {
            return "\(path) is not covered by any Concord kind; merge it by hand"
        }
        switch outcome {
        case .merged(let bytes, _):
            do { try Data(bytes).write(to: URL(fileURLWithPath: ours)) } catch {
                throw ConcordError.io(.write, path: ours, "merge-driver: cannot write \(ours): \(error.localizedDescription)")
            }
            return nil
        case .unresolved(let reason):
            return "\(path): \(reason)"
        }
    }

    /// The kinds of the `git merge` running this driver, as `Profile.merge` computes them; nil when
    /// git names no single commit being merged or the repository cannot be read.
    static func mergedKinds(in workingDirectory: URL, environment: [String: String] = ProcessInfo.processInfo.environment) -> KindsTable? {
        let merging = environment.keys.filter { $0.hasPrefix("GITHEAD_") }.compactMap { ObjectID(hex: String($0.dropFirst(8))) }
        guard merging.count == 1, let theirs = merging.first,
              let repository = try? Repository.open(workingDirectory.path),
              let ours = try? repository.resolveReference("HEAD") else { return nil }
        func kindsFile(_ commit: ObjectID?) -> [UInt8]? {
            guard let commit, let tree = try? repository.commit(commit).tree,
                  let entry = try? repository.entry(at: KindsTable.path, inTree: tree) else { return nil }
            return try? repository.blob(entry.id)
        }
        guard kindsFile(theirs) != nil || kindsFile(ours) != nil else { return nil }
        let base = (try? repository.mergeBase(ours, theirs)) ?? nil
        return MergePlanner.mergedKinds(base: kindsFile(base), ours: kindsFile(ours), theirs: kindsFile(theirs))
    }
}
