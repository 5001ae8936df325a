#if canImport(Glibc)
import Foundation
import Glibc
import Synchronization
import XCTest

@testable import ConcordGit

/// libgit2 1.5.1 with a process-wide limit on open pack files closes the least recently used pack
/// of any repository when a thread opens one more, racing with another thread reading that pack
/// through a repository of its own: reads failed ("failed to mmap ... Bad file descriptor") or
/// the heap was corrupted (glibc: "free(): corrupted unsorted chunks"), the suite's intermittent
/// crash. Concord sets no such limit (`Libgit2.openPackFiles`).
final class PackFileLimitTests: GitTestCase {
    /// Four threads, each reading blobs at random through repositories of its own over a copy of
    /// one repository of 120 packs (480 packs in all, past the 64 the limit was): every read
    /// returns the blob's bytes. With the limit back, this failed or crashed.
    func testFourThreadsReadManyPacksThroughRepositoriesOfTheirOwn() throws {
        XCTAssertEqual(Libgit2.packFileLimit, 0, "a pack-file limit is set")
        let (_, template) = try makeRepository("template")
        var blobs = [(id: ObjectID, bytes: [UInt8])]()
        var generator = SystemRandomNumberGenerator()
        for index in 0..<120 {
            let bytes = (0..<4_096).map { _ in UInt8.random(in: 0...255, using: &generator) } + Array("blob \(index)".utf8)
            let id = try gitOK(["hash-object", "-w", "--stdin"], in: template, input: Data(bytes))
            _ = try gitOK(["pack-objects", "-q", ".git/objects/pack/pack"], in: template, input: Data((id + "\n").utf8))
            blobs.append((try XCTUnwrap(ObjectID(hex: id)), bytes))
        }
        _ = try gitOK(["prune-packed"], in: template)
        let packs = try FileManager.default.contentsOfDirectory(atPath: template.appendingPathComponent(".git/objects/pack").path)
        XCTAssertEqual(packs.filter { $0.hasSuffix(".pack") }.count, 120)
        let copies = try (0..<4).map { copy -> URL in
            let url = sandbox.appendingPathComponent("copy\(copy)")
            try FileManager.default.copyItem(at: template, to: url)
            return url
        }

        let failures = Mutex<[String]>([])
        let expected = blobs
        DispatchQueue.concurrentPerform(iterations: copies.count) { thread in
            var random = SystemRandomNumberGenerator()
            do {
                for _ in 0..<150 {
                    let repository = try Repository.open(copies[thread].path)
                    for _ in 0..<100 {
                        let blob = expected.randomElement(using: &random)!
                        guard try repository.blob(blob.id) == blob.bytes else {
                            return failures.withLock { $0.append("thread \(thread): blob \(blob.id) read other bytes") }
                        }
                    }
                }
            } catch {
                failures.withLock { $0.append("thread \(thread): \(error)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
    }

    /// The soft limit on descriptors is raised to the hard one (at most 65,536) when libgit2 starts.
    func testTheDescriptorLimitIsRaisedToTheHardLimit() {
        XCTAssertEqual(Libgit2.packFileLimit, 0)
        var limit = rlimit()
        XCTAssertEqual(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit), 0)
        XCTAssertGreaterThanOrEqual(limit.rlim_cur, min(limit.rlim_max, 65_536))
    }
}
#endif
