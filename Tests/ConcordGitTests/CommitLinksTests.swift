import ConcordGit
import ConcordTestSupport
import Foundation
import XCTest

/// `commitLinks` (a commit's tree and parents read from its bytes) and `Repository.history` (the walk
/// the membership replay takes), against libgit2's parse and git's own walk.
final class CommitLinksTests: GitTestCase {
    func testLinksAgreeWithLibgit2AndTheWalkPutsParentsFirst() throws {
        let (repository, url) = try makeRepository()
        // A history with forks and merges, in a seeded random shape.
        var generator = SeededGenerator(seed: 7)
        var commits = [try commit(repository, files: ["a": "0"])]
        for index in 1..<60 {
            let first = commits[Int.random(in: max(0, commits.count - 6)..<commits.count, using: &generator)]
            let base = try repository.commit(first).tree
            if index % 4 == 0, let second = commits.filter({ $0 != first }).randomElement(using: &generator) {
                commits.append(try commit(repository, files: ["m\(index)": "\(index)"], base: base, parents: [first, second]))
            } else {
                commits.append(try commit(repository, files: ["f\(index)": "\(index)"], base: base, parents: [first]))
            }
        }
        for id in commits {
            let links = try repository.commitLinks(id), parsed = try repository.commit(id)
            XCTAssertEqual(links.parents, parsed.parents)
            XCTAssertEqual(links.tree, parsed.tree)
        }
        let tips = Array(commits.suffix(3))
        let walked = try Repository.history(from: tips) { try repository.commitLinks($0) }
        let listed = try gitOK(["rev-list"] + tips.map(\.hex), in: url).split(separator: "\n").map(String.init)
        XCTAssertEqual(Set(walked.map(\.id.hex)), Set(listed))
        XCTAssertEqual(walked.count, listed.count, "each commit once")
        var position = [ObjectID: Int]()
        for (index, commit) in walked.enumerated() { position[commit.id] = index }
        for commit in walked {
            for parent in commit.parents { XCTAssertLessThan(try XCTUnwrap(position[parent]), position[commit.id]!, "a parent comes first") }
        }
        XCTAssertEqual(walked.first?.id, commits[0], "the root first")
    }

    /// A `parent` line below the author is not a parent for libgit2 (nor git): the links must not
    /// make it one, or the replay would walk a history no check saw.
    func testAParentLineBelowTheHeaderIsNotAParent() throws {
        let (repository, url) = try makeRepository()
        let root = try commit(repository, files: ["a": "0"])
        let stray = try commit(repository, files: ["b": "1"])
        let tree = try repository.commit(root).tree
        let text = "tree \(tree.hex)\nparent \(root.hex)\nauthor T <t@x> 1767261600 +0000\n"
            + "committer T <t@x> 1767261600 +0000\nparent \(stray.hex)\n\nhostile\n"
        let id = try XCTUnwrap(ObjectID(hex: gitOK(["hash-object", "-t", "commit", "-w", "--literally", "--stdin"], in: url,
                                                   input: Data(text.utf8))))
        XCTAssertEqual(try repository.commitLinks(id).parents, try repository.commit(id).parents)
        XCTAssertEqual(try repository.commitLinks(id).parents, [root])
        XCTAssertEqual(try gitOK(["rev-list", "--parents", "-n", "1", id.hex], in: url), "\(id.hex) \(root.hex)")

        // No tree line first: refused, as libgit2 refuses it.
        let bad = try XCTUnwrap(ObjectID(hex: gitOK(["hash-object", "-t", "commit", "-w", "--literally", "--stdin"], in: url,
                                                    input: Data("parent \(root.hex)\ntree \(tree.hex)\n\nx\n".utf8))))
        XCTAssertThrowsError(try repository.commitLinks(bad))
        XCTAssertThrowsError(try repository.commit(bad))
    }
}
