import Foundation
import XCTest

/// The team the access tests forge commits against, and how they forge and judge them.
struct AccessTeam {
    let alice: SyncDevice   // admin
    let eddie: SyncDevice   // editor
    let uma: SyncDevice     // user
    let vera: SyncDevice    // viewer
    let remote: SyncRemote
    let aliceProfile: URL
}

extension SyncTestCase {
    /// Alice's aac profile with a vocabulary record and a setting, and one member of each other role.
    func makeAccessTeam() throws -> AccessTeam {
        let alice = try makeDevice("alice", device: "laptop")
        let eddie = try makeDevice("eddie", device: "laptop")
        let uma = try makeDevice("uma", device: "tablet")
        let vera = try makeDevice("vera", device: "tablet")
        let remote = try makeRemote(.path)
        let profile = try publishProfile(owner: alice, remote: remote, directory: "alice",
                                         members: [(eddie, "editor"), (uma, "user"), (vera, "viewer")],
                                         records: [("vocabulary/puzzle", #"{"label":"puzzle"}"#), ("settings/theme", #"{"color":"blue"}"#)])
        // The remote stays in fsckAtEnd: the forged commits left in it are made with plain git and
        // are sound git objects (refused by concord's rules, not by git's).
        return AccessTeam(alice: alice, eddie: eddie, uma: uma, vera: vera, remote: remote, aliceProfile: profile)
    }

    /// A commit made with plain git in a fresh clone of the remote: `edit` changes files there,
    /// the commit is signed with `key` (unsigned when nil) and pushed as the remote's main.
    @discardableResult
    func pushWithGit(_ team: AccessTeam, signedWith key: URL?, message: String = "by hand", _ edit: (URL) throws -> Void) throws -> String {
        let clone = sandbox.appendingPathComponent("hand-\(UUID().uuidString.prefix(8))")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, clone.path])
        fsckAtEnd.append(clone)
        let commit = try commitWithGit(in: clone, signedWith: key, message: message, edit)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        return commit
    }

    /// The path of record `id` in `clone` (under its bucket directory).
    func recordFile(_ kind: String, _ id: String, in clone: URL) throws -> URL {
        let files = try gitOK(["ls-files", kind], in: clone).split(separator: "\n")
        let path = try XCTUnwrap(files.first { $0.hasSuffix("/\(id).json") }, "no \(kind)/\(id) in \(files)")
        return clone.appendingPathComponent(String(path))
    }

    /// Replaces `old` with `new` in the file at `url` (which must contain it).
    func replace(_ old: String, with new: String, in url: URL) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        XCTAssertTrue(text.contains(old), "\(url.lastPathComponent) has no \(old)")
        try Data(text.replacingOccurrences(of: old, with: new).utf8).write(to: url)
    }

    /// A member file with `change` applied to its JSON object.
    func editMember(_ name: String, in clone: URL, _ change: (inout [String: Any]) -> Void) throws {
        let url = clone.appendingPathComponent(".concord/members/\(name).json")
        var object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        change(&object)
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted]).write(to: url)
    }

    /// Alice's sync is refused: exit 5, one line naming the commit and `mentions`; nothing of hers changes.
    func assertRefused(_ team: AccessTeam, commit: String, mentions: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try workTreeSnapshot(team.aliceProfile)
        let tracking = try revParse("refs/remotes/origin/main", in: team.aliceProfile)
        let result = try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(result, status: 5, mentions: [String(commit.prefix(7))] + mentions, file: file, line: line)
        XCTAssertEqual(try workTreeSnapshot(team.aliceProfile), before, "HEAD, status and files unchanged", file: file, line: line)
        XCTAssertEqual(try revParse("refs/remotes/origin/main", in: team.aliceProfile), tracking, "tracking ref unchanged",
                       file: file, line: line)
    }

    /// Alice's sync takes the commit in: HEAD is it (a fast-forward).
    func assertAccepted(_ team: AccessTeam, commit: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertEqual(try revParse("HEAD", in: team.aliceProfile), commit, file: file, line: line)
    }

    /// A commit made with plain git in `clone` (a git clone of a remote): `edit` changes
    /// files, the commit is signed with `key` (unsigned when nil). Returns its id.
    @discardableResult
    func commitWithGit(in clone: URL, signedWith key: URL?, message: String = "by hand", _ edit: (URL) throws -> Void) throws -> String {
        try edit(clone)
        try gitOK(["add", "-A"], in: clone)
        let signing = key.map { GitSigning.options(keyFile: $0.path) + ["commit", "-S"] } ?? ["commit", "--no-gpg-sign"]
        try gitOK(signing + ["--quiet", "-m", message], in: clone)
        return try gitOK(["rev-parse", "HEAD"], in: clone)
    }
}
