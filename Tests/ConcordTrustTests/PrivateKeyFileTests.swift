@testable import ConcordTrust
import Foundation
import XCTest

final class PrivateKeyFileTests: XCTestCase {
    func testReadsVectorWrittenBySSHKeygen() throws {
        let (key, comment) = try SigningKey.parseOpenSSHPrivateKeyFile(Vector.privateKeyFile)
        XCTAssertEqual(comment, Vector.comment)
        XCTAssertEqual(key.seed, Vector.seed)
        XCTAssertEqual(key.publicKey, try SSHPublicKey(line: Vector.publicLine))
    }

    func testWritesSSHKeygenBytesGivenTheSameCheckInts() throws {
        let key = try SigningKey(seed: Vector.seed)
        XCTAssertEqual(key.openSSHPrivateKeyFile(comment: Vector.comment, check: Vector.checkInt), Vector.privateKeyFile)
    }

    func testFileShapeAndRandomCheckInts() throws {
        let key = SigningKey.generate()
        let first = key.openSSHPrivateKeyFile(comment: "a@b")
        XCTAssertNotEqual(first, key.openSSHPrivateKeyFile(comment: "a@b"), "check integers must be random")
        XCTAssertTrue(first.hasPrefix("-----BEGIN OPENSSH PRIVATE KEY-----\n"))
        XCTAssertTrue(first.hasSuffix("\n-----END OPENSSH PRIVATE KEY-----\n"))
        XCTAssertTrue(first.split(separator: "\n").allSatisfy { $0.count <= 70 })
        let (parsed, comment) = try SigningKey.parseOpenSSHPrivateKeyFile(first)
        XCTAssertEqual(parsed.publicKey, key.publicKey)
        XCTAssertEqual(comment, "a@b")
    }

    func testSSHKeygenReadsOurFile() throws {
        let dir = try makeTempDirectory()
        let key = SigningKey.generate()
        let file = dir.appendingPathComponent("id_ed25519")
        try write(key.openSSHPrivateKeyFile(comment: "alice@laptop"), to: file)
        let output = try SSHKeygen.run(["-y", "-f", file.path])
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(output.stdout, key.publicKey.line(comment: "alice@laptop") + "\n")
        // Comments of every length exercise every padding length.
        for length in 0..<8 {
            let comment = String(repeating: "c", count: length)
            try write(key.openSSHPrivateKeyFile(comment: comment), to: file)
            let out = try SSHKeygen.run(["-y", "-f", file.path])
            XCTAssertEqual(out.status, 0, out.stderr)
            XCTAssertEqual(out.stdout, key.publicKey.line(comment: comment) + "\n")
        }
    }

    func testReadsKeyGeneratedBySSHKeygen() throws {
        let (dir, text) = try keygenPrivateKey(passphrase: "")
        let (key, comment) = try SigningKey.parseOpenSSHPrivateKeyFile(text)
        let publicLine = try String(contentsOf: dir.appendingPathComponent("key.pub"), encoding: .utf8)
        XCTAssertEqual(key.publicKey, try SSHPublicKey(line: publicLine))
        XCTAssertEqual(key.publicKey.line(comment: "c") + "\n", publicLine)
        XCTAssertEqual(comment, "c")
        XCTAssertEqual(try SigningKey(openSSHPrivateKeyFile: text).publicKey, key.publicKey)
    }

    func testRefusesPassphraseProtectedKey() throws {
        let (_, text) = try keygenPrivateKey(passphrase: "secret")
        let error = trustError { try SigningKey(openSSHPrivateKeyFile: text) }
        XCTAssertEqual(error, .passphraseProtectedKey)
        XCTAssertTrue(error?.errorDescription?.contains("passphrase-protected") ?? false)
    }

    func testRefusesCorruptCheckIntsAndMismatchedPublicKey() throws {
        let bytes = try Armor.unwrap(Vector.privateKeyFile, label: "OPENSSH PRIVATE KEY") { .malformedPrivateKey($0) }
        // Offsets: magic 15, "none" 8, "none" 8, "" 4, count 4, public blob 4 + 51, section length 4.
        let section = 15 + 8 + 8 + 4 + 4 + 55 + 4
        var badCheck = bytes
        badCheck[section] ^= 0xff
        XCTAssertEqual(
            trustError { try SigningKey(openSSHPrivateKeyFile: Armor.wrap(badCheck, label: "OPENSSH PRIVATE KEY")) },
            .privateKeyCheckMismatch)

        var badPublic = bytes
        badPublic[section - 5] ^= 0x01  // last byte of the outer public key
        XCTAssertEqual(
            trustError { try SigningKey(openSSHPrivateKeyFile: Armor.wrap(badPublic, label: "OPENSSH PRIVATE KEY")) },
            .privateKeyPublicMismatch)

        var badPair = bytes
        badPair[bytes.count - 7 - 18 - 1] ^= 0x01  // last byte of seed ‖ public (7 padding, 18 comment bytes follow)
        XCTAssertEqual(
            trustError { try SigningKey(openSSHPrivateKeyFile: Armor.wrap(badPair, label: "OPENSSH PRIVATE KEY")) },
            .privateKeyPublicMismatch)
    }

    func testRefusesMalformedFiles() {
        XCTAssertEqual(
            trustError { try SigningKey(openSSHPrivateKeyFile: "hello") },
            .malformedPrivateKey("no '-----BEGIN OPENSSH PRIVATE KEY-----' line"))
        let truncated = String(Vector.privateKeyFile.prefix(120))
        XCTAssertEqual(
            trustError { try SigningKey(openSSHPrivateKeyFile: truncated) },
            .malformedPrivateKey("no '-----END OPENSSH PRIVATE KEY-----' line; the text is truncated"))
        let lines = Vector.privateKeyFile.split(separator: "\n")
        let missingLine = ([lines[0]] + lines[2...]).joined(separator: "\n")
        if case .malformedPrivateKey? = trustError({ try SigningKey(openSSHPrivateKeyFile: missingLine) }) {
        } else {
            XCTFail("a file missing a line must be malformed")
        }
    }

    func testRejectsWrongSeedLength() {
        XCTAssertEqual(trustError { try SigningKey(seed: [1, 2]) }, .invalidSeedLength(2))
    }

    /// A new ed25519 key pair made by ssh-keygen (comment `c`) in a temp directory, as `key` and
    /// `key.pub`: the directory and the private key file's text.
    private func keygenPrivateKey(passphrase: String) throws -> (directory: URL, text: String) {
        let directory = try makeTempDirectory()
        let file = directory.appendingPathComponent("key")
        let output = try SSHKeygen.run(["-q", "-t", "ed25519", "-N", passphrase, "-C", "c", "-f", file.path])
        XCTAssertEqual(output.status, 0, output.stderr)
        return (directory, try String(contentsOf: file, encoding: .utf8))
    }
}
