import ConcordGitFormats
import ConcordTestSupport
import Crypto
import Foundation
import XCTest

@testable import ConcordGit

/// Packs that arrive from a server — an ssh fetch's and a `concord-wait … pack` answer's — pass
/// the bounds a path remote's packs pass (`ArrivingPack`, through `PackWriteBounds`) before
/// libgit2's indexer rebuilds anything: over ssh, a ~3 KB pack of deltas rebuilding 1 GiB made a
/// device take 1.3 GB. Each hostile pack is refused with one line naming the bound, nothing is
/// written into the repository, and the process did not grow by what the deltas declare.
final class ArrivingPackTests: GitTestCase {
    private static let tip = String(repeating: "ab", count: 20)

    /// A 64 KiB blob, a delta on it rebuilding 100 MiB (1,600 one-byte instructions, each copying
    /// the whole blob), and a small delta on that: libgit2 rebuilds the 100 MiB to read the last one.
    private func bombPack() throws -> [UInt8] {
        let base = [UInt8](repeating: 0x61, count: 1 << 16)
        let baseID = ObjectPack.id(of: base, type: .blob)
        // The middle object's id, hashed a copy of the blob at a time (holding it would grow this process).
        var hasher = Insecure.SHA1()
        hasher.update(data: Array("blob \(100 << 20)\0".utf8))
        for _ in 0..<1_600 { hasher.update(data: base) }
        let middle = hasher.finalize().withUnsafeBytes { ObjectID(raw: $0) }, last = ObjectPack.id(of: Array("last".utf8), type: .blob)
        // A copy instruction with no offset or size bytes copies 0x10000 bytes from offset 0.
        let copies = HandPack.varint(base.count) + HandPack.varint(100 << 20) + [UInt8](repeating: 0x80, count: 1_600)
        let directory = sandbox.appendingPathComponent("bomb")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try HandPack.write([(baseID, .whole(type: 3, bytes: base)), (middle, .refDelta(base: baseID, data: copies)),
                            (last, .refDelta(base: middle, data: HandPack.delta(baseSize: 100 << 20, resultSize: 4, inserting: Array("last".utf8))))],
                           name: String(repeating: "e", count: 40), into: directory)
        // The pack's own checksum, as the indexer checks it (HandPack's satisfies only a reader).
        let written = Array(try Data(contentsOf: directory.appendingPathComponent("pack-\(String(repeating: "e", count: 40)).pack")))
        let content = Array(written.dropLast(20))
        return content + Array(Insecure.SHA1.hash(data: content))
    }

    /// A real sshd whose forced command answers any fetch with `tip` as main and the bytes of `pack`
    /// (the device's wants end with "done": a repository with no commits has nothing to offer); the
    /// URL to fetch and the options of a key it lets in.
    private func servingOverSSH(_ pack: URL, tip: String) throws -> (url: String, options: TransportOptions) {
        let advertised = sandbox.appendingPathComponent("answer.refs")
        try Data(packet("\(tip) refs/heads/main\0ofs-delta\n") + Array("0000".utf8)).write(to: advertised)
        let script = "cat '\(advertised.path)'\nsed -n '/done/q' >/dev/null\nprintf '0008NAK\\n'\ncat '\(pack.path)'\n"
        let (server, key) = try sshServer(forcedCommand: script)
        let options = TransportOptions(sshPrivateKey: key.privateKey.path, trustHostKey: { _ in true }, stallTimeout: 30)
        return (server.url(for: sandbox.appendingPathComponent("remote.git")), options)
    }

    private static let refusal = "rebuilding 104857600 bytes, over the 67108864-byte limit"

    func testAPackSentWithTheWaitIsRefusedBeforeAnyDeltaIsRebuilt() throws {
        let (repository, url) = try makeRepository()
        let before = try packFiles(url)
        let grown = try peakGrowth {
            XCTAssertThrowsError(try repository.indexPack(try bombPack())) { error in
                let message = (error as? GitError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(Self.refusal), message)
                XCTAssertFalse(message.contains("\n"), message)
            }
        }
        XCTAssertEqual(try packFiles(url), before, "a refused pack leaves nothing")
        XCTAssertLessThan(grown, 64 << 20, "the 100 MiB object was rebuilt")
    }

    /// A server whose git-upload-pack (the key's forced command) advertises a main, waits for
    /// the device's "done" and sends the bomb: the fetch is refused with one line, before the
    /// indexer resolves it.
    func testAnSSHFetchOfAPackOfDeltaBombsIsRefusedBeforeAnyDeltaIsRebuilt() throws {
        let pack = sandbox.appendingPathComponent("answer.pack")
        try Data(try bombPack()).write(to: pack)
        let (remote, options) = try servingOverSSH(pack, tip: Self.tip)
        let (repository, url) = try makeRepository("device")
        let grown = try peakGrowth {
            XCTAssertThrowsError(try repository.fetch(url: remote, refspecs: ["+refs/heads/main:refs/remotes/origin/main"], options: options)) { error in
                let message = (error as? GitError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(Self.refusal), message)
                XCTAssertFalse(message.contains("\n"), message)
            }
        }
        XCTAssertEqual(try packFiles(url) + packFiles(url, suffix: ".idx"), [], "a refused pack leaves nothing")
        XCTAssertNil(try repository.resolveReference("refs/remotes/origin/main"))
        XCTAssertLessThan(grown, 64 << 20, "the 100 MiB object was rebuilt")
    }

    /// A sound pack through the same server is fetched: the refusal above is the bomb's doing.
    func testAnSSHFetchOfASoundPackStillWorks() throws {
        let (_, sourceURL) = try makeRepository("source")
        try writeWithGit(["a.json": "{}\n"], in: sourceURL)
        let tip = try gitOK(["rev-parse", "HEAD"], in: sourceURL).trimmingCharacters(in: .whitespacesAndNewlines)
        let pack = sandbox.appendingPathComponent("sound.pack")
        try ProcessRunner.runOK("/bin/sh", ["-c", "echo HEAD | git pack-objects --revs --stdout -q > " + ProcessRunner.shellQuoted(pack.path)],
                                environment: isolatedEnvironment(home: sandbox), in: sourceURL)
        let (remote, options) = try servingOverSSH(pack, tip: tip)
        let (repository, _) = try makeRepository("device")
        try repository.fetch(url: remote, refspecs: ["+refs/heads/main:refs/remotes/origin/main"], options: options)
        XCTAssertEqual(try repository.resolveReference("refs/remotes/origin/main")?.hex, tip)
    }

    // MARK: The fixture

    private func packet(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        return Array(String(format: "%04x", payload.count + 4).utf8) + payload
    }

    /// How much this process's peak resident size rose over its resident size while `body` ran:
    /// the peak is reset first (`/proc/self/clear_refs`), so an earlier test's peak does not hide it.
    private func peakGrowth(_ body: () throws -> Void) throws -> Int {
        func kilobytes(_ field: String) throws -> Int {
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            let line = try XCTUnwrap(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
            return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        }
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let resident = try kilobytes("VmRSS")
        try body()
        return (try kilobytes("VmHWM") - resident) * 1024
    }
}
