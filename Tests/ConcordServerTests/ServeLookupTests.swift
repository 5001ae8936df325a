@testable import ConcordEngine
@testable import ConcordKit
@testable import ConcordServer
import ConcordTestSupport
import Foundation
import XCTest

/// `concord-lookup ROOT USER KEY`, sshd's AuthorizedKeysCommand for a concord server, against
/// `concord serve --root ROOT --lookup USER KEY`: both are run as processes (as sshd runs them) and
/// must print the same thing for every kind of key, and fail alike, in one line, on an index they
/// cannot read.
final class ServeLookupTests: ConcordServeTestCase {
    func member(_ name: String, _ status: Member.Status, _ key: SSHPublicKey, expiresAt: String? = nil,
                invitationKey: SSHPublicKey? = nil) -> Member {
        Member(name: name, role: .editor, status: status, keys: [Member.Key(device: "d", publicKey: key)], addedBy: "alice",
               addedAt: "2026-01-01T10:00:00.000Z", expiresAt: expiresAt, invitationKey: invitationKey)
    }

    /// `concord server init` in `<sandbox>/server` for user `git`, with `admin`'s key.
    func makeServer(admin: TestDevice) throws -> ConcordServer {
        let root = sandbox.appendingPathComponent("server")
        try concordOK(["server", "init", "--root", root.path, "--admin-key", admin.publicKeyLine, "--user", "git"], as: nil)
        return try ConcordServer.open(root: root)
    }

    /// Runs both lookups for `user` and `key`; fails the test unless they give the same stdout and
    /// exit status. Returns concord-lookup's run, then concord serve's.
    func lookups(_ server: ConcordServer, _ user: String, _ key: String,
                 file: StaticString = #filePath, line: UInt = #line) throws -> (lookup: RunResult, serve: RunResult) {
        let lookup = try ProcessRunner.run(try ConcordBinary.requiredLookup(), [server.root.path, user, key], environment: environment())
        let serve = try ProcessRunner.run(try ConcordBinary.required(), ["serve", "--root", server.root.path, "--lookup", user, key],
                                          environment: environment())
        XCTAssertEqual(lookup.stdout, serve.stdout, "the same line from both (\(user) \(key))", file: file, line: line)
        XCTAssertEqual(lookup.status, serve.status, "the same exit status: \(lookup.summary) / \(serve.summary)", file: file, line: line)
        return (lookup, serve)
    }

    func testConcordLookupAnswersAsConcordServeLookupForEveryKindOfKey() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let server = try makeServer(admin: alice)
        let admin = try SSHPublicKey(line: alice.publicKeyLine)
        let keys = (0..<6).map { _ in SigningKey.generate().publicKey }
        let (bob, carol, dave, erin, oneTime, stranger) = (keys[0], keys[1], keys[2], keys[3], keys[4], keys[5])
        try server.keyIndex.update(profile: "kid", membership: Membership([
            member("bob", .active, bob), member("carol", .revoked, carol),
            member("dave", .invited, dave, expiresAt: "2999-01-01T00:00:00.000Z", invitationKey: oneTime),
            member("erin", .invited, erin, expiresAt: "2001-01-01T00:00:00.000Z"),
        ]))
        let index = try String(contentsOf: server.root.appendingPathComponent("keys.index"), encoding: .utf8)
        XCTAssertTrue(index.hasPrefix("# concord key index 3: "), index)
        XCTAssertTrue(index.contains("\(carol.fingerprint) kid revoked - \(carol.base64)\n"), index)

