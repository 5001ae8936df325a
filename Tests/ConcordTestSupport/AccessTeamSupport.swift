// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest

/// The team the access tests forge commits against, and how they forge and judge them.
package struct AccessTeam {
    package let alice: TestDevice   // admin
    package let eddie: TestDevice   // editor
    package let uma: TestDevice     // user
    package let vera: TestDevice    // viewer
    package let remote: SyncRemote
    package let aliceProfile: URL

    package init(alice: TestDevice, eddie: TestDevice, uma: TestDevice, vera: TestDevice, remote: SyncRemote, aliceProfile: URL) {
        (self.alice, self.eddie, self.uma, self.vera, self.remote, self.aliceProfile) = (alice, eddie, uma, vera, remote, aliceProfile)
    }
}

extension ConcordTestCase {
    /// Alice's aac profile with a vocabulary record and a setting, and one member of each other role.
    package func makeAccessTeam() throws -> AccessTeam {
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

    /// A profile of data format `format` as an older concord made it, published to `remote`: `owner`
    /// makes an aac profile in `<sandbox>/<owner's name>` whose first commit's profile.json says
    /// `format` (re-signed by the owner), adds `members` with their roles and writes `records`.
    package func publishOldFormatProfile(_ format: Int, owner: TestDevice, remote: SyncRemote, members: [(TestDevice, String)],
                                         records: [(path: String, json: String)] = [], currentFormat: Int) throws -> URL {
        let profile = sandbox.appendingPathComponent(owner.member)
        try concordOK(["init", profile.path, "--name", "Old", "--template", "aac"], as: owner)
        try replace(#""formatVersion": \#(currentFormat)"#, with: #""formatVersion": \#(format)"#, in: profile.appendingPathComponent(".concord/profile.json"))
        try gitOK(["add", "-A"], in: profile)
        try gitOK(GitSigning.options(keyFile: owner.keyFile.path) + ["commit", "-S", "--quiet", "--amend", "--no-edit"], in: profile)
        for (member, role) in members {
            try concordOK(["members", "add", member.member, "--role", role, "--key", member.publicKeyLine, "--device", member.device], as: owner, in: profile)
        }
        for (path, json) in records { try concordOK(["put", path, "--json", json], as: owner, in: profile) }
        try allow(owner, on: remote)
        try concordOK(["remote", "add", "origin", remote.url], as: owner, in: profile)
        try concordOK(["sync"], as: owner, in: profile)
        fsckAtEnd.append(profile)
        return profile
    }

    /// A commit made with plain git in `copy` on a new branch `old` from commit `start`, signed with
    /// `key`, `edit` changing files there; `copy` is back on main after it. Returns the commit.
    package func commitOnABranch(from start: String, in copy: URL, signedWith key: URL, message: String = "by hand",
                                 _ edit: (URL) throws -> Void) throws -> String {
        try gitOK(["checkout", "--quiet", "-b", "old", start], in: copy)
        let commit = try commitWithGit(in: copy, signedWith: key, message: message, edit)
        try gitOK(["checkout", "--quiet", "main"], in: copy)
        return commit
    }

    /// `owner` upgrades `profile` to this build's data format and syncs; then each of `copies` syncs.
    package func upgradeAndSync(_ owner: TestDevice, _ profile: URL, then copies: [(TestDevice, URL)]) throws {
        try concordOK(["upgrade"], as: owner, in: profile)
        try concordOK(["sync"], as: owner, in: profile)
        for (device, copy) in copies { try concordOK(["sync"], as: device, in: copy) }
    }

    /// Eddie's plain git clone of the remote's main, in `<sandbox>/eddie-fork` (fsck'd at the end).
    package func eddiesFork(_ team: AccessTeam) throws -> URL {
        let fork = sandbox.appendingPathComponent("eddie-fork")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, fork.path])
        fsckAtEnd.append(fork)
        return fork
    }

