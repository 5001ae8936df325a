import ConcordTestSupport
import Foundation
import XCTest

/// A malicious member with plain git, their own key and a copy of old history (issue 31): merges
/// are judged by what merging their parents must give, never by the parent their signer put first;
/// a key stays with its member; a log entry is its author's. Each attack is pushed to a path remote
/// as the attacker would push it, and Alice's sync must refuse it: exit 5, one line naming the
/// commit, the signer and the rule, nothing of hers changed.
final class MemberAttackTests: ConcordTestCase {
    /// Alice promotes Eddie to Admin, and later demotes him to Viewer. Eddie, keeping a copy from
    /// before the demotion, signs a merge whose first parent is that old commit and whose second is
    /// main, setting himself back to Admin: refused. Made with main first, as an attacker who knows the
    /// mainline rule makes it, the same merge — or, as the Viewer he now is, one changing a
    /// vocabulary record — is refused by the merge rule: judged by merging its parents, he is a Viewer.
    func testADemotedAdminsMergeOnAnOldFirstParentIsRefused() throws {
        let (team, fork) = try eddieAsAdminWithAFork()
        let demotion = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try editMember("eddie", in: clone) { $0["role"] = "viewer" }
        }
        try assertAccepted(team, commit: demotion)
        let signing = GitSigning.options(keyFile: team.eddie.keyFile.path)
        try gitOK(["fetch", "--quiet", "origin"], in: fork)
        let old = try gitOK(["rev-parse", "HEAD"], in: fork)
        func reset() throws {
            try gitOK(["update-ref", "refs/heads/main", demotion], in: team.remote.bare)
            try gitOK(["reset", "--quiet", "--hard", old], in: fork)
        }

        // 1. Back to Admin through a merge that puts his old copy first: refused (judged with its
        // first parent as the main line, the merge changes what merging its parents gives).
        let forkFirst = try mergeWithGit(in: fork, "origin/main", signedWith: team.eddie.keyFile) {
            try self.editMember("eddie", in: $0) { $0["role"] = "admin" }
        }
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD^1"], in: fork), old, "the first parent is from before the demotion")
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        try assertRefused(team, commit: forkFirst, mentions: ["by eddie@laptop changes .concord/members/eddie.json"])

        // 2. The same, main first: refused by the merge rule.
        try reset()
        let promoted = try mergeWithGit(in: fork, demotion, signedWith: team.eddie.keyFile, mainFirst: true) {
            try self.editMember("eddie", in: $0) { $0["role"] = "admin" }
        }
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD^1"], in: fork), demotion)
        try gitOK(["push", "--quiet", "--force", "origin", "HEAD:main"], in: fork)
        try assertRefused(team, commit: promoted, mentions: ["by eddie@laptop changes .concord/members/eddie.json",
                                                             "a merge changes member and invitation files only as merging its parents does"])

        // 3. A vocabulary edit in the merge, beyond what either parent had.
        try reset()
        let edited = try mergeWithGit(in: fork, demotion, signedWith: team.eddie.keyFile, mainFirst: true) { fork in
            try self.replace(#""label": "puzzle""#, with: #""label": "demoted""#, in: try self.recordFile("vocabulary", "puzzle", in: fork))
        }
        try gitOK(["push", "--quiet", "--force", "origin", "HEAD:main"], in: fork)
        try assertRefused(team, commit: edited, mentions: ["by eddie@laptop changes vocabulary/puzzle", "Viewers may not write vocabulary"])

        // 4. The policy merge itself, main first and signed by the demoted Viewer, is taken: nothing in it is his to choose.
        try reset()
        let merged = try gitOK(["merge-tree", "--write-tree", demotion, old], in: fork)
        let policy = try gitOK(signing + ["commit-tree", "-S", merged, "-p", demotion, "-p", old, "-m", "merge"], in: fork)
        try gitOK(["push", "--quiet", "--force", "origin", "\(policy):refs/heads/main"], in: fork)
        try assertAccepted(team, commit: policy)
        XCTAssertTrue(try concordOK(["members"], as: team.alice, in: team.aliceProfile).contains("viewer"))
    }

