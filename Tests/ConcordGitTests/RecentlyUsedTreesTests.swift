import ConcordGitFormats
import XCTest

@testable import ConcordGit

/// `RecentlyUsedTrees` holds the trees a path fetch used last, in two generations of a bounded
/// size: a full young generation becomes the old one and the old one is let go; a tree used
/// while old is kept young; a tree larger than a generation is not held.
final class RecentlyUsedTreesTests: XCTestCase {
    func testGenerationsKeepWhatWasUsedLastWithinTheirBound() throws {
        let (a, b, c, d) = (try tree("a"), try tree("b"), try tree("c"), try tree("d"))
        let size = a.tree.bytes.count
        var held = RecentlyUsedTrees(bytesPerGeneration: 2 * size)
        held.add(a.tree, a.id)
        held.add(b.tree, b.id)
        XCTAssertEqual(held.tree(a.id)?.bytes, a.tree.bytes)
        held.add(c.tree, c.id)   // the young generation (a, b) is full: it becomes the old one
        XCTAssertEqual(held.tree(b.id)?.bytes, b.tree.bytes, "old, and used: young again (with c)")
        held.add(d.tree, d.id)   // (c, b) become old, a is let go
        XCTAssertNil(held.tree(a.id))
        XCTAssertEqual(held.tree(c.id)?.bytes, c.tree.bytes)
        XCTAssertEqual(held.tree(d.id)?.bytes, d.tree.bytes)

        var small = RecentlyUsedTrees(bytesPerGeneration: size - 1)
        small.add(a.tree, a.id)
        XCTAssertNil(small.tree(a.id), "larger than a generation: not held")
    }

    /// A one-entry tree whose file is named `name` (all names here are one byte: same size).
    private func tree(_ name: String) throws -> (tree: RawTree, id: ObjectID) {
        let bytes = Array("100644 \(name)".utf8) + [0] + [UInt8](repeating: UInt8(name.utf8.first!), count: 20)
        let id = ObjectPack.id(of: bytes, type: .tree)
        return (try RawTree(bytes, id: id), id)
    }
}
