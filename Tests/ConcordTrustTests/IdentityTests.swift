import ConcordTrust
import Foundation
import XCTest

final class IdentityTests: XCTestCase {
    func testCreateWritesFilesAndLoadReadsThem() throws {
        let home = try makeTempDirectory().appendingPathComponent("home")
        let identity = try Identity.create(member: "alice", device: "laptop", in: home)
        XCTAssertEqual(identity.privateKeyPath, home.appendingPathComponent("id_ed25519"))
        XCTAssertEqual(identity.publicKeyLine, identity.key.publicKey.line(comment: "alice@laptop"))

        XCTAssertEqual(
            try String(contentsOf: home.appendingPathComponent("identity.json"), encoding: .utf8),
            "{\n  \"device\": \"laptop\",\n  \"formatVersion\": 1,\n  \"member\": \"alice\"\n}\n")
        XCTAssertEqual(
            try String(contentsOf: home.appendingPathComponent("id_ed25519.pub"), encoding: .utf8),
            identity.publicKeyLine + "\n")
        XCTAssertEqual(try mode(of: home), 0o700)
        XCTAssertEqual(try mode(of: identity.privateKeyPath), 0o600)
        XCTAssertEqual(try mode(of: home.appendingPathComponent("id_ed25519.pub")), 0o600)
        XCTAssertEqual(try mode(of: home.appendingPathComponent("identity.json")), 0o600)
        XCTAssertEqual(
            try FileManager.default.contentsOfDirectory(atPath: home.path).sorted(),
            ["id_ed25519", "id_ed25519.pub", "identity.json"], "no temporary files left behind")

        let loaded = try Identity.load(from: home)
        XCTAssertEqual(loaded.member, "alice")
        XCTAssertEqual(loaded.device, "laptop")
        XCTAssertEqual(loaded.key.publicKey, identity.key.publicKey)
        XCTAssertEqual(loaded.publicKeyLine, identity.publicKeyLine)
    }

    func testSSHKeygenReadsTheIdentityKey() throws {
        let home = try makeTempDirectory()
        let identity = try Identity.create(member: "alice", device: "laptop", in: home)
        let output = try SSHKeygen.run(["-y", "-f", identity.privateKeyPath.path])
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(output.stdout, identity.publicKeyLine + "\n")
    }

    func testSignConvenienceVerifies() throws {
        let identity = try Identity.create(member: "bob", device: "phone", in: try makeTempDirectory())
        let message = Array("hello".utf8)
        XCTAssertEqual(try SSHSignature.verify(identity.sign(message), message: message), identity.key.publicKey)
    }

    func testCreateTwiceIsRefused() throws {
        let home = try makeTempDirectory()
        let first = try Identity.create(member: "alice", device: "laptop", in: home)
        let error = trustError { try Identity.create(member: "alice", device: "desktop", in: home) }
        XCTAssertEqual(error, .identityExists(home.appendingPathComponent("identity.json")))
        XCTAssertTrue(error?.errorDescription?.contains("already exists") ?? false)
        XCTAssertEqual(try Identity.load(from: home).key.publicKey, first.key.publicKey, "the key is untouched")
    }

    func testLoadWithoutIdentity() throws {
        let home = try makeTempDirectory()
        let error = trustError { try Identity.load(from: home) }
        XCTAssertEqual(error, .noIdentity(home))
        XCTAssertEqual(
            error?.errorDescription,
            "no identity in \(home.path): run 'concord identity new --name NAME --device DEVICE' first")
    }

    func testLooseKeyFileModeIsRefused() throws {
        let home = try makeTempDirectory()
        let identity = try Identity.create(member: "alice", device: "laptop", in: home)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: identity.privateKeyPath.path)
        let error = trustError { try Identity.load(from: home) }
        XCTAssertEqual(error, .insecureKeyFileMode(identity.privateKeyPath, mode: 0o644))
        XCTAssertTrue(error?.errorDescription?.contains("chmod 600") ?? false)
    }

    func testMissingKeyAndNewerFormat() throws {
        let home = try makeTempDirectory()
        let identity = try Identity.create(member: "alice", device: "laptop", in: home)
        let json = home.appendingPathComponent("identity.json")
        try write("{\"device\":\"laptop\",\"formatVersion\":2,\"member\":\"alice\"}\n", to: json, mode: 0o644)
        XCTAssertEqual(trustError { try Identity.load(from: home) }, .unsupportedIdentityFormat(json, version: 2))
        try write("not json", to: json, mode: 0o644)
        XCTAssertEqual(trustError { try Identity.load(from: home) }, .malformedIdentityFile(json, "not valid JSON"))
        try write("{\"device\":\"laptop\",\"formatVersion\":1,\"member\":\"alice\"}", to: json, mode: 0o644)
        try FileManager.default.removeItem(at: identity.privateKeyPath)
        XCTAssertEqual(trustError { try Identity.load(from: home) }, .missingPrivateKey(identity.privateKeyPath))
    }

    func testNameValidation() throws {
        let home = try makeTempDirectory()
        let tooLong = String(repeating: "a", count: 65)
        for bad in ["", ".hidden", "-flag", "a b", "a/b", "é", "a@b", "a,b", "a*", tooLong] {
            XCTAssertEqual(
                trustError { try Identity.create(member: bad, device: "laptop", in: home) },
                .invalidName(kind: "member", value: bad))
            XCTAssertEqual(
                trustError { try Identity.create(member: "alice", device: bad, in: home) },
                .invalidName(kind: "device", value: bad))
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: home.appendingPathComponent("identity.json").path))
        XCTAssertTrue(TrustError.invalidName(kind: "member", value: "a b").errorDescription?.contains("'a b'") ?? false)
        for good in ["alice", "A.b_c-9", "_x", String(repeating: "z", count: 64)] {
            XCTAssertNoThrow(try Identity.validateName(good, kind: "member"))
        }
    }
}