    /// Eddie, an Admin, keeps a copy from before Alice revokes him and adds an alias there,
    /// `eddie2 --role admin` (valid at that parent, signed by Eddie). He then merges main, revocation
    /// included, signed by eddie2, main first. Replayed on the main line, his addition of eddie2
    /// arrives after his revocation and falls: eddie2 is no member, and the merge keeping his file is
    /// refused. A policy merge an honest member makes of the same two parents (`concord merge`)
    /// tells Alice the addition does not count, keeps eddie2's file revoked with no keys, and is
    /// taken everywhere.
    func testARevokedAdminsAliasMadeOnAnOldForkFallsWithHim() throws {
        let (team, fork) = try eddieAsAdminWithAFork()
        let revocation = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try editMember("eddie", in: clone) { $0["status"] = "revoked" }
        }
        try assertAccepted(team, commit: revocation)
        let aliasKeyFile = sandbox.appendingPathComponent("eddie2_key")
        let aliasKey = try GitSigning.makeKey(at: aliasKeyFile, comment: "eddie2@laptop", environment: environment())
        let alias = try commitWithGit(in: fork, signedWith: team.eddie.keyFile, message: "add eddie2") { clone in
            try self.writeActiveMember("eddie2", role: "admin", publicKey: aliasKey, addedBy: "eddie", in: clone)
        }
        try gitOK(["fetch", "--quiet", "origin"], in: fork)
        let merge = try mergeWithGit(in: fork, revocation, signedWith: aliasKeyFile, mainFirst: true)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        XCTAssertEqual(try gitOK(["rev-parse", "HEAD^2"], in: fork), alias)
        try assertRefused(team, commit: merge, mentions: ["by eddie2@laptop"])