        let cases: [(String, SSHPublicKey, Bool)] = [("the admin", admin, true), ("an active member", bob, true),
                                                     ("a revoked member", carol, true), ("a pending invitation", dave, true),
                                                     ("a link invitation's one-time key", oneTime, true),
                                                     ("an expired invitation", erin, false), ("a stranger", stranger, false)]
        for (who, key, admitted) in cases {
            let (lookup, serve) = try lookups(server, "git", key.base64)
            XCTAssertEqual(lookup.status, 0, "\(who): \(lookup.summary)")
            XCTAssertEqual(lookup.stdout, admitted ? server.forcedCommandLine(for: key) + "\n" : "", who)
            XCTAssertEqual(lookup.stderr + serve.stderr, "", who)
        }
        // The forced command names the key's fingerprint, read from the index (the lookup hashes nothing).
        XCTAssertTrue(try lookups(server, "git", bob.base64).lookup.stdout.contains("--key \(bob.fingerprint)\","))
        // Another account, or something that is no key: nothing, and no error.
        for (user, key) in [("root", bob.base64), ("git", "not a key"), ("git", ""), ("git", String(bob.base64.dropLast(4)))] {
            let (lookup, _) = try lookups(server, user, key)
            XCTAssertEqual(lookup.status, 0, lookup.summary)
            XCTAssertEqual(lookup.stdout, "", "\(user) \(key)")
        }
    }

    func testAMissingDamagedOrNewerIndexIsAOneLineError() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let server = try makeServer(admin: alice)
        let bob = SigningKey.generate().publicKey
        try server.keyIndex.update(profile: "kid", membership: Membership([member("bob", .active, bob)]))
        let path = server.root.appendingPathComponent("keys.index")
        let good = try String(contentsOf: path, encoding: .utf8)
        let newer = good.replacingOccurrences(of: "# concord key index 3:", with: "# concord key index 4:")
        let cases: [(String, String?, String)] = [
            ("missing", nil, "cannot read \(path.path): No such file or directory"),
            ("cut short", String(good.dropLast(10)), "is damaged: its last line is cut short"),
            ("no header", good.components(separatedBy: "\n").dropFirst().joined(separator: "\n"), "is not a concord key index"),
            ("no settings", good.components(separatedBy: "\n").filter { !$0.hasPrefix("# user:") }.joined(separator: "\n"),
             "is damaged: its header lacks the user"),
            ("a line of four fields", good.replacingOccurrences(of: " kid active - ", with: " kid active "), "does not have five fields"),
            ("newer", newer, "is key index version 4, newer than this concord understands (3): upgrade concord"),
            ("older", good.replacingOccurrences(of: "# concord key index 3:", with: "# concord key index 2:"), "version 2, written by an older concord"),
        ]
        for (what, text, message) in cases {
            if let text { try Data(text.utf8).write(to: path) } else { try FileManager.default.removeItem(at: path) }
            let (lookup, serve) = try lookups(server, "git", bob.base64)
            for (run, prefix) in [(lookup, "concord-lookup: "), (serve, "concord serve: ")] {
                XCTAssertEqual(run.status, 1, "\(what): \(run.summary)")
                XCTAssertEqual(run.stdout, "", what)
                XCTAssertTrue(run.stderr.hasPrefix(prefix) && run.stderr.contains(message), "\(what): \(run.stderr)")
                XCTAssertEqual(run.stderr.split(separator: "\n").count, 1, "\(what): one line: \(run.stderr)")
            }
        }
        // concord refuses to overwrite a newer index too (its post-receive would otherwise downgrade it).
        try Data(newer.utf8).write(to: path)
        XCTAssertThrowsError(try server.keyIndex.update(profile: "kid", membership: Membership([]))) { error in
            XCTAssertTrue(error.localizedDescription.contains("version 4, newer"), error.localizedDescription)
        }
        XCTAssertEqual(try String(contentsOf: path, encoding: .utf8), newer)
        // An older index's lines are kept and rewritten as the current version.
        try Data(good.replacingOccurrences(of: "# concord key index 3:", with: "# concord key index 2:").utf8).write(to: path)
        try server.keyIndex.update(profile: "other", membership: Membership([]))
        XCTAssertEqual(try lookups(server, "git", bob.base64).lookup.stdout, server.forcedCommandLine(for: bob) + "\n")
    }

    func testAnIndexOfTenThousandKeys() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let server = try makeServer(admin: alice)
        var memberships = [String: Membership]()
        var keys = [SSHPublicKey]()
        for profile in 0..<1_000 {
            memberships[String(format: "p%04d", profile)] = Membership((0..<10).map { index in
                let key = SigningKey.generate().publicKey
                keys.append(key)
                return member("m\(index)", index == 9 ? .revoked : index == 8 ? .invited : .active, key,
                              expiresAt: index == 8 ? (profile.isMultiple(of: 2) ? "2999-01-01T00:00:00.000Z" : "2001-01-01T00:00:00.000Z") : nil)
            })
        }
        try server.keyIndex.replaceAll(memberships)
        let index = try String(contentsOf: server.root.appendingPathComponent("keys.index"), encoding: .utf8)
        XCTAssertEqual(index.split(separator: "\n").filter { !$0.hasPrefix("#") }.count, 10_000)
        // The first key, the last, and some between; an odd profile's invitation has expired.
        var milliseconds = [Double]()
        for position in [0, 9_999, 4_321, 5_008, 5_018, 7_779] {
            let started = Date()
            let (lookup, _) = try lookups(server, "git", keys[position].base64)
            milliseconds.append(Date().timeIntervalSince(started) * 1000)
            let expired = position % 10 == 8 && (position / 10) % 2 == 1
            XCTAssertEqual(lookup.stdout, expired ? "" : server.forcedCommandLine(for: keys[position]) + "\n", "key \(position)")
        }
        let runs = 20
        let started = Date()
        for round in 0..<runs {
            _ = try ProcessRunner.run(try ConcordBinary.requiredLookup(), [server.root.path, "git", keys[(round * 7_919) % keys.count].base64],
                                      environment: environment())
        }
        let perLookup = Date().timeIntervalSince(started) / Double(runs) * 1000
        // Informational only: a debug build, timed through ProcessRunner (Foundation's Process and
        // temporary files); `make bench` row B9 times the release build from posix_spawn to exit.
        print("concord-lookup, 10,000-key index: \(String(format: "%.1f", perLookup)) ms per process via ProcessRunner (debug build)")
    }
}
