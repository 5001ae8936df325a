import ConcordGit
import Foundation
import XCTest

/// A `TransferCancellation` made current on a thread (`whileCurrent`, what `ConcordStore` does for
/// an `async` sync) ends the transfers started there: libgit2's at its next progress callback, a
/// path remote's object copy between two commits. Either way no ref moves.
final class TransferCancellationTests: GitTestCase {
    private static let refspec = "+refs/heads/main:refs/remotes/origin/main"

    func testACancelledLibgit2FetchStopsAtItsNextCallback() throws {
        let (_, source) = try makeRepository("source")
        try writeWithGit(["a.json": "{}\n", "b.json": "[]\n"], in: source)
        let (repository, _) = try makeRepository("device")
        let cancellation = TransferCancellation()
        cancellation.cancel()
        let thrown = cancellation.whileCurrent {
            thrownError(Error.self) { try repository.fetch(url: source.path, refspecs: [Self.refspec], options: TransportOptions()) }
        }
        XCTAssertTrue(thrown.error is TransferCancelled, "\(String(describing: thrown.error))")
        XCTAssertNil(try repository.resolveReference("refs/remotes/origin/main"))

        try repository.fetch(url: source.path, refspecs: [Self.refspec], options: TransportOptions())
        XCTAssertEqual(try repository.resolveReference("refs/remotes/origin/main")?.hex, try gitOK(["rev-parse", "HEAD"], in: source))
    }

    func testACancelledCopyFromAPathRemoteMovesNoRef() throws {
        let (_, source) = try makeRepository("source")
        try writeWithGit(["a.json": "{}\n"], in: source)
        let (repository, _) = try makeRepository("device")
        let cancellation = TransferCancellation()
        cancellation.cancel()
        let thrown = cancellation.whileCurrent {
            thrownError(Error.self) {
                try repository.fetchFromLocalRepository(at: source.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
            }
        }
        XCTAssertTrue(thrown.error is TransferCancelled, "\(String(describing: thrown.error))")
        XCTAssertNil(try repository.resolveReference("refs/remotes/origin/main"))
        XCTAssertNil(TransferCancellation.current, "whileCurrent leaves the thread as it found it")

        let tip = try repository.fetchFromLocalRepository(at: source.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
        XCTAssertEqual(tip?.hex, try gitOK(["rev-parse", "HEAD"], in: source))
    }
}