        // Alice's own merge of the alias commit (`concord merge`): eddie2's addition does not count.
        try gitOK(["update-ref", "refs/heads/main", revocation], in: team.remote.bare)
        try gitOK(["fetch", "--quiet", fork.path, alias], in: team.aliceProfile)
        let told = try concordOK(["merge", alias], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(told.contains("does not count"), told)
        // The file stays, as the format keeps member files, but admits nobody: revoked, with no keys.
        let aliasFile = try String(contentsOf: team.aliceProfile.appendingPathComponent(".concord/members/eddie2.json"), encoding: .utf8)
        XCTAssertTrue(aliasFile.contains(#""status": "revoked""#), aliasFile)
        XCTAssertFalse(aliasFile.contains("ssh-ed25519"), aliasFile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let umaProfile = try cloneProfile(team.uma, from: team.remote, into: "uma")
        XCTAssertEqual(try revParse("HEAD", in: umaProfile), try revParse("HEAD", in: team.aliceProfile))
        try concordOK(["verify"], as: team.uma, in: umaProfile)
    }

    /// A merge of three parents is refused, whoever signs it: concord never makes one, and judging one
    /// against a parent its signer picked is what let authority through.
    func testAnOctopusMergeIsRefused() throws {
        let team = try makeAccessTeam()
        let clone = sandbox.appendingPathComponent("octopus")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, clone.path])
        fsckAtEnd.append(clone)
        let octopus = try octopusWithGit(in: clone, signedWith: team.alice.keyFile)
        try gitOK(["push", "--quiet", "origin", "\(octopus):refs/heads/main"], in: clone)
        try assertRefused(team, commit: octopus, mentions: ["by alice@laptop", "merges 3 parents"])
    }

    /// A Viewer lists Alice's public key as a device of their own: from then on Alice's key would
    /// resolve to the Viewer, and Alice's revocation of them would be refused everywhere. Refused,
    /// as is giving a revoked member's key to another.
    func testAMemberCannotTakeAnotherMembersKey() throws {
        let team = try makeAccessTeam()
        let taken = try pushWithGit(team, signedWith: team.vera.keyFile) { clone in
            try editMember("vera", in: clone) { member in
                member["keys"] = (member["keys"] as? [Any] ?? []) + [["device": "stolen", "publicKey": team.alice.publicKeyLine]]
            }
        }
        try assertRefused(team, commit: taken, mentions: ["by vera@tablet changes .concord/members/vera.json", "of alice's device laptop",
                                                          "a key belongs to one member"])
        // Nor may an Admin hand one member's key to another.
        try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: team.aliceProfile)], in: team.remote.bare)
        let handed = try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try editMember("uma", in: clone) { member in
                member["keys"] = (member["keys"] as? [Any] ?? []) + [["device": "shared", "publicKey": team.eddie.publicKeyLine]]
            }
        }
        try assertRefused(team, commit: handed, mentions: ["by alice@laptop changes .concord/members/uma.json", "of eddie's device laptop"])
        // Alice's revocation of Vera still goes through afterwards, signed by Alice.
        try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: team.aliceProfile)], in: team.remote.bare)
        try concordOK(["revoke", "vera"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
    }

    /// Eddie (Editor) writes vocabulary/puzzle with plain git, its stamp naming Alice and its
    /// Concord-Clock matching nothing; Alice, offline, edits the label later and merges: the lost
    /// write is reported as Eddie's, from the commit that introduced it. Then Eddie's later write,
    /// stamped as Uma's, wins over Alice's next edit: the winner reported is Eddie, not Uma. Names
    /// in stamps and clock trailers are their writer's choice; who made a write is the checked
    /// author of the commit that introduced it.
    func testALostWriteIsItsCommitsAuthorsWhateverItsStampSays() throws {
        let team = try makeAccessTeam()
        func forge(label: String, by name: String, device: String, at stamp: String, clock: String) throws -> String {
            try pushWithGit(team, signedWith: team.eddie.keyFile,
                            message: "vocabulary/puzzle: updated\n\nConcord-Actor: eddie\nConcord-Device: laptop\nConcord-Clock: \(clock)") { clone in
                let file = try recordFile("vocabulary", "puzzle", in: clone)
                var text = try String(contentsOf: file, encoding: .utf8)
                for (field, value) in [("label", label), ("updatedAt", stamp), ("updatedBy", name), ("device", device)] {
                    let range = try XCTUnwrap(text.range(of: #""\#(field)": "[^"]*""#, options: .regularExpression), field)
                    text.replaceSubrange(range, with: #""\#(field)": "\#(value)""#)
                }
                try text.write(to: file, atomically: true, encoding: .utf8)
            }
        }
        func lost() throws -> [[String: Any]] {
            let text = try concordOK(["conflicts", "--json"], as: team.alice, in: team.aliceProfile)
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]], text)
        }
        let forged = try forge(label: "eddie's", by: "eddie", device: "laptop", at: "2026-01-01T09:00:00.000Z-0000",
                               clock: "2020-01-01T00:00:00.000Z-0000")
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"alice's"}"#], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        var entries = try lost()
        XCTAssertEqual(entries.count, 1, "\(entries)")
        var loser = try XCTUnwrap(entries.first?["loser"] as? [String: Any])
        XCTAssertEqual(loser["member"] as? String, "eddie", "\(entries)")
        XCTAssertEqual(loser["commit"] as? String, forged, "\(entries)")
        XCTAssertTrue(try concordOK(["conflicts", "--mine"], as: team.alice, in: team.aliceProfile).contains("no lost writes match"))

        // Eddie's next write, stamped an hour ahead as Uma's, is refused (format 7: a stamp names its
        // signer); stamped an hour ahead on a device he does not have, it beats Alice's concurrent edit.
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let ahead = formatter.string(from: Date().addingTimeInterval(3_600)) + "-0000"
        let asUma = try forge(label: "eddie's again", by: "uma", device: "tablet", at: ahead, clock: ahead)
        try assertRefused(team, commit: asUma, mentions: ["by eddie@laptop changes vocabulary/puzzle", "in uma's name, but eddie signed it"])
        try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: team.aliceProfile)], in: team.remote.bare)
        try forge(label: "eddie's again", by: "eddie", device: "tablet", at: ahead, clock: ahead)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"alice's again"}"#], as: team.alice, in: team.aliceProfile)
        let told = try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertTrue(told.contains("your edit of vocabulary/puzzle (label) lost to eddie's edit"), told)
        let all = try lost()
        entries = all.filter { ($0["loser"] as? [String: Any])?["member"] as? String == "alice" }
        XCTAssertEqual(entries.count, 1, "\(all)")
        let winner = try XCTUnwrap(entries.first?["winner"] as? [String: Any])
        XCTAssertEqual(winner["member"] as? String, "eddie", "\(entries)")
        loser = try XCTUnwrap(entries.first?["loser"] as? [String: Any])
        XCTAssertEqual(loser["commit"] as? String, try gitOK(["rev-parse", "HEAD^2"], in: team.aliceProfile), "alice's own commit (her sync's merge puts the remote's main first)")
    }

    /// Uma (User) appends an entry of her own carrying the id of Alice's entry, stamped earlier.
    /// Alice, who appended on the same day meanwhile, merges: both entries stay (an entry is its
    /// author's id), where one entry per id kept Uma's and lost Alice's. An entry whose `by` is not
    /// its signer is refused, an Admin's included; one author's id twice in a log file is refused.
    func testALogEntryIsItsAuthorsAndNobodyShadowsAnother() throws {
        let team = try makeAccessTeam()
        let day = Self.logDay
        func append(_ by: String, _ id: String, _ time: String, _ text: String) -> (URL) throws -> Void {
            appendLogEntry(by: by, id: id, at: time, text: text)
        }
        try assertAccepted(team, commit: try pushWithGit(team, signedWith: team.alice.keyFile, append("alice", "q1", "10:00:00", "question")))
        try pushWithGit(team, signedWith: team.uma.keyFile, append("uma", "q1", "09:00:00", "forged"))
        // Alice's own entry of that day, committed on her device (with plain git: her clock is months later).
        try commitWithGit(in: team.aliceProfile, signedWith: team.alice.keyFile, append("alice", "a2", "11:00:00", "local"))
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "--merges", "-1", "HEAD"], in: team.aliceProfile), "1", "Alice merged")
        let file = try String(contentsOf: team.aliceProfile.appendingPathComponent(day), encoding: .utf8)
        for text in ["question", "forged", "local"] { XCTAssertTrue(file.contains(text), "\(text) in \(file)") }
        let merged = try revParse("HEAD", in: team.aliceProfile)

        let twice = try pushWithGit(team, signedWith: team.uma.keyFile, append("uma", "q1", "09:30:00", "again"))
        try assertRefusedAsInvalid(team, commit: twice, mentions: [day, "log entry q1 by uma appears twice"])
        try gitOK(["update-ref", "refs/heads/main", merged], in: team.remote.bare)
        let inUmasName = try pushWithGit(team, signedWith: team.alice.keyFile, append("uma", "u2", "11:30:00", "said by alice"))
        try assertRefused(team, commit: inUmasName, mentions: ["by alice@laptop", "alice may only add entries of their own"])
    }

    /// A refusal echoes names a remote chose (here an unsigned commit's author) with its control
    /// characters escaped: no escape sequence reaches the terminal.
    func testARefusalEscapesControlCharactersFromTheRemote() throws {
        let team = try makeAccessTeam()
        let clone = sandbox.appendingPathComponent("escapes")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, clone.path])
        fsckAtEnd.append(clone)
        try replace(#""label": "puzzle""#, with: #""label": "x""#, in: try recordFile("vocabulary", "puzzle", in: clone))
        try gitOK(["commit", "--no-gpg-sign", "--quiet", "--author", "evil\u{1B}]0;owned\u{07}\u{202E}name <e@example.com>", "-am", "x"], in: clone)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        let commit = try gitOK(["rev-parse", "HEAD"], in: clone)
        let result = try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(result, status: 5, mentions: [String(commit.prefix(7)), #"evil\u{1B}]0;owned\u{7}\u{202E}name"#])
        XCTAssertFalse(result.stderr.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x202E })
    }

    /// Plain git's view keeps a revoked member's keys, valid only before the revocation, so `git
    /// verify-commit` still accepts their earlier commits; `concord log` reads each commit against
    /// the membership it was judged by, so a member who left (their keys removed) still signed
    /// theirs, and a commit whose author field names someone its key does not belong to is the key's.
    func testRevokedAndDepartedMembersEarlierCommitsStillVerify() throws {
        let team = try makeAccessTeam()
        let eddieProfile = try cloneProfile(team.eddie, from: team.remote, into: "eddie")
        try concordOK(["put", "vocabulary/cookie", "--json", #"{"label":"cookie"}"#], as: team.eddie, in: eddieProfile)
        try concordOK(["sync"], as: team.eddie, in: eddieProfile)
        let eddies = try revParse("HEAD", in: eddieProfile)
        let umaProfile = try cloneProfile(team.uma, from: team.remote, into: "uma")
        try concordOK(["append", "logs", "--json", #"{"symbol":"puzzle"}"#], as: team.uma, in: umaProfile)
        try concordOK(["leave"], as: team.uma, in: umaProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile)
        try gitOK(["verify-commit", eddies], in: team.aliceProfile)
        let log = try concordOK(["log"], as: team.alice, in: team.aliceProfile)
        let umaLines = log.split(separator: "\n").filter { $0.contains("uma@") }
        XCTAssertFalse(umaLines.isEmpty, log)
        for line in umaLines { XCTAssertTrue(line.contains("[signature: good]"), String(line)) }
        // A commit authored as alice but signed by Vera's key is Vera's.
        let clone = sandbox.appendingPathComponent("forged-author")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, clone.path])
        fsckAtEnd.append(clone)
        try gitOK(GitSigning.options(keyFile: team.vera.keyFile.path)
                  + ["commit", "-S", "--allow-empty", "--quiet", "--author", "alice <alice@example.com>", "-m", "said by alice"], in: clone)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertFalse(try concordOK(["log", "--member", "alice"], as: team.alice, in: team.aliceProfile).contains("said by alice"))
        XCTAssertTrue(try concordOK(["log", "--member", "vera"], as: team.alice, in: team.aliceProfile).contains("vera@"))
    }

    /// A device never publishes what it would refuse: an unsigned commit made with plain git in
    /// Alice's copy stops her sync (exit 5, nothing sent); set aside as docs/sync.md says, the next
    /// sync goes through.
    func testASyncNeverPublishesACommitItWouldRefuse() throws {
        let team = try makeAccessTeam()
        let remoteBefore = try gitOK(["rev-parse", "refs/heads/main"], in: team.remote.bare)
        let unsigned = try commitWithGit(in: team.aliceProfile, signedWith: nil, message: "by hand") { profile in
            try replace(#""label": "puzzle""#, with: #""label": "unsigned""#, in: try recordFile("vocabulary", "puzzle", in: profile))
        }
        let result = try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(result, status: 5, mentions: ["this device's commit \(unsigned.prefix(7)) would be refused by every other device",
                                                           "not signed", "nothing was sent"])
        XCTAssertEqual(try gitOK(["rev-parse", "refs/heads/main"], in: team.remote.bare), remoteBefore, "nothing was pushed")
        try gitOK(["branch", "aside", "main"], in: team.aliceProfile)
        try gitOK(["reset", "--quiet", "--keep", "origin/main"], in: team.aliceProfile)
        try concordOK(["put", "vocabulary/puzzle", "--json", #"{"label":"signed"}"#], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        XCTAssertEqual(try gitOK(["rev-parse", "refs/heads/main"], in: team.remote.bare), try revParse("HEAD", in: team.aliceProfile))
        XCTAssertEqual(try gitOK(["rev-parse", "aside"], in: team.aliceProfile), unsigned, "the set-aside commit is kept")
    }

    /// Revocation is final on the revoked device: cloning the profile again says "access removed",
    /// exits 4 and leaves no copy.
    func testARevokedMembersCloneLeavesNoCopy() throws {
        let team = try makeAccessTeam()
        try concordOK(["revoke", "eddie"], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        let target = sandbox.appendingPathComponent("eddie-again")
        let result = try concordWithDeadline(["clone", team.remote.url, target.path], as: team.eddie, in: sandbox)
        assertOneLineRefusal(result, status: 4, mentions: ["access removed: alice revoked your access to"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "no copy is left")
    }

    /// The access team with Eddie promoted to Admin by Alice, and a plain git clone of that main:
    /// the copy Eddie keeps.
    private func eddieAsAdminWithAFork() throws -> (AccessTeam, URL) {
        let team = try makeAccessTeam()
        try assertAccepted(team, commit: try pushWithGit(team, signedWith: team.alice.keyFile) { clone in
            try editMember("eddie", in: clone) { $0["role"] = "admin" }
        })
        let fork = try eddiesFork(team)
        return (team, fork)
    }

    private func assertRefusedAsInvalid(_ team: AccessTeam, commit: String, mentions: [String],
                                        file: StaticString = #filePath, line: UInt = #line) throws {
        let before = try workTreeSnapshot(team.aliceProfile)
        let result = try concordWithDeadline(["sync"], as: team.alice, in: team.aliceProfile)
        assertOneLineRefusal(result, status: 5, mentions: ["invalid commit \(commit.prefix(7))"] + mentions, file: file, line: line)
        XCTAssertEqual(try workTreeSnapshot(team.aliceProfile), before, "HEAD, status and files unchanged", file: file, line: line)
    }
}
