import ConcordTestSupport
import Foundation
import XCTest

/// The command line as a new user met it (issue 32): where `-C` goes, what `--help` says, advice
/// that names the right command, what goes to standard output, and who may read what concord wrote.
final class NewUserTests: ConcordTestCase {
    override class var defaultClock: String? { fixedClock }

    /// Publishes `profile` to a new bare repository in the sandbox (its `origin`).
    private func publish(_ profile: URL, as owner: TestDevice, remote name: String = "remote.git") throws -> URL {
        let bare = sandbox.appendingPathComponent(name)
        try concordOK(["init", "--bare", bare.path], as: owner)
        try concordOK(["remote", "add", "origin", bare.path], as: owner, in: profile)
        try concordOK(["sync"], as: owner, in: profile)
        return bare
    }

    /// `-C DIR` works before the command as after it, in each of its spellings; `--help` says so.
    func testDirectoryOptionBeforeTheCommand() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile("sam", owner: alice)
        try concordOK(["put", "vocabulary/juice", "--json", #"{"label":"juice"}"#], as: alice, in: profile)
        let after = try concordOKResult(["ls", "-C", profile.path], as: alice).stdout
        XCTAssertTrue(after.contains("vocabulary/juice"), after)
        for arguments in [["-C", profile.path, "ls"], ["-C=\(profile.path)", "ls"], ["-C\(profile.path)", "ls"],
                          ["-C", "sam", "ls"], ["-C", profile.path, "remote", "list"]] {
            let result = try concord(arguments, as: alice)
            XCTAssertEqual(result.status, 0, "concord \(arguments.joined(separator: " ")): \(result.summary)")
            if arguments.last == "ls" { XCTAssertEqual(result.stdout, after, arguments.joined(separator: " ")) }
        }
        let help = try concordOKResult(["--help"], as: nil).stdout
        XCTAssertTrue(help.contains("concord -C sam sync"), help)
        XCTAssertTrue(help.contains("USAGE: concord <subcommand>"), help)
    }

    /// `concord --help` lists every exit code, 0 to 5, with docs/cli.md's words.
    func testHelpListsEveryExitCode() throws {
        let help = try concordOKResult(["--help"], as: nil).stdout
        for start in ["0  success", "1  error: one line on stderr", "2  usage error:", "3  offline: the remote could not be reached",
                      "4  refused: this device's member was revoked", "5  invalid commit: the remote holds a commit"] {
            XCTAssertTrue(help.contains("  " + start), "--help lacks \"\(start)\": \(help)")
        }
    }

    /// Advice names commands that exist: `identity new` (there is no `identity init`).
    func testJoiningUnderAnotherNameNamesIdentityNew() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        _ = try publish(profile, as: alice)
        let shared = try concordOKResult(["share", "--open", "--role", "viewer"], as: alice, in: profile).stdout
        let invitation = try XCTUnwrap(shared.split(separator: "\n").last.map(String.init), shared)
        try concordOK(["sync"], as: alice, in: profile)
        let bob = try makeDevice("bob")
        let wrongName = try concord(["accept", invitation, sandbox.appendingPathComponent("bob").path, "--as", "carol"], as: bob)
        XCTAssertEqual(wrongName.status, 2, wrongName.summary)
        XCTAssertTrue(wrongName.stderr.contains("'concord identity new --name carol --device DEVICE'"), wrongName.summary)
        // An identity whose name is taken is told to make one of another name, the same way.
        let otherAlice = try makeDevice("alice", device: "phone")
        let taken = try concord(["accept", invitation, sandbox.appendingPathComponent("alice-phone").path], as: otherAlice)
        assertRefusal(taken, mentions: ["already has a member named alice", "'concord identity new --name NAME --device DEVICE'"])
    }

