@testable import ConcordTrust
import Foundation
import XCTest

final class SignatureTests: XCTestCase {
    let message = Array(Vector.message.utf8)

    // MARK: Fixed vectors (no ssh-keygen needed)

    func testVectorVerifies() throws {
        let signer = try SSHSignature.verify(Vector.signature, message: message)
        XCTAssertEqual(signer, try SSHPublicKey(line: Vector.publicLine))
    }

    func testSHA256VectorVerifies() throws {
        let signer = try SSHSignature.verify(Vector.signatureSHA256, message: message)
        XCTAssertEqual(signer, try SSHPublicKey(line: Vector.publicLine))
    }

    func testSignMatchesVectorByteForByte() throws {
        #if canImport(CryptoKit)
        throw XCTSkip("CryptoKit randomizes Ed25519 signatures, so they differ from ssh-keygen's")
        #else
        let key = try SigningKey(seed: Vector.seed)
        XCTAssertEqual(SSHSignature.sign(message, with: key), Vector.signature)
        #endif
    }

    func testArmorShape() {
        let armored = SSHSignature.sign(message, with: .generate())
        XCTAssertTrue(armored.hasPrefix("-----BEGIN SSH SIGNATURE-----\n"))
        XCTAssertTrue(armored.hasSuffix("\n-----END SSH SIGNATURE-----\n"), "ends with a newline like ssh-keygen")
        XCTAssertTrue(armored.split(separator: "\n").allSatisfy { $0.count <= 70 })
    }

    func testToleratesGitHeaderIndentationAndCRLF() throws {
        let lines = Vector.signature.split(separator: "\n")
        let indented = lines[0] + "\n" + lines.dropFirst().map { " " + $0 }.joined(separator: "\n")
        XCTAssertNoThrow(try SSHSignature.verify(String(indented), message: message))
        let crlf = Vector.signature.replacingOccurrences(of: "\n", with: "\r\n")
        XCTAssertNoThrow(try SSHSignature.verify(crlf, message: message))
        let noFinalNewline = String(Vector.signature.dropLast())
        XCTAssertNoThrow(try SSHSignature.verify(noFinalNewline, message: message))
    }

    // MARK: Negative

    func testTamperedMessageFails() {
        var tampered = message
        tampered[0] ^= 0x20
        XCTAssertEqual(trustError { try SSHSignature.verify(Vector.signature, message: tampered) }, .signatureMismatch)
    }

    func testTamperedSignatureFails() throws {
        var blob = try Armor.unwrap(Vector.signature, label: "SSH SIGNATURE") { .malformedSignatureArmor($0) }
        blob[blob.count - 1] ^= 0x01
        let armored = SSHSignature.armor(blob)
        XCTAssertEqual(trustError { try SSHSignature.verify(armored, message: self.message) }, .signatureMismatch)
    }

    func testWrongNamespaceFails() {
        XCTAssertEqual(
            trustError { try SSHSignature.verify(Vector.signature, message: message, namespace: "file") },
            .namespaceMismatch(expected: "file", found: "git"))
        let fileSignature = SSHSignature.sign(message, with: .generate(), namespace: "file")
        XCTAssertEqual(
            trustError { try SSHSignature.verify(fileSignature, message: message) },
            .namespaceMismatch(expected: "git", found: "file"))
    }

    func testTruncatedArmorFails() throws {
        let half = String(Vector.signature.prefix(Vector.signature.count / 2))
        XCTAssertEqual(
            trustError { try SSHSignature.verify(half, message: message) },
            .malformedSignatureArmor("no '-----END SSH SIGNATURE-----' line; the text is truncated"))
        XCTAssertEqual(
            trustError { try SSHSignature.verify("", message: message) },
            .malformedSignatureArmor("no '-----BEGIN SSH SIGNATURE-----' line"))

        // Drop a base64 line but keep the END line: the body no longer decodes.
        var lines = Vector.signature.split(separator: "\n")
        lines.remove(at: 1)
        let shortened = lines.joined(separator: "\n")
        XCTAssertEqual(
            trustError { try SSHSignature.verify(shortened, message: message) },
            .malformedSignatureArmor("invalid base64 body"))

        // A blob cut short inside valid armor.
        let blob = try Armor.unwrap(Vector.signature, label: "SSH SIGNATURE") { .malformedSignatureArmor($0) }
        let cut = SSHSignature.armor(Array(blob.dropLast(10)))
        XCTAssertEqual(
            trustError { try SSHSignature.verify(cut, message: self.message) },
            .malformedSignature("truncated signature blob"))
    }

