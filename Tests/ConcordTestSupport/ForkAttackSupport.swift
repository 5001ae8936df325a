// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import Foundation
import XCTest

/// Issue 42's attacks: a decision made later on an old copy, merged back. What the attackers forge
/// (a join by an open link under a name of their choosing) and how the honest devices' end state is
/// judged, shared by the path-remote and the `concord serve` tests.
extension ConcordTestCase {
    /// The fields of invitation text `link` (`concord-invitation-1:<base64url JSON>`).
    package func invitationFields(_ link: String) throws -> [String: Any] {
        var base64 = String(link.drop { $0 != ":" }.dropFirst()).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: XCTUnwrap(Data(base64Encoded: base64))) as? [String: Any])
    }

    /// Someone holding open invitation `link` joins by it as `member` in `fork` (a git clone checked
    /// out where the link still has places and `member` is free) with a new key of their own, as
    /// `concord accept` would: a new active member file holding that key with its proof, bound by
    /// the link's one-time signature, the commit signed by the new key. Returns the commit, the
    /// key line and its private key file.
    package func joinWithAnOpenLink(_ link: String, as member: String, in fork: URL,
                                    profileID: String) throws -> (commit: String, key: String, keyFile: URL) {
        let fields = try invitationFields(link)
        let open = try XCTUnwrap(fields["open"] as? String, "not an open invitation: \(fields)")
        let (key, keyFile, acceptance, proof) = try acceptanceByLink(fields, as: member, device: "squat", profileID: profileID)
        let file: [String: Any] = [
            "name": member, "role": try XCTUnwrap(fields["role"] as? String), "status": "active",
            "keys": [["device": "squat", "publicKey": key, "proof": proof]],
            "addedBy": try XCTUnwrap(fields["invitedBy"] as? String), "addedAt": "2026-01-01T10:00:00.000Z",
            "acceptance": acceptance, "invitation": open,
        ]
        let commit = try commitWithGit(in: fork, signedWith: keyFile, message: "\(member) joined") { clone in
            let url = clone.appendingPathComponent(".concord/members/\(member).json")
            XCTAssertFalse(FileManager.default.fileExists(atPath: url.path), "\(member) is free where the squat is made")
            try JSONSerialization.data(withJSONObject: file, options: [.sortedKeys, .prettyPrinted]).write(to: url)
        }
        return (commit, key, keyFile)
    }

    /// What `concord accept` signs with a link (invitation `fields`, from `invitationFields`), made
    /// by hand for `member`: a new key of theirs on `device` (its private key file in the sandbox),
    /// the link's one-time key's signature over the root commit, the name and that key, and the
    /// key's proof of possession for `profileID`.
    package func acceptanceByLink(_ fields: [String: Any], as member: String, device: String,
                                  profileID: String) throws -> (key: String, keyFile: URL, acceptance: String, proof: String) {
        let name = "\(device)-\(UUID().uuidString.prefix(8))"
        let oneTimeFile = sandbox.appendingPathComponent("one-time-key-\(name)")
        try Data(try XCTUnwrap(fields["oneTimeKey"] as? String).utf8).write(to: oneTimeFile)
        XCTAssertEqual(chmod(oneTimeFile.path, 0o600), 0)
        let keyFile = sandbox.appendingPathComponent("key-\(name)")
        let key = try GitSigning.makeKey(at: keyFile, comment: "\(member)@\(device)", environment: environment())
            .split(separator: " ").prefix(2).joined(separator: " ")
        let message = sandbox.appendingPathComponent("acceptance-\(name)")
        try Data("\(try XCTUnwrap(fields["root"] as? String))\n\(member)\n\(key)\n".utf8).write(to: message)
        let signed = try ProcessRunner.run(GitSigning.sshKeygenPath, ["-Y", "sign", "-q", "-f", oneTimeFile.path, "-n", "concord-acceptance", message.path],
                                           environment: environment())
        XCTAssertEqual(signed.status, 0, signed.summary)
        let acceptance = try String(contentsOf: message.appendingPathExtension("sig"), encoding: .utf8)
        return (key, keyFile, acceptance, try proof(signedBy: keyFile, profileID: profileID, member: member, key: key))
    }

    /// The second word of a key line: what names the key whatever its comment.
    package func keyBlob(_ line: String) -> String {
        let words = line.split(separator: " ")
        return words.count > 1 ? String(words[1]) : line
    }

    /// The line of `concord members` (as `device` in `profile`) for `name`: `name  role  status…`; nil when not listed.
    package func memberLine(_ name: String, as device: TestDevice, in profile: URL,
                            file: StaticString = #filePath, line: UInt = #line) throws -> String? {
        let members = try concordOK(["members"], as: device, in: profile, file: file, line: line)
        return members.split(separator: "\n").map(String.init).first { $0.hasPrefix("\(name)  ") }
    }

    /// `concord members` in `profile` lists `name` as `role` and `status`.
    package func assertMember(_ name: String, _ role: String, _ status: String, as device: TestDevice, in profile: URL,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        let found = try memberLine(name, as: device, in: profile, file: file, line: line)
        XCTAssertTrue(found?.hasPrefix("\(name)  \(role)  \(status)") == true,
                      "\(device.member)@\(device.device) should list \(name) as \(role) \(status), lists: \(found ?? "nothing")",
                      file: file, line: line)
    }

    /// The text of `path` at `revision` in `repository` (a work tree or a bare repository); nil when absent.
    package func fileAt(_ revision: String, _ path: String, in repository: URL) throws -> String? {
        let shown = try git(["show", "\(revision):\(path)"], in: repository)
        return shown.status == 0 ? shown.stdout : nil
    }

    /// The member file of `name` at `revision` in `repository`, parsed; nil when absent.
    package func memberFile(_ name: String, at revision: String = "HEAD", in repository: URL,
                            file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any]? {
        guard let text = try fileAt(revision, ".concord/members/\(name).json", in: repository) else { return nil }
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text, file: file, line: line)
    }

    /// The key blobs (see `keyBlob`) `name`'s file lists at `revision` in `repository`.
    package func memberKeys(_ name: String, at revision: String = "HEAD", in repository: URL) throws -> [String] {
        let keys = try memberFile(name, at: revision, in: repository)?["keys"] as? [[String: Any]] ?? []
        return keys.compactMap { ($0["publicKey"] as? String).map(keyBlob) }
    }

    /// `name`'s file at `revision` in `repository` says `role` and `status`.
    package func assertMemberFile(_ name: String, _ role: String, _ status: String, at revision: String = "HEAD", in repository: URL,
                                  _ context: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let member = try memberFile(name, at: revision, in: repository, file: file, line: line)
        XCTAssertEqual(member?["role"] as? String, role, "\(context): \(name)'s role", file: file, line: line)
        XCTAssertEqual(member?["status"] as? String, status, "\(context): \(name)'s status", file: file, line: line)
    }

    /// Whether `revision` in `repository` holds a record `kind/id` (under its bucket directory).
    package func holdsRecord(_ kind: String, _ id: String, at revision: String = "HEAD", in repository: URL) throws -> Bool {
        let files = try gitOK(["ls-tree", "-r", "--name-only", revision, "--", kind], in: repository).split(separator: "\n")
        return files.contains { $0.hasSuffix("/\(id).json") }
    }
    /// What an attacker with plain git pushes to keep their own fork as the first parent: a merge of
    /// HEAD of `copy` (first) and `main` (second), signed with `key`, whose tree is what `concord
    /// merge` run there as `device` makes (so it is no less a policy merge than concord's own), or
    /// git's own merge (`-X theirs`) when concord refuses to merge. HEAD is moved to it; returns its id.
    package func forkFirstMergeWithGit(in copy: URL, of main: String, as device: TestDevice, signedWith key: URL) throws -> String {
        let fork = try revParse("HEAD", in: copy)
        let other = try revParse(main, in: copy)
        let tree: String
        let merged = try concord(["merge", other], as: device, in: copy)   // by id: no remote's main for concord to put first
        print("concord merge for the plain git merge's tree: \(merged.summary)")
        if merged.status == 0, try revParse("HEAD", in: copy) != fork {
            tree = try gitOK(["rev-parse", "HEAD^{tree}"], in: copy)
        } else {
            _ = try git(["merge", "--quiet", "--no-ff", "--no-commit", "-X", "theirs", other], in: copy)
            tree = try gitOK(["write-tree"], in: copy)
        }
        try gitOK(["reset", "--quiet", "--hard", fork], in: copy)
        let merge = try gitOK(GitSigning.options(keyFile: key.path) + ["commit-tree", "-S", tree, "-p", fork, "-p", other, "-m", "merge main"], in: copy)
        try gitOK(["reset", "--quiet", "--hard", merge], in: copy)
        return merge
    }

    /// What each attacker does last: fetches the remote's main into `copy` (their fork), merges it
    /// with `concord merge origin/main` as `device`, or, where concord refuses, with plain git, main
    /// first and their side kept (`mainFirstMergeWithGit`, signed with the device's key), and pushes
    /// the result whatever the remote answers. `environment`: git's, for an ssh remote.
    package func mergeMainAndPushAnyway(in copy: URL, as device: TestDevice, environment: [String: String] = [:]) throws {
        try gitOK(["fetch", "--quiet", "origin"], in: copy, environment: environment)
        let merged = try concord(["merge", "origin/main"], as: device, in: copy)
        print("\(device.member)@\(device.device)'s concord merge: \(merged.summary)")
        if merged.status != 0 { try mainFirstMergeWithGit(in: copy, of: "origin/main", signedWith: device.keyFile) }
        try pushAnyway(from: copy, environment: environment)
    }

    /// Pushes HEAD of `copy` to the remote's main, whatever the remote answers (it is the remote's
    /// judgment, and the devices' after it, that the attack tests check).
    package func pushAnyway(from copy: URL, environment: [String: String] = [:]) throws {
        let pushed = try git(["push", "origin", "HEAD:main"], in: copy, environment: environment)
        print("the attacker's push: \(pushed.summary)")
    }

    /// What an attacker with plain git pushes when concord will not merge for them: a merge of `main`
    /// (first, so the remote's main stays on its first-parent line) and HEAD of `copy` (second), its
    /// tree git's own merge keeping the attacker's side where they conflict (`-X theirs`), signed
    /// with `key`. HEAD is moved to it; returns its id.
    package func mainFirstMergeWithGit(in copy: URL, of main: String, signedWith key: URL) throws -> String {
        let fork = try revParse("HEAD", in: copy)
        let other = try revParse(main, in: copy)
        try gitOK(["reset", "--quiet", "--hard", other], in: copy)
        _ = try git(["merge", "--quiet", "--no-ff", "--no-commit", "-X", "theirs", fork], in: copy)
        let tree = try gitOK(["write-tree"], in: copy)
        try gitOK(["reset", "--quiet", "--hard", other], in: copy)
        let merge = try gitOK(GitSigning.options(keyFile: key.path) + ["commit-tree", "-S", tree, "-p", other, "-p", fork, "-m", "merge"], in: copy)
        try gitOK(["reset", "--quiet", "--hard", merge], in: copy)
        return merge
    }

    /// Amends HEAD of `copy` (re-signed with `key`, message and tree unchanged) with other committer
    /// dates until its id sorts before `other`'s, as an attacker grinds an id; returns the new id.
    package func grindHead(in copy: URL, before other: String, signedWith key: URL,
                           file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let head = try grindHead(in: copy, signedWith: key) { $0 < other }
        XCTAssertLessThan(head, other, "ground an id below \(other)", file: file, line: line)
        return head
    }

    /// Amends HEAD of `copy` as `grindHead(in:before:)` does until `done` holds for its id (at most 4,096 tries).
    private func grindHead(in copy: URL, signedWith key: URL, until done: (String) -> Bool) throws -> String {
        var head = try revParse("HEAD", in: copy)
        // Each attempt a date of its own (an ssh signature is deterministic, so a date tried twice
        // gives the same id): 4,096 tries find an id below one starting "00" with near certainty.
        for attempt in 0..<4096 where !done(head) {
            let seconds = 1_767_261_600 + attempt
            try gitOK(GitSigning.options(keyFile: key.path) + ["commit", "--amend", "--quiet", "--no-edit", "-S"], in: copy,
                      environment: ["GIT_COMMITTER_DATE": "\(seconds) +0000", "GIT_AUTHOR_DATE": "\(seconds - 3600) +0000"])
            head = try revParse("HEAD", in: copy)
        }
        return head
    }

    /// On each of `copies` still there, `member`'s device is an active Editor and its member's keys
    /// are exactly its own: the squatter's second key `squat` is not among them.
    package func assertSquatFell(_ member: TestDevice, squat: String, on copies: [(TestDevice, URL)],
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        for (device, copy) in copies where FileManager.default.fileExists(atPath: copy.path) {
            try assertMember(member.member, "editor", "active", as: device, in: copy, file: file, line: line)
            XCTAssertEqual(try memberKeys(member.member, in: copy), [keyBlob(member.publicKeyLine)], "\(device.member): \(member.member)'s keys",
                           file: file, line: line)
            XCTAssertFalse(try memberKeys(member.member, in: copy).contains(keyBlob(squat)), "eve's second key is not \(member.member)'s",
                           file: file, line: line)
        }
    }

    /// `owner` adds `device`, another device of its member, on `copy` with the device's proof of possession.
    package func addDevice(_ device: TestDevice, as owner: TestDevice, in copy: URL, file: StaticString = #filePath, line: UInt = #line) throws {
        try concordOK(["devices", "add", "--name", device.device, "--key", device.publicKeyLine, "--proof",
                       try keyProof(of: device, for: copy, file: file, line: line)], as: owner, in: copy, file: file, line: line)
    }

    /// `owner` adds `device` on `copy` and syncs, `clone` gives the device a copy of its own, and
    /// `owner` removes the device's key and syncs: the device's copy stays as it was before the
    /// removal (a thief's). Returns that copy and the removal's commit.
    package func deviceRemovedAfterItCopied(_ device: TestDevice, by owner: TestDevice, in copy: URL,
                                            clone: (TestDevice) throws -> URL) throws -> (copy: URL, removal: String) {
        try addDevice(device, as: owner, in: copy)
        try concordOK(["sync"], as: owner, in: copy)
        let devicesCopy = try clone(device)
        let removal = try removeDevice(device.device, as: owner, in: copy)
        return (devicesCopy, removal)
    }

    /// `owner` removes the key of its member's device `name` on `copy` and syncs; returns the removal's commit.
    /// A removal whose id starts `0` is ground (re-signed with `owner`'s key, message and tree
    /// unchanged) to one starting at `1` or above before it is synced, so a thief's 4,096 tries
    /// (`grindHead(in:before:)`) find an id below it with near certainty; below `0005…` one try in
    /// about 15,000 would.
    package func removeDevice(_ name: String, as owner: TestDevice, in copy: URL) throws -> String {
        try concordOK(["devices", "remove", name], as: owner, in: copy)
        var removal = try revParse("HEAD", in: copy)
        if removal < "1" { removal = try grindHead(in: copy, signedWith: owner.keyFile) { $0 >= "1" } }
        try concordOK(["sync"], as: owner, in: copy)
        return removal
    }

    /// On `copy`, the removed `device`'s copy from before `removal`, signed by that device's key: a
    /// key X of a thief's added to its member's file (with X's proof; the commit's id ground to sort
    /// before the removal's), then a record vocabulary/thief. Returns the thief's device, whose key is X.
    package func thiefAddsAKeyAndWrites(on copy: URL, as device: TestDevice, before removal: String) throws -> TestDevice {
        let thief = try makeDevice(device.member, device: "spare")
        try addDevice(thief, as: device, in: copy)
        _ = try grindHead(in: copy, before: removal, signedWith: device.keyFile)
        try concordOK(["put", "vocabulary/thief", "--json", #"{"label":"by the thief"}"#], as: device, in: copy)
        return thief
    }

    /// Jay revokes alice (or demotes her to Viewer) on his copy and syncs, adds kim (Editor, on her
    /// tablet) and writes vocabulary/jays; bob syncs his copy.
    package func jayRemovesAlice(demoting: Bool, jay: (device: TestDevice, copy: URL), kim: TestDevice,
                                 bob: (device: TestDevice, copy: URL)) throws {
        try concordOK(demoting ? ["role", "alice", "viewer"] : ["revoke", "alice"], as: jay.device, in: jay.copy)
        try concordOK(["sync"], as: jay.device, in: jay.copy)
        try concordOK(["members", "add", "kim", "--role", "editor", "--key", kim.publicKeyLine, "--device", "tablet"], as: jay.device, in: jay.copy)
        try concordOK(["put", "vocabulary/jays", "--json", #"{"label":"by jay"}"#], as: jay.device, in: jay.copy)
        try concordOK(["sync"], as: jay.device, in: jay.copy)
        try concordOK(["sync"], as: bob.device, in: bob.copy)
    }

    /// Whether `device`'s copy at `profile` is still there (a device told "access removed" deletes it);
    /// fails the test when it is gone.
    package func copyIsThere(_ profile: URL, of device: TestDevice, after result: RunResult,
                             file: StaticString = #filePath, line: UInt = #line) -> Bool {
        guard FileManager.default.fileExists(atPath: profile.path) else {
            XCTFail("\(device.member)@\(device.device)'s copy was deleted: \(result.summary)", file: file, line: line)
            return false
        }
        return true
    }
}
#endif