    /// A commit made with plain git in a fresh clone of the remote: `edit` changes files there,
    /// the commit is signed with `key` (unsigned when nil) and pushed as the remote's main.
    @discardableResult
    package func pushWithGit(_ team: AccessTeam, signedWith key: URL?, message: String = "by hand", _ edit: (URL) throws -> Void) throws -> String {
        let clone = sandbox.appendingPathComponent("hand-\(UUID().uuidString.prefix(8))")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, clone.path])
        fsckAtEnd.append(clone)
        let commit = try commitWithGit(in: clone, signedWith: key, message: message, edit)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        return commit
    }

    /// The path of record `id` in `clone` (under its bucket directory).
    package func recordFile(_ kind: String, _ id: String, in clone: URL) throws -> URL {
        let files = try gitOK(["ls-files", kind], in: clone).split(separator: "\n")
        let path = try XCTUnwrap(files.first { $0.hasSuffix("/\(id).json") }, "no \(kind)/\(id) in \(files)")
        return clone.appendingPathComponent(String(path))
    }

    /// Replaces `old` with `new` in the file at `url` (which must contain it).
    package func replace(_ old: String, with new: String, in url: URL) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        XCTAssertTrue(text.contains(old), "\(url.lastPathComponent) has no \(old)")
        try Data(text.replacingOccurrences(of: old, with: new).utf8).write(to: url)
    }

    /// Stamps the record file at `url` as `member`'s write (its `updatedBy`), as a hand edit by that
    /// member must be from data format 7 on (a record's stamps name the commit's signer).
    package func stamp(_ url: URL, as member: String) throws {
        let text = try String(contentsOf: url, encoding: .utf8)
        try Data(text.replacingOccurrences(of: #""updatedBy": "[^"]*""#, with: #""updatedBy": "\#(member)""#, options: .regularExpression).utf8)
            .write(to: url)
    }

    /// A member file with `change` applied to its JSON object.
    package func editMember(_ name: String, in clone: URL, _ change: (inout [String: Any]) -> Void) throws {
        let url = clone.appendingPathComponent(".concord/members/\(name).json")
        var object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        change(&object)
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted]).write(to: url)
    }

    /// Alice's sync is refused: exit 5, one line naming the commit and `mentions`; nothing of hers changes.
    package func assertRefused(_ team: AccessTeam, commit: String, mentions: [String], file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try workTreeSnapshot(team.aliceProfile)
        let tracking = try revParse("refs/remotes/origin/main", in: team.aliceProfile)
        let result = try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(result, status: 5, mentions: [String(commit.prefix(7))] + mentions, file: file, line: line)
        XCTAssertEqual(try workTreeSnapshot(team.aliceProfile), before, "HEAD, status and files unchanged", file: file, line: line)
        XCTAssertEqual(try revParse("refs/remotes/origin/main", in: team.aliceProfile), tracking, "tracking ref unchanged",
                       file: file, line: line)
    }

    /// Alice's sync takes the commit in: HEAD is it (a fast-forward).
    package func assertAccepted(_ team: AccessTeam, commit: String, file: StaticString = #filePath, line: UInt = #line) throws {
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile, file: file, line: line)
        XCTAssertEqual(try revParse("HEAD", in: team.aliceProfile), commit, file: file, line: line)
    }

    /// A merge made with plain git in `clone`: HEAD with `parent` merged in (with git's merge
    /// `strategy` options, HEAD's side "ours"), `edit` applied on top (the attacker's changes), signed
    /// with `key`. HEAD is its first parent, as plain `git merge` makes it; with `mainFirst`, `parent`
    /// is, as an attacker who knows the mainline rule makes it (the remote's main stays on the new
    /// main's first-parent line, so only the merge rule can refuse it). HEAD moves to it; returns its id.
    @discardableResult
    package func mergeWithGit(in clone: URL, _ parent: String, signedWith key: URL, message: String = "merge main", strategy: [String] = [],
                              mainFirst: Bool = false, _ edit: (URL) throws -> Void = { _ in }) throws -> String {
        let head = try gitOK(["rev-parse", "HEAD"], in: clone)
        let other = try gitOK(["rev-parse", parent], in: clone)
        try gitOK(["merge", "--quiet", "--no-ff", "--no-commit"] + strategy + [parent], in: clone)
        try edit(clone)
        try gitOK(["add", "-A"], in: clone)
        guard mainFirst else {
            try gitOK(GitSigning.options(keyFile: key.path) + ["commit", "-S", "--quiet", "-m", message], in: clone)
            return try gitOK(["rev-parse", "HEAD"], in: clone)
        }
        let tree = try gitOK(["write-tree"], in: clone)
        try gitOK(["reset", "--quiet", "--hard", head], in: clone)
        let merge = try gitOK(GitSigning.options(keyFile: key.path) + ["commit-tree", "-S", tree, "-p", other, "-p", head, "-m", message], in: clone)
        try gitOK(["reset", "--quiet", "--hard", merge], in: clone)
        return merge
    }

    /// A merge made with plain git in `clone` whose second parent is `ancestor`, an ancestor of HEAD
    /// (its first parent, so the remote's main stays on the new main's first-parent line): its tree is
    /// HEAD's with `edit` applied (e.g. a file taken back from `ancestor` with `git checkout`), signed
    /// with `key`. Every file matches one parent's; only the merge rule can refuse it. HEAD moves to it.
    @discardableResult
    package func ancestorMergeWithGit(in clone: URL, with ancestor: String, signedWith key: URL, _ edit: (URL) throws -> Void) throws -> String {
        let head = try gitOK(["rev-parse", "HEAD"], in: clone)
        try edit(clone)
        try gitOK(["add", "-A"], in: clone)
        let tree = try gitOK(["write-tree"], in: clone)
        let merge = try gitOK(GitSigning.options(keyFile: key.path) + ["commit-tree", "-S", tree, "-p", head, "-p", ancestor, "-m", "merge"],
                              in: clone)
        try gitOK(["reset", "--quiet", "--hard", merge], in: clone)
        return merge
    }

    /// Writes `.concord/members/<name>.json` in `clone` as an active member of `role` with `publicKey`
    /// on device `device`, added by `addedBy`: an alias, as an Admin would add it by hand.
    package func writeActiveMember(_ name: String, role: String, publicKey: String, device: String = "laptop", addedBy: String,
                                   in clone: URL) throws {
        let member: [String: Any] = ["name": name, "role": role, "status": "active", "addedBy": addedBy,
                                     "addedAt": "2026-01-01T10:00:00.000Z", "keys": [["device": device, "publicKey": publicKey]]]
        try JSONSerialization.data(withJSONObject: member, options: [.sortedKeys, .prettyPrinted])
            .write(to: clone.appendingPathComponent(".concord/members/\(name).json"))
    }

    /// An edit appending a log entry to `logs/2026-01-01.jsonl`, attributed to `by` with entry id `id`
    /// at `time` of that day.
    package func appendLogEntry(by: String, id: String, at time: String, text: String) -> (URL) throws -> Void {
        { clone in
            let url = clone.appendingPathComponent(Self.logDay)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let line = #"{"at":"2026-01-01T\#(time).000Z-0000","by":"\#(by)","data":{"text":"\#(text)"},"device":"tablet","id":"\#(id)"}"#
            try Data(((try? Data(contentsOf: url)) ?? Data()) + Data((line + "\n").utf8)).write(to: url)
        }
    }

    /// The log day file `appendLogEntry` writes.
    package static var logDay: String { "logs/2026-01-01.jsonl" }

    /// A merge of three parents made with plain git in `clone`, signed with `key`: HEAD and two
    /// branches from it, each setting settings/theme's color. Returns its id (not checked out).
    package func octopusWithGit(in clone: URL, signedWith key: URL) throws -> String {
        let signing = GitSigning.options(keyFile: key.path)
        let base = try gitOK(["rev-parse", "HEAD"], in: clone)
        let branch = try gitOK(["rev-parse", "--abbrev-ref", "HEAD"], in: clone)
        var tips = [String]()
        for label in ["one", "two"] {
            try gitOK(["checkout", "--quiet", "-B", label, base], in: clone)
            try replace(#""color": "blue""#, with: #""color": "\#(label)""#, in: try recordFile("settings", "theme", in: clone))
            try gitOK(signing + ["commit", "-S", "--quiet", "-am", label], in: clone)
            tips.append(try gitOK(["rev-parse", "HEAD"], in: clone))
        }
        try gitOK(["checkout", "--quiet", branch], in: clone)
        let tree = try gitOK(["rev-parse", "\(tips[0])^{tree}"], in: clone)
        return try gitOK(signing + ["commit-tree", "-S", tree, "-p", base, "-p", tips[0], "-p", tips[1], "-m", "octopus"], in: clone)
    }

    /// A commit made with plain git in `clone` (a git clone of a remote): `edit` changes
    /// files, the commit is signed with `key` (unsigned when nil). Returns its id.
    @discardableResult
    package func commitWithGit(in clone: URL, signedWith key: URL?, message: String = "by hand", _ edit: (URL) throws -> Void) throws -> String {
        try edit(clone)
        try gitOK(["add", "-A"], in: clone)
        let signing = key.map { GitSigning.options(keyFile: $0.path) + ["commit", "-S"] } ?? ["commit", "--no-gpg-sign"]
        try gitOK(signing + ["--quiet", "-m", message], in: clone)
        return try gitOK(["rev-parse", "HEAD"], in: clone)
    }

    /// Someone holding link invitation `link` accepts it as `member` in `fork` (checked out where the
    /// member is still invited) with a key of their own, as `concord accept` would: the acceptance
    /// signed with the link's one-time key, the key with its proof of possession. Returns the commit,
    /// the key line, its private key file and its proof.
    package func acceptWithAStolenLink(_ link: String, as member: String, in fork: URL,
                                       profileID: String) throws -> (commit: String, key: String, keyFile: URL, proof: String) {
        let (key, keyFile, acceptance, proof) = try acceptanceByLink(try invitationFields(link), as: member, device: "stolen", profileID: profileID)
        let commit = try commitWithGit(in: fork, signedWith: keyFile, message: "accept") { clone in
            try self.editMember(member, in: clone) { file in
                file["status"] = "active"
                file["expiresAt"] = nil
                file["invitationKey"] = nil
                file["keys"] = [["device": "stolen", "publicKey": key, "proof": proof]]
                file["acceptance"] = acceptance
            }
        }
        return (commit, key, keyFile, proof)
    }
}

