@testable import ConcordGit
import Foundation
import XCTest

/// The ref advertisement `watch` reads from an ssh remote without libgit2 (`SSHRefAdvertisement`):
/// pkt-lines as git-upload-pack writes them, split anywhere by the network, and the host key types
/// asked for. The connection itself is exercised against a real sshd by ConcordSyncTests and ConcordServerTests.
final class SSHRefAdvertisementTests: XCTestCase {
    private let main = String(repeating: "1", count: 40)
    private let tag = String(repeating: "2", count: 40)
    private let peeled = String(repeating: "3", count: 40)

    /// One pkt-line: four hex digits (the length, themselves included), then `payload`.
    private func packet(_ payload: String) -> [UInt8] {
        Array(String(format: "%04x", payload.utf8.count + 4).utf8) + Array(payload.utf8)
    }

    private var advertisement: [UInt8] {
        packet("\(main) HEAD\0multi_ack thin-pack side-band-64k symref=HEAD:refs/heads/main agent=git/2.39.5\n")
            + packet("\(main) refs/heads/main\n") + packet("\(tag) refs/tags/v1\n") + packet("\(peeled) refs/tags/v1^{}\n")
            + Array("0000".utf8)
    }

    func testReadsEveryRefUpToTheFlushPacketInAnyChunking() throws {
        let bytes = advertisement
        for chunk in [1, 3, 7, 64, bytes.count] {
            var reader = SSHRefAdvertisement.PacketReader()
            var refs: [String: ObjectID]?
            var offset = 0
            while refs == nil {
                XCTAssertLessThan(offset, bytes.count, "no flush packet seen in chunks of \(chunk)")
                if offset >= bytes.count { break }
                try reader.append(bytes[offset..<min(offset + chunk, bytes.count)])
                offset += chunk
                refs = try reader.refs()
            }
            XCTAssertEqual(refs?["refs/heads/main"]?.hex, main, "chunks of \(chunk)")
            XCTAssertEqual(refs?["HEAD"]?.hex, main)
            XCTAssertEqual(refs?["refs/tags/v1"]?.hex, tag)
            XCTAssertEqual(refs?["refs/tags/v1^{}"]?.hex, peeled)
            XCTAssertEqual(refs?.count, 4)
        }
    }

    func testAnEmptyRepositoryAdvertisesNoRefs() throws {
        var reader = SSHRefAdvertisement.PacketReader()
        try reader.append(ArraySlice(packet("\(String(repeating: "0", count: 40)) capabilities^{}\0report-status delete-refs\n")
                                        + Array("0000".utf8)))
        XCTAssertEqual(try reader.refs(), [:])
    }

    func testIncompleteInputWaitsForMore() throws {
        var reader = SSHRefAdvertisement.PacketReader()
        try reader.append(ArraySlice(packet("\(main) refs/heads/main\n").dropLast(5)))
        XCTAssertNil(try reader.refs())
        XCTAssertFalse(reader.isEmpty)
    }

    func testAServerErrorAndMalformedInputAreErrors() {
        for bad in [packet("ERR access denied"), Array("zzzz".utf8), Array("0003".utf8), packet("not a ref line\n"),
                    packet("\(main.dropLast()) refs/heads/main\n")] {
            var reader = SSHRefAdvertisement.PacketReader()
            XCTAssertThrowsError(try { try reader.append(ArraySlice(bad + Array("0000".utf8))); _ = try reader.refs() }(),
                                 String(decoding: bad, as: UTF8.self))
        }
        var reader = SSHRefAdvertisement.PacketReader()
        XCTAssertThrowsError(try reader.append(ArraySlice(repeating: UInt8(ascii: "0"), count: SSHRefAdvertisement.byteLimit + 1)))
    }

    func testTheHostKeyTypesAskedForAreThoseOfTheTrustedLines() {
        let lines = [
            "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyOne comment",
            "@revoked [127.0.0.1]:2222 ssh-rsa AAAAB3NzaC1yc2E",
            "[127.0.0.1]:2222 ecdsa-sha2-nistp256 AAAAE2VjZHNh",
            "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyTwo",
            "garbage",
        ]
        XCTAssertEqual(SSHRefAdvertisement.hostKeyTypes(lines), ["ssh-ed25519", "ecdsa-sha2-nistp256"])
        XCTAssertEqual(SSHRefAdvertisement.hostKeyTypes([]), [])
    }
}