    /// `get logs/<id>` prints the log entry `ls` lists under that name.
    func testGetReadsOneLogEntry() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        let id = try concordOKResult(["append", "logs", "--json", #"{"tapped":"juice"}"#], as: alice, in: profile).trimmedStdout
        XCTAssertTrue(try concordOKResult(["ls", "logs"], as: alice, in: profile).stdout.contains("logs/\(id)"))
        let entry = try concordOKResult(["get", "logs/\(id)"], as: alice, in: profile).stdout
        let object = try XCTUnwrap(parseJSON(entry) as? [String: Any], entry)
        XCTAssertEqual(object["id"] as? String, id)
        XCTAssertEqual(object["by"] as? String, "alice")
        XCTAssertEqual((object["data"] as? [String: Any])?["tapped"] as? String, "juice")
        assertRefusal(try concord(["get", "logs/nothing-here"], as: alice, in: profile), mentions: ["no record logs/nothing-here"])
    }

    /// An Editor acting on a User's device is refused with the rights they have there, called so.
    func testSwitchRefusalNamesTheEffectiveRole() throws {
        let alice = try makeDevice("alice")
        let grandma = try makeDevice("grandma", device: "phone")
        let therapist = try makeDevice("therapist", device: "ipad")
        let profile = try makeProfile(owner: alice, members: [(grandma, "user"), (therapist, "editor")])
        try concordOK(["switch", "therapist"], as: grandma, in: profile)
        try assertRefusedWithoutChange(["put", "vocabulary/puzzle", "--json", #"{"label":"puzzle"}"#], as: grandma, profile: profile,
                                       mentions: ["acting on grandma's device, therapist has the rights of a User (the lower of the two roles)",
                                                  "writing vocabulary needs editor or above"])
    }

    /// `share` prints the invitation alone on stdout; `accept` takes it from stdin (`-`) or a file.
    func testShareOutputFeedsAccept() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        _ = try publish(profile, as: alice)
        let shared = try concordOKResult(["share", "bob", "--role", "editor"], as: alice, in: profile)
        XCTAssertEqual(shared.stdout.split(separator: "\n").count, 1, shared.summary)
        XCTAssertTrue(shared.stdout.hasPrefix("concord-invitation-1:"), shared.summary)
        XCTAssertTrue(shared.stderr.contains("invited bob as editor"), shared.summary)
        let open = try concordOKResult(["share", "--open", "--role", "viewer"], as: alice, in: profile)
        XCTAssertEqual(open.stdout.split(separator: "\n").count, 1, open.summary)
        XCTAssertTrue(open.stdout.hasPrefix("concord-invitation-1:"), open.summary)
        try concordOK(["sync"], as: alice, in: profile)

        let bob = try makeDevice("bob")
        let bobs = sandbox.appendingPathComponent("bob")
        let viaStdin = try concordOKResult(["accept", "-", bobs.path], as: bob, input: Data(shared.stdout.utf8))
        XCTAssertTrue(viaStdin.stdout.contains("joined"), viaStdin.summary)
        let carol = try makeDevice("carol")
        let file = try writeFile("invitation.txt", open.stdout)
        let carols = sandbox.appendingPathComponent("carol")
        try concordOK(["accept", file.path, carols.path], as: carol)
        fsckAtEnd += [bobs, carols]
    }

    /// `import --file -` reads the dump from standard input.
    func testImportFromStandardInput() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        let dump = #"{"logs":[],"records":[{"data":{"label":"juice"},"id":"juice","kind":"vocabulary"}]}"#
        let imported = try concordOKResult(["import", "--file", "-"], as: alice, in: profile, input: Data(dump.utf8))
        XCTAssertTrue(imported.stdout.hasPrefix("imported 1 of 1 items"), imported.summary)
        XCTAssertTrue(try concordOKResult(["get", "vocabulary/juice"], as: alice, in: profile).stdout.contains("juice"))
        assertRefusal(try concord(["import", "--file", "-"], as: alice, in: profile, input: Data("{".utf8)), mentions: ["standard input"])
    }

