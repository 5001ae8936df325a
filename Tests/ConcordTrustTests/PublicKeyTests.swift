@testable import ConcordTrust
import Foundation
import XCTest

final class PublicKeyTests: XCTestCase {
    func testVectorLineRoundTrips() throws {
        let key = try SSHPublicKey(line: Vector.publicLine)
        XCTAssertEqual(key.line(comment: Vector.comment), Vector.publicLine)
        XCTAssertEqual(key.line(comment: nil), "ssh-ed25519 " + key.base64)
        XCTAssertEqual(key.wireBlob.count, 51)
        XCTAssertEqual(try SSHPublicKey(raw: key.raw), key)
        XCTAssertEqual(key, try SigningKey(seed: Vector.seed).publicKey)
    }

    func testVectorFingerprint() throws {
        XCTAssertEqual(try SSHPublicKey(line: Vector.publicLine).fingerprint, Vector.fingerprint)
    }

    func testLineToleratesExtraBlanksAndNoComment() throws {
        let key = try SSHPublicKey(line: Vector.publicLine)
        XCTAssertEqual(try SSHPublicKey(line: "  ssh-ed25519\t\(key.base64)  \r\n"), key)
    }

    func testFingerprintMatchesSSHKeygen() throws {
        let dir = try makeTempDirectory()
        let key = SigningKey.generate().publicKey
        let file = dir.appendingPathComponent("k.pub")
        try write(key.line(comment: "someone") + "\n", to: file, mode: 0o644)
        let output = try SSHKeygen.run(["-l", "-f", file.path])
        XCTAssertEqual(output.status, 0, output.stderr)
        let fields = output.stdout.split(separator: " ")
        XCTAssertEqual(fields.count, 4, output.stdout)
        XCTAssertEqual(fields.dropFirst().first.map(String.init), key.fingerprint)
    }

    func testRejectsOtherKeyTypes() {
        let rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQC7 user@host"
        XCTAssertEqual(trustError { try SSHPublicKey(line: rsa) }, .unsupportedKeyType("ssh-rsa"))
        let ecdsa = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY= x"
        XCTAssertEqual(trustError { try SSHPublicKey(line: ecdsa) }, .unsupportedKeyType("ecdsa-sha2-nistp256"))
        XCTAssertTrue(TrustError.unsupportedKeyType("ssh-rsa").errorDescription?.contains("ssh-ed25519") ?? false)

        // An ssh-ed25519 label in front of a blob of another type.
        var blob = SSHWriter()
        blob.string("ssh-rsa")
        blob.string([UInt8](repeating: 1, count: 32))
        let line = "ssh-ed25519 " + Data(blob.bytes).base64EncodedString()
        XCTAssertEqual(trustError { try SSHPublicKey(line: line) }, .unsupportedKeyType("ssh-rsa"))
    }

    func testRejectsMalformedLines() {
        XCTAssertEqual(trustError { try SSHPublicKey(line: "") }, .malformedPublicKey("empty line"))
        XCTAssertEqual(
            trustError { try SSHPublicKey(line: "ssh-ed25519") }, .malformedPublicKey("no base64 key after 'ssh-ed25519'"))
        XCTAssertEqual(trustError { try SSHPublicKey(line: "ssh-ed25519 !!!") }, .malformedPublicKey("invalid base64"))
        let truncated = "ssh-ed25519 " + Data(Array((try? SSHPublicKey(line: Vector.publicLine))?.wireBlob.prefix(40) ?? []))
            .base64EncodedString()
        XCTAssertEqual(trustError { try SSHPublicKey(line: truncated) }, .malformedPublicKey("truncated key blob"))
    }

    func testRejectsWrongRawLength() {
        XCTAssertEqual(trustError { try SSHPublicKey(raw: [1, 2, 3]) }, .invalidPublicKeyLength(3))
    }

    func testAllowedSignersRenderIsSortedWithNamespaces() throws {
        let a = try SSHPublicKey(line: Vector.publicLine)
        let b = SigningKey.generate().publicKey
        let text = AllowedSigners.render([(principal: "zoe", key: b), (principal: "alice", key: a)])
        XCTAssertEqual(
            text,
            "alice namespaces=\"git\" ssh-ed25519 \(a.base64)\n"
                + "zoe namespaces=\"git\" ssh-ed25519 \(b.base64)\n")
        XCTAssertEqual(AllowedSigners.render([]), "")
    }
}
