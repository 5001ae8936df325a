import ConcordTestSupport
@testable import ConcordGitFormats
import XCTest

/// `RawTree.forEachDifference` and `isStrictlyOrdered` work on the tree bytes in place and skip
/// what two trees share in bulk (bench row B7); on random trees, ordered or not, they must give
/// what the straightforward walk below gives, difference for difference.
final class RawTreeWalkTests: XCTestCase {
    private static let names = ["a", "a-b", "a.b", "a0", "ab", "b", "-", "0", "a.json", "ff", "00", "a\u{e9}"]
    private static let modes = ["100644", "40000", "100755", "120000"]

    func testTheWalksMatchTheStraightforwardWalks() throws {
        var generator = SeededGenerator(seed: 20261124)
        var ordered = 0, differences = 0
        for round in 0..<3_000 {
            let old = randomEntries(&generator)
            let new = Int.random(in: 0..<4, using: &generator) == 0 ? randomEntries(&generator) : edited(old, &generator)
            let oldTree = try RawTree(Self.bytes(old), id: nil), newTree = try RawTree(Self.bytes(new), id: nil)
            var walked = [String](), expected = [String]()
            RawTree.forEachDifference(from: oldTree, to: newTree) { walked.append(Self.describe($0, oldTree, $1, newTree)) }
            Self.straightforwardDifferences(from: oldTree, to: newTree) { expected.append(Self.describe($0, oldTree, $1, newTree)) }
            XCTAssertEqual(walked, expected, "round \(round): \(old) -> \(new)")
            XCTAssertEqual(newTree.isStrictlyOrdered, Self.straightforwardIsStrictlyOrdered(newTree), "round \(round): \(new)")
            if newTree.isStrictlyOrdered { ordered += 1 }
            differences += walked.count
        }
        XCTAssertGreaterThan(ordered, 300, "ordered trees are among the cases")
        XCTAssertGreaterThan(differences, 3_000, "the trees differ")
    }

    // MARK: The straightforward walks (as they were before the bytes were compared in place)

    private static func straightforwardDifferences(from old: RawTree, to new: RawTree, _ body: (RawTree.Entry?, RawTree.Entry?) -> Void) {
        var i = 0, j = 0
        while i < old.entries.count || j < new.entries.count {
            let order: Int
            if i == old.entries.count {
                order = 1
            } else if j == new.entries.count {
                order = -1
            } else {
                let a = old.entries[i], b = new.entries[j]
                order = RawTree.compare(old.name(a), a.isTree, new.name(b), b.isTree)
            }
            if order < 0 {
                body(old.entries[i], nil)
                i += 1
            } else if order > 0 {
                body(nil, new.entries[j])
                j += 1
            } else {
                let a = old.entries[i], b = new.entries[j]
                if !old.bytes[a.start..<a.end].elementsEqual(new.bytes[b.start..<b.end]) { body(a, b) }
                i += 1
                j += 1
            }
        }
    }

    private static func straightforwardIsStrictlyOrdered(_ tree: RawTree) -> Bool {
        tree.entries.indices.dropFirst().allSatisfy { index in
            let a = tree.entries[index - 1], b = tree.entries[index]
            return RawTree.compare(tree.name(a), a.isTree, tree.name(b), b.isTree) < 0 && !tree.name(a).elementsEqual(tree.name(b))
        }
    }

    // MARK: Random trees

    private typealias Entry = (mode: String, name: String, id: UInt8)

    private func randomEntries(_ generator: inout SeededGenerator) -> [Entry] {
        var entries = (0..<Int.random(in: 0...12, using: &generator)).map { _ in randomEntry(&generator) }
        if Bool.random(using: &generator) {
            // In git's order, each name once: most real trees.
            var seen = Set<String>()
            entries = entries.filter { seen.insert($0.name).inserted }.sorted { Self.sortsBefore($0, $1) }
        }
        return entries
    }

    private func randomEntry(_ generator: inout SeededGenerator) -> Entry {
        (Self.modes.randomElement(using: &generator)!, Self.names.randomElement(using: &generator)!, UInt8.random(in: 0...2, using: &generator))
    }

    /// `old` with a few entries changed, added, removed or moved: trees that share a start and an end.
    private func edited(_ old: [Entry], _ generator: inout SeededGenerator) -> [Entry] {
        var entries = old
        for _ in 0..<Int.random(in: 0...3, using: &generator) {
            let position = Int.random(in: 0...entries.count, using: &generator)
            switch Int.random(in: 0..<4, using: &generator) {
            case 0 where position < entries.count: entries[position].id &+= 1
            case 1: entries.insert(randomEntry(&generator), at: position)
            case 2 where position < entries.count: entries.remove(at: position)
            case 3 where position < entries.count: entries.swapAt(position, Int.random(in: 0..<entries.count, using: &generator))
            default: break
            }
        }
        return entries
    }

    private static func sortsBefore(_ a: Entry, _ b: Entry) -> Bool {
        RawTree.compare(Array(a.name.utf8)[...], a.mode == "40000", Array(b.name.utf8)[...], b.mode == "40000") < 0
    }

    private static func bytes(_ entries: [Entry]) -> [UInt8] {
        entries.flatMap { entry in Array("\(entry.mode) \(entry.name)".utf8) + [0] + [UInt8](repeating: entry.id, count: 20) }
    }

    private static func describe(_ old: RawTree.Entry?, _ oldTree: RawTree, _ new: RawTree.Entry?, _ newTree: RawTree) -> String {
        "\(old.map { "\($0.start)\(String(decoding: oldTree.name($0), as: UTF8.self))" } ?? "-") \(new.map { "\($0.start)\(String(decoding: newTree.name($0), as: UTF8.self))" } ?? "-")"
    }
}
