import ConcordTestSupport
import Foundation
import XCTest

/// The access rule on every device (issue 13, validity rules 1, 2 and 4): each commit a sync
/// receives must be signed by a member active in its parent's membership and change only what
/// that member's role may write under the parent's kinds. Every forged commit here is made with
/// plain git (signed with `gpg.format=ssh`, or not at all) and pushed to the remote; a refused
/// one stops Alice's sync with exit 5 and one line naming the commit, the signer and the rule,
/// and leaves her HEAD, tracking ref and working tree as they were.
final class SyncAccessTests: ConcordTestCase {
    func testAnUnsignedCommitIsRefused() throws {
        let team = try makeAccessTeam()
        let commit = try pushWithGit(team, signedWith: nil) { clone in
            try replace("\"puzzle\"", with: "\"unsigned\"", in: try recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertRefused(team, commit: commit, mentions: ["by Tester", "not signed"])
    }

    func testACommitSignedByAnUnknownKeyIsRefused() throws {
        let team = try makeAccessTeam()
        let stranger = sandbox.appendingPathComponent("stranger_key")
        _ = try GitSigning.makeKey(at: stranger, comment: "mallory@laptop", environment: environment())
        let commit = try pushWithGit(team, signedWith: stranger) { clone in
            try replace("\"puzzle\"", with: "\"stranger\"", in: try recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertRefused(team, commit: commit, mentions: ["by an unknown key (SHA256:", "no member"])
    }

    func testAViewerWritingVocabularyIsRefused() throws {
        let team = try makeAccessTeam()
        let commit = try pushWithGit(team, signedWith: team.vera.keyFile) { clone in
            try replace("\"puzzle\"", with: "\"viewer was here\"", in: try recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertRefused(team, commit: commit, mentions: ["by vera@tablet changes vocabulary/puzzle: Viewers may not write vocabulary"])
    }

    func testAViewerMakingThemselvesAdminIsRefused() throws {
        let team = try makeAccessTeam()
        let commit = try pushWithGit(team, signedWith: team.vera.keyFile) { clone in
            try editMember("vera", in: clone) { $0["role"] = "admin" }
        }
        try assertRefused(team, commit: commit,
                          mentions: ["by vera@tablet changes .concord/members/vera.json", "only add or remove their own device keys"])
    }

    func testAnEditorEditingTheKindsIsRefused() throws {
        let team = try makeAccessTeam()
        let commit = try pushWithGit(team, signedWith: team.eddie.keyFile) { clone in
            let kinds = clone.appendingPathComponent(".concord/kinds.json")
            let text = try String(contentsOf: kinds, encoding: .utf8)
            // Settings become writable by editors (the generated .gitattributes does not change with writers).
            let edited = text.replacingOccurrences(of: #""name": "settings",\#n      "policy": "lww",\#n      "writers": "admin""#,
                                                   with: #""name": "settings",\#n      "policy": "lww",\#n      "writers": "editor""#)
            XCTAssertNotEqual(edited, text, "kinds.json as written: \(text)")
            try Data(edited.utf8).write(to: kinds)
        }
        try assertRefused(team, commit: commit, mentions: ["by eddie@laptop changes .concord/kinds.json", "only Admins", "eddie is Editor"])
    }

    /// A log only grows, and a member adds only entries of their own: a User rewriting another's
    /// entry, or adding one in someone else's name, is refused.
    func testALogEntryMayNotBeRewrittenOrAddedInAnothersName() throws {
        let team = try makeAccessTeam()
        let line = { (by: String, id: String, symbol: String) in
            #"{"at":"2026-01-01T10:00:00.000Z-0000","by":"\#(by)","data":{"symbol":"\#(symbol)"},"device":"tablet","id":"\#(id)"}"# + "\n"
        }
        let day = "logs/2026-01-01.jsonl"
        let first = try pushWithGit(team, signedWith: team.uma.keyFile) { clone in
            try FileManager.default.createDirectory(at: clone.appendingPathComponent("logs"), withIntermediateDirectories: true)
            try Data(line("uma", "tap1", "puzzle").utf8).write(to: clone.appendingPathComponent(day))
        }
        try assertAccepted(team, commit: first)
        let rewritten = try pushWithGit(team, signedWith: team.uma.keyFile) { clone in
            try Data(line("uma", "tap1", "cookie").utf8).write(to: clone.appendingPathComponent(day))
        }
        try assertRefused(team, commit: rewritten, mentions: ["by uma@tablet", "a log only grows"])
        try gitOK(["update-ref", "refs/heads/main", first], in: team.remote.bare)
        let impersonated = try pushWithGit(team, signedWith: team.uma.keyFile) { clone in
            try Data((line("uma", "tap1", "puzzle") + line("vera", "tap2", "cookie")).utf8).write(to: clone.appendingPathComponent(day))
        }
        try assertRefused(team, commit: impersonated, mentions: ["by uma@tablet", "uma may only add entries of their own; this adds one by vera"])
    }

    func testAUserMayAppendToALogButNotWriteSettings() throws {
        let team = try makeAccessTeam()
        let logged = try pushWithGit(team, signedWith: team.uma.keyFile) { clone in
            let day = clone.appendingPathComponent("logs/2026-01-01.jsonl")
            try FileManager.default.createDirectory(at: day.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data((#"{"at":"2026-01-01T10:00:00.000Z-0000","by":"uma","data":{"symbol":"puzzle"},"device":"tablet","id":"tap1"}"# + "\n").utf8)
                .write(to: day)
        }
        try assertAccepted(team, commit: logged)

        let settings = try pushWithGit(team, signedWith: team.uma.keyFile) { clone in
            try replace("\"blue\"", with: "\"red\"", in: try recordFile("settings", "theme", in: clone))
        }
        try assertRefused(team, commit: settings, mentions: ["by uma@tablet changes settings/theme: Users may not write settings"])
    }

    func testAMemberMayAddTheirOwnDeviceKeyButNotAnothers() throws {
        let team = try makeAccessTeam()
        let phoneFile = sandbox.appendingPathComponent("uma_phone")
        let phoneKey = try GitSigning.makeKey(at: phoneFile, comment: "uma@phone", environment: environment())
        // With the key's proof of possession (format 5: KeyProofTests), made by its holder.
        let proof = try self.proof(signedBy: phoneFile, profileID: try profileID(of: team.aliceProfile), member: "uma", key: phoneKey)
        let own = try pushWithGit(team, signedWith: team.uma.keyFile) { clone in
            try addKey(phoneKey, device: "phone", proof: proof, to: "uma", in: clone)
        }
        try assertAccepted(team, commit: own)
        XCTAssertTrue(try concordOK(["members"], as: team.alice, in: team.aliceProfile).contains("phone"))

        let others = try pushWithGit(team, signedWith: team.uma.keyFile) { clone in
            try editMember("vera", in: clone) { member in
                member["keys"] = (member["keys"] as? [Any] ?? []) + [["device": "phone", "publicKey": phoneKey]]
            }
        }
        try assertRefused(team, commit: others, mentions: ["by uma@tablet changes .concord/members/vera.json", "only Admins may change another member"])
    }

    /// Alice revokes Eddie with a commit of her own (plain git, signed with her key); Eddie's next
    /// commit, on top of it, is refused: he is judged by the membership just before his commit.
    func testARevokedMembersCommitIsRefused() throws {
        let team = try makeAccessTeam()
        let revocation = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try editMember("eddie", in: clone) { $0["status"] = "revoked" }
        }
        try assertAccepted(team, commit: revocation)
        let commit = try pushWithGit(team, signedWith: team.eddie.keyFile) { clone in
            try replace("\"puzzle\"", with: "\"still here\"", in: try recordFile("vocabulary", "puzzle", in: clone))
        }
        try assertRefused(team, commit: commit, mentions: ["by eddie@laptop", "eddie is revoked, not an active member"])
    }

    /// A revoked member's branch forked before the revocation: its own commit was valid when made,
    /// but the merge that would bring it in is signed by someone revoked in the merged membership.
    func testARevokedMembersMergeOfABranchForkedBeforeTheRevocationIsRefused() throws {
        let team = try makeAccessTeam()
        let fork = try eddiesFork(team, relabelling: "forked", message: "before the revocation")
        let revocation = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try editMember("eddie", in: clone) { $0["status"] = "revoked" }
        }
        try assertAccepted(team, commit: revocation)
        try gitOK(["pull", "--quiet", "--no-rebase", "--no-edit"], in: fork)
        try gitOK(GitSigning.options(keyFile: team.eddie.keyFile.path) + ["commit", "--amend", "-S", "--no-edit", "--quiet"], in: fork)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "--merges", "HEAD~1..HEAD"], in: fork), "1", "the fork's tip is a merge")
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        let merge = try gitOK(["rev-parse", "HEAD"], in: fork)
        try assertRefused(team, commit: merge, mentions: ["by eddie@laptop", "eddie is revoked in the merged membership"])
    }

    /// An editor's edit and a merge of concurrent work pass; `concord verify` then checks the
    /// whole history, and `git verify-commit` still accepts every concord commit.
    func testAllowedChangesPassAndVerifyChecksTheWholeHistory() throws {
        let team = try makeAccessTeam()
        let eddieProfile = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        try concordOK(["put", "vocabulary/cookie", "--json", #"{"label":"cookie"}"#], as: team.eddie, in: eddieProfile)
        try concordOK(["put", "settings/theme", "--json", #"{"color":"green"}"#], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        // Eddie (an Editor) merges Alice's settings change: a merge may carry what its other parent changed.
        try concordOK(["sync"], as: team.eddie, in: eddieProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(try revParse("HEAD", in: team.aliceProfile), try revParse("HEAD", in: eddieProfile))
        XCTAssertEqual(try gitOK(["rev-list", "--merges", "--count", "HEAD"], in: team.aliceProfile), "1", "Eddie's sync merged")

        let count = try gitOK(["rev-list", "--count", "HEAD"], in: team.aliceProfile)
        XCTAssertEqual(try concordOK(["verify"], as: team.alice, in: team.aliceProfile), "\(count) commits verified")
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(concordOK(["verify", "--json"], as: team.alice, in: team.aliceProfile).utf8))
                                 as? [String: Any])
        XCTAssertEqual(json["verified"] as? Int, Int(count))
        XCTAssertEqual(json["head"] as? String, try revParse("HEAD", in: team.aliceProfile))
        for commit in try gitOK(["rev-list", "HEAD"], in: team.aliceProfile).split(separator: "\n") {
            try gitOK(["verify-commit", String(commit)], in: team.aliceProfile)
        }
    }

    /// `concord verify` runs the same check on the local history: a commit made by hand here,
    /// unsigned, is named (exit 5), and `--json` says so too.
    func testVerifyNamesTheFirstInvalidCommitInTheLocalHistory() throws {
        let team = try makeAccessTeam()
        try replace("\"puzzle\"", with: "\"by hand\"", in: try recordFile("vocabulary", "puzzle", in: team.aliceProfile))
        try gitOK(["commit", "--quiet", "--no-gpg-sign", "-am", "hand edit"], in: team.aliceProfile)
        let commit = try revParse("HEAD", in: team.aliceProfile)
        let result = try concord(["verify"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(result, status: 5, mentions: [String(commit.prefix(7)), "by Tester", "not signed"])
        let json = try concord(["verify", "--json"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(json.status, 5)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: json.stdoutData) as? [String: Any])
        XCTAssertTrue((object["error"] as? String)?.contains(String(commit.prefix(7))) == true, json.stdout)
    }

    // MARK: Rule 3: a merge is judged against the policy merge of its parents, recomputed

    /// A User's merge made with `git merge -s ours` keeps only their side of a log day: the policy
    /// merge holds both entries, the merge drops Alice's, so it is refused (a log only grows).
    func testAMergeThatDropsAnotherMembersLogEntriesIsRefused() throws {
        let team = try makeAccessTeam()
        let line = { (by: String, id: String) in
            #"{"at":"2026-01-01T10:00:00.000Z-0000","by":"\#(by)","data":{"symbol":"puzzle"},"device":"tablet","id":"\#(id)"}"# + "\n"
        }
        let day = "logs/2026-01-01.jsonl"
        let fork = sandbox.appendingPathComponent("uma-fork")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, fork.path])
        let alices = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try FileManager.default.createDirectory(at: clone.appendingPathComponent("logs"), withIntermediateDirectories: true)
            try Data(line("alice", "a1").utf8).write(to: clone.appendingPathComponent(day))
        }
        try assertAccepted(team, commit: alices)
        try FileManager.default.createDirectory(at: fork.appendingPathComponent("logs"), withIntermediateDirectories: true)
        try Data(line("uma", "u1").utf8).write(to: fork.appendingPathComponent(day))
        let signing = GitSigning.options(keyFile: team.uma.keyFile.path)
        try gitOK(["add", "-A"], in: fork)
        try gitOK(signing + ["commit", "-S", "--quiet", "-m", "uma's tap"], in: fork)
        try gitOK(["fetch", "--quiet", "origin"], in: fork)
        try gitOK(signing + ["merge", "-S", "--quiet", "-s", "ours", "--no-edit", "origin/main"], in: fork)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        let merge = try gitOK(["rev-parse", "HEAD"], in: fork)
        try assertRefused(team, commit: merge, mentions: ["by uma@tablet", "logs/", "a log only grows"])
    }

    /// An Editor's merge that slips a settings change in (beyond what either parent had) is refused.
    func testAMergeThatAddsAChangeTheSignerMayNotMakeIsRefused() throws {
        let team = try makeAccessTeam()
        let fork = try eddiesFork(team, relabelling: "jigsaw", message: "eddie's edit")
        let signing = GitSigning.options(keyFile: team.eddie.keyFile.path)
        let alices = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try FileManager.default.createDirectory(at: clone.appendingPathComponent("logs"), withIntermediateDirectories: true)
            try Data(#"{"at":"2026-01-01T10:00:00.000Z-0000","by":"alice","data":{},"device":"laptop","id":"a1"}"#.utf8 + [0x0A])
                .write(to: clone.appendingPathComponent("logs/2026-01-01.jsonl"))
        }
        try assertAccepted(team, commit: alices)
        try gitOK(["pull", "--quiet", "--no-rebase", "--no-commit", "origin", "main"], in: fork)
        try replace(#""color": "blue""#, with: #""color": "black""#, in: try recordFile("settings", "theme", in: fork))
        try gitOK(["add", "-A"], in: fork)
        try gitOK(signing + ["commit", "-S", "--quiet", "--no-edit"], in: fork)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "--merges", "HEAD~1..HEAD"], in: fork), "1", "the fork's tip is a merge")
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        let merge = try gitOK(["rev-parse", "HEAD"], in: fork)
        try assertRefused(team, commit: merge, mentions: ["by eddie@laptop", "settings/theme", "Editors may not write settings"])
    }

    /// Concurrent edits of one record by an Editor and the Admin: the Editor's concord merge resolves
    /// them by the lww policy, which every device recomputes to the same tree, so it is taken.
    func testAnEditorsPolicyMergeOfAConflictIsAccepted() throws {
        let team = try makeAccessTeam()
        let eddieProfile = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"alice's"}"#], as: team.alice, in: team.aliceProfile,
                      clock: "2099-01-01T10:00:00.000Z")
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"eddie's"}"#], as: team.eddie, in: eddieProfile,
                      clock: "2099-01-01T11:00:00.000Z")
        let synced = try syncJSON(team.eddie, in: eddieProfile)
        XCTAssertTrue(synced.movedAnything)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "--merges", "-1", "HEAD"], in: eddieProfile), "1", "Eddie merged")
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(try revParse("HEAD", in: team.aliceProfile), try revParse("HEAD", in: eddieProfile))
        XCTAssertTrue(try concordOK(["get", "vocabulary/puzzle"], as: team.alice, in: team.aliceProfile).contains("eddie's"))
    }

    /// A commit whose Concord-Actor trailer names someone other than its signer is a member acting on
    /// the signer's device (`concord switch`): it is judged as that member with the lower of the two
    /// roles, may write records and logs only, and the acting member must be active. Eddie (Editor)
    /// acting for Vera (Viewer) may not edit vocabulary; for a stranger, nothing; for Alice (Admin),
    /// no member file, and vocabulary only as an Editor may.
    func testACommitForAnotherMemberIsJudgedByTheLowerRole() throws {
        let team = try makeAccessTeam()
        func byEddie(for actor: String, _ edit: @escaping (URL) throws -> Void) throws -> String {
            try pushWithGit(team, signedWith: team.eddie.keyFile,
                            message: "by hand\n\nConcord-Actor: \(actor)\nConcord-Device: laptop\nConcord-Action: updated", edit)
        }
        let editVocabulary: (URL) throws -> Void = { clone in
            try self.replace(#""label": "puzzle""#, with: #""label": "jigsaw""#, in: try self.recordFile("vocabulary", "puzzle", in: clone))
        }
        // Each refused commit is taken off the remote's main again, so the next is judged on its own.
        let published = try XCTUnwrap(try remoteMain(team.remote))
        func refused(_ commit: String, _ mentions: [String]) throws {
            try assertRefused(team, commit: commit, mentions: mentions)
            try gitOK(["update-ref", "refs/heads/main", published], in: team.remote.bare)
        }
        try refused(try byEddie(for: "vera", editVocabulary), ["by eddie@laptop", "Viewers may not write vocabulary"])
        try refused(try byEddie(for: "mallory", editVocabulary), ["by eddie@laptop", "Concord-Actor trailer names mallory, who is not an active member"])
        // Two Concord-Actor trailers (git's %(trailers) would show both names): refused.
        try refused(try byEddie(for: "eddie\nConcord-Actor: alice", editVocabulary), ["by eddie@laptop", "it has 2 Concord-Actor trailers"])
        try refused(try byEddie(for: "alice") { clone in
            try self.editMember("vera", in: clone) { $0["role"] = "admin" }
        }, ["by eddie@laptop", "acting for alice on eddie's device, a commit writes records and logs only"])
        try refused(try byEddie(for: "alice") { clone in
            try self.replace(#""color": "blue""#, with: #""color": "red""#, in: try self.recordFile("settings", "theme", in: clone))
        }, ["by eddie@laptop", "Editors may not write settings"])
        try assertAccepted(team, commit: try byEddie(for: "alice", editVocabulary))
        let log = try concordOK(["log", "--json", "--limit", "1"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(log.contains(#""member": "alice""#) && log.contains(#""signedBy": "eddie""#), log)
    }

    /// Eddie's fork (`eddiesFork`) with vocabulary/puzzle relabelled `label` in his own name, committed
    /// there as `message` and signed with his key; not pushed.
    private func eddiesFork(_ team: AccessTeam, relabelling label: String, message: String) throws -> URL {
        let fork = try eddiesFork(team)
        try replace(#""label": "puzzle""#, with: #""label": "\#(label)""#, in: try recordFile("vocabulary", "puzzle", in: fork))
        try stamp(try recordFile("vocabulary", "puzzle", in: fork), as: "eddie")
        try gitOK(GitSigning.options(keyFile: team.eddie.keyFile.path) + ["commit", "-S", "--quiet", "-am", message], in: fork)
        return fork
    }
}
