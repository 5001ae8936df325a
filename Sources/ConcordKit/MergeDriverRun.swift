import ConcordModel
import Foundation

/// `concord merge-driver %O %A %B %P`: the same policies, run by plain `git merge` / `git pull`.
public enum MergeDriverRun {
    /// Merges the files git hands over and overwrites `ours` with the result. Returns nil when the
    /// merge is clean, or the reason it is not (git then marks the file conflicted). git runs the
    /// driver at the top of the working tree, whose `.concord/kinds.json` says which policy applies.
    public static func run(ancestor: String, ours: String, theirs: String, path: String,
                           workingDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)) throws -> String? {
        func read(_ file: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConcordError.io("merge-driver: cannot read \(file)")
            }
            return Array(data)
        }
        let base = try read(ancestor)
        let kindsBytes = FileManager.default.contents(atPath: workingDirectory.appendingPathComponent(KindsTable.path).path)
        let kinds = kindsBytes.flatMap { try? KindsTable.decode(Array($0)) } ?? .empty
        let planner = MergePlanner(kinds: kinds)
        // git passes an empty ancestor for add/add.
        guard let outcome = planner.outcome(path: path, base: base.isEmpty ? nil : base, ours: try read(ours), theirs: try read(theirs)) else {
            return "\(path) is not covered by any Concord kind; merge it by hand"
        }
        switch outcome {
        case .merged(let bytes, _):
            do { try Data(bytes).write(to: URL(fileURLWithPath: ours)) } catch {
                throw ConcordError.io("merge-driver: cannot write \(ours): \(error.localizedDescription)")
            }
            return nil
        case .unresolved(let reason):
            return "\(path): \(reason)"
        }
    }
}
