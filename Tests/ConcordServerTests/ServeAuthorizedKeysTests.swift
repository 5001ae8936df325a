@testable import ConcordEngine
@testable import ConcordKit
@testable import ConcordServer
import ConcordTestSupport
import Foundation
import XCTest

/// The authorized_keys file mode of a concord server (`concord server init --authorized-keys FILE`):
/// concord's block between markers, every other line kept, a key already on a foreign line refused,
/// never a partial file; and the whole thing through a real sshd, revocation included.
final class ServeAuthorizedKeysTests: ConcordServeTestCase {
    func member(_ name: String, _ status: Member.Status, _ key: SSHPublicKey, expiresAt: String? = nil) -> Member {
        Member(name: name, role: .editor, status: status, keys: [Member.Key(device: "d", publicKey: key)], addedBy: "alice",
               addedAt: "2026-01-01T10:00:00.000Z", expiresAt: expiresAt)
    }

    func testTheBlockKeepsForeignLinesRefusesTheirKeysAndIsNeverPartial() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let file = sandbox.appendingPathComponent("authorized_keys")
        let foreignKey = SigningKey.generate().publicKey
        let head = "# the operator's own lines\n\(foreignKey.line(comment: "operator@desk"))\n"
        let tail = "no-pty \(SigningKey.generate().publicKey.line(comment: "backup@nas"))\n"
        try Data((head + tail).utf8).write(to: file)
        let root = sandbox.appendingPathComponent("server")
        try concordOK(["server", "init", "--root", root.path, "--admin-key", alice.publicKeyLine, "--authorized-keys", file.path], as: nil)
        let server = try ConcordServer.open(root: root)
        let adminLine = server.forcedCommandLine(for: try SSHPublicKey(line: alice.publicKeyLine))
        XCTAssertEqual(try String(contentsOf: file, encoding: .utf8),
                       head + tail + AuthorizedKeysFile.start + "\n" + adminLine + "\n" + AuthorizedKeysFile.end + "\n")

        let bob = SigningKey.generate().publicKey, carol = SigningKey.generate().publicKey, dave = SigningKey.generate().publicKey
        let membership = Membership([member("bob", .active, bob), member("carol", .revoked, carol),
                                     member("dave", .invited, dave, expiresAt: "2999-01-01T00:00:00.000Z")])
        try server.keyIndex.update(profile: "kid", membership: membership)
        try server.keyIndex.update(profile: "kid", membership: membership)
        var text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertTrue(text.hasPrefix(head + tail + AuthorizedKeysFile.start + "\n"), text)
        XCTAssertEqual(text.components(separatedBy: AuthorizedKeysFile.start).count, 2, "one block: \(text)")
        // Revoked Carol's key too: sshd lets it in, and concord serve decides what it may still read.
        for key in [bob, dave, carol, try SSHPublicKey(line: alice.publicKeyLine)] {
            XCTAssertTrue(text.contains(server.forcedCommandLine(for: key)), "\(key.fingerprint) in \(text)")
        }
        XCTAssertEqual(text.components(separatedBy: "\n").filter { $0.hasPrefix("command=") }.count, 4)

        // The block stays where the operator moved it; lines after it stay after it.
        let moved = AuthorizedKeysFile.start + "\n" + AuthorizedKeysFile.end + "\n" + head + tail
        try Data(moved.utf8).write(to: file)
        try server.keyIndex.update(profile: "kid", membership: membership)
        text = try String(contentsOf: file, encoding: .utf8)
        XCTAssertTrue(text.hasPrefix(AuthorizedKeysFile.start + "\n"), text)
        XCTAssertTrue(text.hasSuffix(AuthorizedKeysFile.end + "\n" + head + tail), text)

        // A member's key already on a foreign line: refused, the file untouched.
        let duplicate = text + "restrict \(bob.line(comment: "bob@elsewhere"))\n"
        try Data(duplicate.utf8).write(to: file)
        let refusal = thrownError(ConcordError.self) { try server.keyIndex.update(profile: "kid", membership: membership) }
        XCTAssertNil(refusal.problem)
        XCTAssertTrue(refusal.error?.localizedDescription.contains("the key \(bob.fingerprint) is already in \(file.path) outside concord's block (line 10)") == true,
                      refusal.error?.localizedDescription ?? "")
        XCTAssertEqual(try String(contentsOf: file, encoding: .utf8), duplicate)
        // Broken markers: refused, untouched.
        let broken = head + AuthorizedKeysFile.start + "\n" + tail
        try Data(broken.utf8).write(to: file)
        XCTAssertThrowsError(try server.keyIndex.update(profile: "kid", membership: membership))
        XCTAssertEqual(try String(contentsOf: file, encoding: .utf8), broken)

        // Never a partial file: a reader racing 100 rewrites sees each whole, old or new.
        try Data((head + tail).utf8).write(to: file)
        let done = Atomic(false)
        let bobAlone = Membership([member("bob", .active, bob)])
        let writer = Thread {
            for index in 0..<100 {
                let members = index.isMultiple(of: 2) ? membership : bobAlone
                try? server.keyIndex.update(profile: "kid", membership: members)
            }
            done.set(true)
        }
        writer.start()
        var reads = 0
        while !done.get() {
            let seen = try String(contentsOf: file, encoding: .utf8)
            XCTAssertTrue(seen.hasPrefix(head + tail) && (seen == head + tail || seen.hasSuffix(AuthorizedKeysFile.end + "\n")),
                          "a partial file: \(seen)")
            reads += 1
        }
        XCTAssertGreaterThan(reads, 0)
        XCTAssertFalse(try FileManager.default.contentsOfDirectory(atPath: sandbox.path).contains { $0.contains("concord-tmp") },
                       "no file written aside is left")
    }

    func testAnAuthorizedKeysFileServerLetsMembersInAndRefusesARevokedKeysPush() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let bob = try makeDevice("bob", device: "phone")
        let host = try makeHost(admin: alice, authorizedKeysFile: true)
        let aliceProfile = try publish("kid", on: host, members: [(bob, "editor")])
        let (cloned, bobProfile) = try cloneThroughServer("kid", as: bob, host: host)
        XCTAssertEqual(cloned.status, 0, cloned.summary)
        try concordOK(["put", "vocabulary/ball", "--json", #"{"label":"ball"}"#], as: bob, in: bobProfile)
        XCTAssertEqual(try syncJSON(bob, in: bobProfile).sent, 1)

        // The revoked key still logs in (the rewritten block keeps it), and concord serve refuses its push.
        let (after, seconds) = try revokeAndConnect("bob", as: alice, in: aliceProfile, device: bob, host: host)
        XCTAssertEqual(after.status, 1, "concord serve refuses the push: \(after.summary)")
        XCTAssertTrue(after.stderr.contains("concord serve: access removed: alice revoked bob's access to \"kid\""), after.stderr)
        XCTAssertLessThanOrEqual(seconds, 3)
        print("authorized_keys mode: revoked key refused \(String(format: "%.3f", seconds)) s after the revocation's push returned")
    }
}

/// A flag shared by two threads of a test.
final class Atomic: @unchecked Sendable {
    private var value: Bool
    private let lock = NSLock()
    init(_ value: Bool) { self.value = value }
    func get() -> Bool { lock.lock(); defer { lock.unlock() }; return value }
    func set(_ new: Bool) { lock.lock(); value = new; lock.unlock() }
}