    func testRejectsUnsupportedFields() throws {
        func blob(version: UInt32 = 1, hash: String = "sha512", type: String = "ssh-ed25519") throws -> String {
            var inner = SSHWriter()
            inner.string(type)
            inner.string([UInt8](repeating: 0, count: 64))
            var writer = SSHWriter()
            writer.raw(Array("SSHSIG".utf8))
            writer.uint32(version)
            writer.string(try SSHPublicKey(line: Vector.publicLine).wireBlob)
            writer.string("git")
            writer.string("")
            writer.string(hash)
            writer.string(inner.bytes)
            return SSHSignature.armor(writer.bytes)
        }
        XCTAssertEqual(trustError { try SSHSignature.verify(try blob(version: 2), message: message) },
                       .unsupportedSignatureVersion(2))
        XCTAssertEqual(trustError { try SSHSignature.verify(try blob(hash: "sha1"), message: message) },
                       .unsupportedHashAlgorithm("sha1"))
        XCTAssertEqual(trustError { try SSHSignature.verify(try blob(type: "rsa-sha2-512"), message: message) },
                       .unsupportedSignatureType("rsa-sha2-512"))
        XCTAssertEqual(trustError { try SSHSignature.verify(try blob(), message: message) }, .signatureMismatch)
        let notSSHSIG = SSHSignature.armor(Array("NOTSIG-and-more".utf8))
        XCTAssertEqual(trustError { try SSHSignature.verify(notSSHSIG, message: message) },
                       .malformedSignature("missing 'SSHSIG' magic"))
    }

    // MARK: Interop with ssh-keygen

    func testOurSignatureVerifiesWithSSHKeygen() throws {
        let dir = try makeTempDirectory()
        let key = SigningKey.generate()
        let signers = dir.appendingPathComponent("allowed_signers")
        let other = SigningKey.generate().publicKey
        try write(AllowedSigners.render([(principal: "alice", key: key.publicKey), (principal: "bob", key: other)]),
                  to: signers, mode: 0o644)
        let signature = dir.appendingPathComponent("message.sig")
        try write(SSHSignature.sign(message, with: key), to: signature, mode: 0o644)

        let good = try SSHKeygen.run(
            ["-Y", "verify", "-f", signers.path, "-I", "alice", "-n", "git", "-s", signature.path], stdin: message)
        XCTAssertEqual(good.status, 0, good.stdout + good.stderr)
        XCTAssertTrue(good.stdout.contains("Good \"git\" signature for alice"), good.stdout)

        let wrongPrincipal = try SSHKeygen.run(
            ["-Y", "verify", "-f", signers.path, "-I", "bob", "-n", "git", "-s", signature.path], stdin: message)
        XCTAssertNotEqual(wrongPrincipal.status, 0)
        let tampered = try SSHKeygen.run(
            ["-Y", "verify", "-f", signers.path, "-I", "alice", "-n", "git", "-s", signature.path],
            stdin: message + [0x0a])
        XCTAssertNotEqual(tampered.status, 0)
    }

    func testSSHKeygenSignatureVerifiesWithOurs() throws {
        let dir = try makeTempDirectory()
        let keyFile = dir.appendingPathComponent("key")
        let generated = try SSHKeygen.run(["-q", "-t", "ed25519", "-N", "", "-C", "c", "-f", keyFile.path])
        XCTAssertEqual(generated.status, 0, generated.stderr)
        let messageFile = dir.appendingPathComponent("message")
        try Data(message).write(to: messageFile)
        let signed = try SSHKeygen.run(["-Y", "sign", "-f", keyFile.path, "-n", "git", messageFile.path])
        XCTAssertEqual(signed.status, 0, signed.stderr)
        let armored = try String(contentsOf: dir.appendingPathComponent("message.sig"), encoding: .utf8)
        let publicLine = try String(contentsOf: dir.appendingPathComponent("key.pub"), encoding: .utf8)
        XCTAssertEqual(try SSHSignature.verify(armored, message: message), try SSHPublicKey(line: publicLine))
    }

    func testSignatureIsByteIdenticalToSSHKeygen() throws {
        #if canImport(CryptoKit)
        throw XCTSkip("CryptoKit randomizes Ed25519 signatures, so they differ from ssh-keygen's")
        #else
        let dir = try makeTempDirectory()
        let key = SigningKey.generate()
        let keyFile = dir.appendingPathComponent("key")
        try write(key.openSSHPrivateKeyFile(comment: "c"), to: keyFile)
        for (index, text) in ["", "x", Vector.message, String(repeating: "long line\n", count: 500)].enumerated() {
            let bytes = Array(text.utf8)
            let messageFile = dir.appendingPathComponent("message\(index)")
            try Data(bytes).write(to: messageFile)
            let signed = try SSHKeygen.run(["-Y", "sign", "-f", keyFile.path, "-n", "git", messageFile.path])
            XCTAssertEqual(signed.status, 0, signed.stderr)
            let theirs = try Data(contentsOf: dir.appendingPathComponent("message\(index).sig"))
            XCTAssertEqual(Array(theirs), Array(SSHSignature.sign(bytes, with: key).utf8))
        }
        #endif
    }
}