    /// `doctor --fix` repairs a stale `.gitattributes`: in the working tree when the branch holds the
    /// right one; in a commit an Admin signs when it does not; a non-Admin is told an Admin must.
    func testDoctorFixRepairsGitattributes() throws {
        let alice = try makeDevice("alice")
        let bob = try makeDevice("bob", device: "tablet")
        let profile = try makeProfile(owner: alice, members: [(bob, "editor")])
        let attributes = profile.appendingPathComponent(".gitattributes")
        let good = try Data(contentsOf: attributes)

        try Data("* -merge\n".utf8).write(to: attributes)
        let found = try concord(["doctor"], as: alice, in: profile)
        XCTAssertEqual(found.status, 1, found.summary)
        XCTAssertTrue(found.stdout.contains("problem: .gitattributes does not match"), found.summary)
        let head = try commits(profile).first
        let fixedHere = try concordOKResult(["doctor", "--fix"], as: bob, in: profile)
        XCTAssertTrue(fixedHere.stdout.contains("fixed: .gitattributes"), fixedHere.summary)
        XCTAssertEqual(try Data(contentsOf: attributes), good)
        XCTAssertEqual(try commits(profile).first, head, "the branch held the right file: no commit")

        try Data("* -merge\n".utf8).write(to: attributes)
        try gitOK(["-c", "user.name=x", "-c", "user.email=x@example.com", "-c", "commit.gpgsign=false",
                   "commit", "--quiet", "-m", "hand edit", ".gitattributes"], in: profile)
        let refused = try concord(["doctor", "--fix"], as: bob, in: profile)
        XCTAssertEqual(refused.status, 1, refused.summary)
        XCTAssertTrue(refused.stdout.contains("not fixed: only an Admin can commit it"), refused.summary)
        XCTAssertTrue(refused.stdout.contains("an Admin's 'concord doctor --fix' commits it"), refused.summary)
        let fixed = try concordOKResult(["doctor", "--fix"], as: alice, in: profile)
        XCTAssertTrue(fixed.stdout.contains("fixed: .gitattributes"), fixed.summary)
        XCTAssertEqual(try Data(contentsOf: attributes), good)
        XCTAssertEqual(try gitOK(["show", "HEAD:.gitattributes"], in: profile) + "\n", String(decoding: good, as: UTF8.self))
        let verified = try git(["verify-commit", "-v", "HEAD"], in: profile)
        XCTAssertTrue(verified.stderr.contains(#"Good "git" signature for alice"#), verified.summary)
        XCTAssertTrue(try concordOKResult(["doctor"], as: alice, in: profile).stdout.hasPrefix("all good"))
        XCTAssertEqual(try gitOK(["status", "--porcelain"], in: profile), "")
    }

    /// What concord writes is its owner's alone: CONCORD_HOME and profiles, git's objects
    /// included, and an existing profile or home left open by an older concord is closed when opened.
    func testFilesAreReadableByTheirOwnerOnly() throws {
        let alice = try makeDevice("alice")
        let profile = try makeProfile(owner: alice)
        try concordOK(["put", "vocabulary/juice", "--json", #"{"label":"juice"}"#], as: alice, in: profile)
        let bare = try publish(profile, as: alice)
        let leaving = try makeProfile("leaving", owner: alice)
        try concordOK(["put", "vocabulary/kept", "--json", #"{"label":"kept"}"#], as: alice, in: leaving)
        try concordOK(["leave"], as: alice, in: leaving)
        fsckAtEnd += [profile, bare]
        for root in [alice.home, profile, bare] {
            XCTAssertEqual(try mode(root), 0o700, root.path)
            let walker = try XCTUnwrap(FileManager.default.enumerator(atPath: root.path))
            while let relative = walker.nextObject() as? String {
                let path = root.appendingPathComponent(relative), bits = try mode(path)
                XCTAssertEqual(bits & 0o077, 0, "\(path.path) is open to others: \(String(bits, radix: 8))")
            }
        }
        XCTAssertTrue(FileManager.default.fileExists(atPath: alice.home.appendingPathComponent("saved").path), "leave saved a dump")

        // An older concord's profile and home: opened, they are closed to others.
        for url in [profile, alice.home] { XCTAssertEqual(chmod(url.path, 0o755), 0) }
        try concordOK(["ls", "-C", profile.path], as: alice)
        XCTAssertEqual(try mode(profile), 0o700)
        XCTAssertEqual(try mode(alice.home), 0o700)
    }

    /// `profiles` tells a clone whose device key is not registered from an active one, and a
    /// removed directory from a profile never synced.
    func testProfilesShowsAnUnregisteredKeyAndARemovedDirectory() throws {
        let alice = try makeDevice("alice")
        let bobLaptop = try makeDevice("bob", device: "laptop")
        let profile = try makeProfile(owner: alice, members: [(bobLaptop, "editor")])
        let bare = try publish(profile, as: alice)
        let bobPhone = try makeDevice("bob", device: "phone")
        let phoneCopy = sandbox.appendingPathComponent("bob-phone")
        try concordOK(["clone", bare.path, phoneCopy.path], as: bobPhone)
        let listed = try concordOKResult(["profiles"], as: bobPhone).stdout
        XCTAssertTrue(listed.contains("  editor  key not registered  "), listed)
        XCTAssertTrue(listed.contains("ask an admin to run 'concord members add bob"), listed)
        let json = try XCTUnwrap(parseJSON(try concordOKResult(["profiles", "--json"], as: bobPhone).stdout) as? [[String: Any]])
        XCTAssertEqual(json.first?["access"] as? String, "key not registered")

        try FileManager.default.removeItem(at: phoneCopy)
        let gone = try concordOKResult(["profiles"], as: bobPhone).stdout
        XCTAssertTrue(gone.contains("  missing (no profile at \(phoneCopy.path): directory removed)"), gone)
        XCTAssertFalse(gone.contains("never synced") || gone.contains("no remote"), gone)
    }

    /// The permission bits of `url` (itself, not what a symbolic link points to).
    private func mode(_ url: URL) throws -> Int {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { throw CocoaError(.fileNoSuchFile) }
        return Int(info.st_mode & 0o777)
    }
}