// MARK: - Key proofs made with plain ssh-keygen

extension ConcordTestCase {
    /// The `id` in `profile`'s `.concord/profile.json`.
    package func profileID(of profile: URL) throws -> String {
        let info = try JSONSerialization.jsonObject(with: Data(contentsOf: profile.appendingPathComponent(".concord/profile.json")))
        return try XCTUnwrap((info as? [String: Any])?["id"] as? String)
    }

    /// The proof message, version 1, for `key` (a key line; its comment is not part of it).
    package func proofMessage(profileID: String, member: String, key: String) -> String {
        let words = key.split(separator: " ")
        return "concord key proof v1\nprofile \(profileID)\nmember \(member)\nkey \(words[0]) \(words[1])\n"
    }

    /// A proof made by `ssh-keygen -Y sign -n concord-key` with the private key in `keyFile`: the base64
    /// of the SSHSIG blob inside its armor.
    package func proof(signedBy keyFile: URL, profileID: String, member: String, key: String) throws -> String {
        let message = sandbox.appendingPathComponent("proof-message-\(UUID().uuidString.prefix(8))")
        try Data(proofMessage(profileID: profileID, member: member, key: key).utf8).write(to: message)
        let signed = try ProcessRunner.run(GitSigning.sshKeygenPath, ["-q", "-Y", "sign", "-n", "concord-key", "-f", keyFile.path, message.path],
                                           environment: environment())
        XCTAssertEqual(signed.status, 0, signed.summary)
        let armored = try String(contentsOf: message.appendingPathExtension("sig"), encoding: .utf8)
        return armored.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    }
}
#endif
