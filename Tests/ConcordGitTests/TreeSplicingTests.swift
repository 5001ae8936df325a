import ConcordGitFormats
import Foundation
import XCTest

@testable import ConcordGit

/// The hand-written bulk tree writer (`writeTreeBySplicing`, behind `writeTree(base:edits:into:)`)
/// against libgit2's (`writeTreeWithLibgit2`): on random histories of edits (new files, changed
/// and removed ones, removals of files that are not there, directories emptied, a file replacing
/// a directory and a directory replacing a file) both give the same tree, round after round.
final class TreeSplicingTests: GitTestCase {
    func testSplicedTreesEqualLibgit2sOnRandomEdits() throws {
        let (repository, _) = try makeRepository()
        var random = SeededGenerator(seed: 0x7EE5)
        let names = (0..<24).map { "n\($0)" }
        var blobs = [ObjectID]()
        for index in 0..<16 { blobs.append(try repository.writeBlob(Array("blob \(index)\n".utf8))) }
        var files = Set<String>()   // what the current tree holds
        var base: ObjectID?
        for round in 0..<60 {
            var edits = [String: ObjectID?]()
            for _ in 0..<Int.random(in: 1...12, using: &random) {
                let depth = Int.random(in: 1...3, using: &random)
                let path = (0..<depth).map { _ in names.randomElement(using: &random)! }.joined(separator: "/")
                if Bool.random(using: &random), let existing = files.randomElement(using: &random) {
                    edits[existing] = Bool.random(using: &random) ? nil : blobs.randomElement(using: &random)!   // remove or change
                } else if !edits.keys.contains(where: { $0.hasPrefix(path + "/") || path.hasPrefix($0 + "/") }) {
                    edits[path] = Int.random(in: 0..<5, using: &random) == 0 ? nil : blobs.randomElement(using: &random)!
                }
            }
            // No path both a file and a directory in one write (a bulk write never asks for that).
            let clean = edits.filter { edit in !edits.keys.contains { $0 != edit.key && $0.hasPrefix(edit.key + "/") } }
            let list = try clean.map { (path: try TreePath($0.key), blob: $0.value) }
            let byLibgit2 = try repository.writeTreeWithLibgit2(base: base, edits: list)
            var pack = ObjectPack()
            let spliced = try repository.writeTree(base: base, edits: list, into: &pack)
            XCTAssertEqual(spliced, byLibgit2, "round \(round): \(clean.map { "\($0.key)=\($0.value.map { $0.hex.prefix(4) } ?? "rm")" })")
            guard spliced == byLibgit2 else { return }
            try pack.write(into: repository)
            base = spliced
            files = Set(try gitOK(["ls-tree", "-r", "--name-only", spliced.hex], in: repository.workdir.map { URL(fileURLWithPath: $0) }!)
                .split(separator: "\n").map(String.init))
        }
        XCTAssertFalse(files.isEmpty)
    }
}
