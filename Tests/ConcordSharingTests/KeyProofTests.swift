import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// Only its holder adds a key (issue 31, format 5): every key a member adds to their own member file
/// carries a proof of possession, an SSHSIG by that key (namespace `concord-key`) over the profile id,
/// the member and the key. The proofs here are made with `ssh-keygen -Y sign` and checked with
/// `ssh-keygen -Y verify`: OpenSSH is the independent judge of what Concord writes and reads.
final class KeyProofTests: ConcordTestCase {
    /// Vera (a Viewer) adds a key to her own member file with plain git, signed with her key: without a
    /// proof, with a proof by another key, for another profile or for another member — each refused by
    /// Alice's sync (exit 5, one line naming the commit, the signer, the file, the device and the rule),
    /// in a plain commit and in a merge. With the key's own proof, made by ssh-keygen, it is taken.
    func testAKeyAddedToOnesOwnFileNeedsItsHoldersProof() throws {
        let team = try makeAccessTeam()
        let profileID = try self.profileID(of: team.aliceProfile)
        let phoneKey = sandbox.appendingPathComponent("vera_phone")
        let phone = try GitSigning.makeKey(at: phoneKey, comment: "vera@phone", environment: environment())
        let start = try revParse("HEAD", in: team.aliceProfile)
        let forged: [(proof: String?, mentions: String)] = [
            (nil, "it has no proof of possession"),
            (try proof(signedBy: team.alice.keyFile, profileID: profileID, member: "vera", key: phone), "signed by another key"),
            (try proof(signedBy: phoneKey, profileID: "another-profile", member: "vera", key: phone), "does not verify for this profile and member"),
            (try proof(signedBy: phoneKey, profileID: profileID, member: "alice", key: phone), "does not verify for this profile and member"),
        ]
        for (proof, mention) in forged {
            try gitOK(["update-ref", "refs/heads/main", start], in: team.remote.bare)
            let commit = try pushWithGit(team, signedWith: team.vera.keyFile) { clone in
                try self.addKey(phone, device: "phone", proof: proof, to: "vera", in: clone)
            }
            try assertRefused(team, commit: commit, mentions: ["by vera@tablet changes .concord/members/vera.json",
                                                               "adds device phone's key", mention, "proof of possession"])
        }

        // The same key without a proof, brought in by a merge Vera signs (a difference from the policy merge).
        try gitOK(["update-ref", "refs/heads/main", start], in: team.remote.bare)
        let fork = sandbox.appendingPathComponent("vera-fork")
        try gitOK(["clone", "--quiet", "--branch", "main", team.remote.bare.path, fork.path])
        fsckAtEnd.append(fork)
        try concordOK(["put", "vocabulary/ball", "--json", #"{"label":"ball"}"#], as: team.alice, in: team.aliceProfile)
        try concordOK(["sync"], as: team.alice, in: team.aliceProfile)
        try gitOK(["fetch", "--quiet", "origin"], in: fork)
        try gitOK(["merge", "--quiet", "--no-ff", "--no-commit", "origin/main"], in: fork)
        try addKey(phone, device: "phone", proof: nil, to: "vera", in: fork)
        try gitOK(["add", "-A"], in: fork)
        try gitOK(GitSigning.options(keyFile: team.vera.keyFile.path) + ["commit", "-S", "--quiet", "-m", "merge main"], in: fork)
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: fork)
        let merge = try gitOK(["rev-parse", "HEAD"], in: fork)
        XCTAssertEqual(try gitOK(["rev-list", "--parents", "-1", merge], in: fork).split(separator: " ").count, 3, "a merge commit")
        // (A merge changes no member file beyond its policy merge at all: that is what it is refused for.)
        try assertRefused(team, commit: merge, mentions: ["by vera@tablet changes .concord/members/vera.json",
                                                          "a merge changes member and invitation files only as merging its parents does"])

        // With the key's own proof (ssh-keygen's), the same commit is taken, and concord verify agrees.
        let synced = try revParse("HEAD", in: team.aliceProfile)
        try gitOK(["update-ref", "refs/heads/main", synced], in: team.remote.bare)
        let proven = try pushWithGit(team, signedWith: team.vera.keyFile) { clone in
            try self.addKey(phone, device: "phone", proof: try self.proof(signedBy: phoneKey, profileID: profileID, member: "vera", key: phone),
                            to: "vera", in: clone)
        }
        try assertAccepted(team, commit: proven)
        try concordOK(["verify"], as: team.alice, in: team.aliceProfile)
        // Carried over unchanged, the proof is not asked again: Vera's later commits pass.
        let later = try pushWithGit(team, signedWith: team.vera.keyFile) { clone in
            try self.editMember("vera", in: clone) { member in
                member["keys"] = (member["keys"] as? [[String: Any]] ?? []).filter { ($0["device"] as? String) != "tablet" }
            }
        }
        try assertAccepted(team, commit: later)
    }

    /// Every flow in which a key's holder adds it writes a proof that OpenSSH verifies: the creator's
    /// `init`, a device added with `devices add --proof`, and acceptances of a key invitation (the
    /// Admin's vouching replaced by the holder's proof), a link invitation and an open invitation. A
    /// key an Admin adds for another member (`members add`) carries none: the Admin's word.
    func testHonestFlowsWriteProofsOpenSSHVerifies() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let phone = try makeDevice("alice", device: "phone")
        let vera = try makeDevice("vera", device: "tablet")
        let remote = try makeRemote(.path)
        let profile = try publishProfile(owner: alice, remote: remote, directory: "alice", members: [(vera, "viewer")])
        let profileID = try self.profileID(of: profile)
        try concordOK(["devices", "add", "--name", "phone", "--key", phone.publicKeyLine, "--proof", try keyProof(of: phone, for: profile)],
                      as: alice, in: profile)
        // Without its proof, a key of one's own is refused before any commit, saying how to make one.
        let other = try makeDevice("alice", device: "spare")
        assertOneLineRefusal(try concord(["devices", "add", "--name", "spare", "--key", other.publicKeyLine], as: alice, in: profile),
                             mentions: ["proof of possession", "concord identity prove \(profileID)"])
        try concordOK(["sync"], as: alice, in: profile)

        let bob = try makeDevice("bob", device: "phone"), carol = try makeDevice("carol", device: "tablet")
        let dave = try makeDevice("dave", device: "laptop")
        let byKey = try share(["bob", "--role", "editor", "--key", bob.publicKeyLine], as: alice, in: profile)
        let byLink = try share(["carol", "--role", "user"], as: alice, in: profile)
        let open = try shareAndSync(["--open", "--role", "viewer", "--uses", "1"], as: alice, in: profile)
        XCTAssertNil(try memberFile("bob", in: profile)["keys"].flatMap { ($0 as? [[String: Any]])?.first?["proof"] },
                     "the key an Admin invited carries no proof until its holder accepts")
        for (invitation, device) in [(byKey, bob), (byLink, carol), (open, dave)] {
            try concordOK(["accept", invitation, sandbox.appendingPathComponent("\(device.member)-copy").path], as: device)
            fsckAtEnd.append(sandbox.appendingPathComponent("\(device.member)-copy"))
        }
        try concordOK(["sync"], as: alice, in: profile)
        try concordOK(["verify"], as: alice, in: profile)

        for (name, devices) in [("alice", [alice, phone]), ("bob", [bob]), ("carol", [carol]), ("dave", [dave])] {
            let keys = try XCTUnwrap(try memberFile(name, in: profile)["keys"] as? [[String: Any]])
            XCTAssertEqual(keys.count, devices.count, "\(name): \(keys)")
            for device in devices {
                let entry = try XCTUnwrap(keys.first { ($0["publicKey"] as? String).map(device.publicKeyLine.hasPrefix) ?? false }, "\(name)")
                let proof = try XCTUnwrap(entry["proof"] as? String, "\(name)@\(device.device) has a proof")
                try assertOpenSSHVerifies(proof, profileID: profileID, member: name, key: device.publicKeyLine)
            }
        }
        let veraKeys = try XCTUnwrap(try memberFile("vera", in: profile)["keys"] as? [[String: Any]])
        XCTAssertNil(veraKeys.first?["proof"], "a key an Admin added for another member is their word: no proof")
        // `members --json` tells a proven key from a vouched one.
        let listed = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try concordOK(["members", "--json"], as: alice, in: profile).utf8))
            as? [[String: Any]])
        func proven(_ name: String) -> [Bool] {
            (listed.first { $0["name"] as? String == name }?["devices"] as? [[String: Any]] ?? []).compactMap { $0["proven"] as? Bool }
        }
        XCTAssertEqual(proven("alice"), [true, true])
        XCTAssertEqual(proven("bob"), [true])
        XCTAssertEqual(proven("vera"), [false])
    }

    /// `concord upgrade` moves a format 4 profile to this build's format in one signed commit of
    /// profile.json, by an Admin only, and says so when run again. In format 4 a key may be added as
    /// before; from the upgrade on it needs its proof. A profile.json of the format after it is refused with what to do.
    func testUpgradeMovesAFormat4ProfileToThisBuildsFormatAndANewerOneIsRefused() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let vera = try makeDevice("vera", device: "tablet")
        let remote = try makeRemote(.path)
        // A format 4 profile, as an older concord made it: the first commit's profile.json at 4, re-signed by Alice.
        let profile = try publishOldFormatProfile(4, owner: alice, remote: remote, members: [(vera, "viewer")], currentFormat: concordFormatVersion)
        let team = AccessTeam(alice: alice, eddie: alice, uma: alice, vera: vera, remote: remote, aliceProfile: profile)

        // Format 4: Vera adds a key of her own without a proof, as before.
        let spareKey = sandbox.appendingPathComponent("vera_spare")
        let spare = try GitSigning.makeKey(at: spareKey, comment: "vera@spare", environment: environment())
        let unproven = try pushWithGit(team, signedWith: vera.keyFile) { clone in
            try self.addKey(spare, device: "spare", proof: nil, to: "vera", in: clone)
        }
        try assertAccepted(team, commit: unproven)

        let veraCopy = try cloneProfile(vera, from: remote, into: "vera")
        assertOneLineRefusal(try concord(["upgrade"], as: vera, in: veraCopy), mentions: ["vera is viewer", "upgrading the data format", "needs admin"])
        let before = try revParse("HEAD", in: profile)
        let upgraded = try concordOK(["upgrade", "--json"], as: alice, in: profile)
        XCTAssertTrue(upgraded.contains(#""from": 4"#) && upgraded.contains(#""to": \#(concordFormatVersion)"#), upgraded)
        XCTAssertEqual(try gitOK(["rev-list", "--count", "\(before)..HEAD"], in: profile), "1", "one commit")
        XCTAssertEqual(try gitOK(["diff", "--name-only", before, "HEAD"], in: profile), ".concord/profile.json")
        XCTAssertTrue(try concordOK(["upgrade"], as: alice, in: profile).contains("already format \(concordFormatVersion)"))
        try concordOK(["sync"], as: alice, in: profile)
        try concordOK(["sync"], as: vera, in: veraCopy)
        try concordOK(["verify"], as: vera, in: veraCopy)

        // This build's format (as from 5 on): the same kind of commit is refused.
        let laterKey = sandbox.appendingPathComponent("vera_later")
        let later = try GitSigning.makeKey(at: laterKey, comment: "vera@later", environment: environment())
        let refused = try pushWithGit(team, signedWith: vera.keyFile) { clone in
            try self.addKey(later, device: "later", proof: nil, to: "vera", in: clone)
        }
        try assertRefused(team, commit: refused, mentions: ["by vera@tablet", "adds device later's key", "no proof of possession"])

        // A profile.json of a format newer than this build's: refused with words, nothing merged.
        try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: profile)], in: remote.bare)
        let newer = try pushWithGit(team, signedWith: alice.keyFile) { clone in
            try self.replace(#""formatVersion": \#(concordFormatVersion)"#, with: #""formatVersion": \#(concordFormatVersion + 1)"#, in: clone.appendingPathComponent(".concord/profile.json"))
        }
        let result = try concord(["sync"], as: vera, in: veraCopy)
        assertOneLineRefusal(result, status: 5, mentions: [String(newer.prefix(7)), "data format \(concordFormatVersion + 1)", "upgrade concord"])
        // And a copy whose profile.json says 7 is not opened at all.
        try replace(#""formatVersion": \#(concordFormatVersion)"#, with: #""formatVersion": \#(concordFormatVersion + 1)"#, in: veraCopy.appendingPathComponent(".concord/profile.json"))
        assertOneLineRefusal(try concord(["ls"], as: vera, in: veraCopy),
                             mentions: ["this profile uses data format \(concordFormatVersion + 1) but this concord understands up to \(concordFormatVersion)", "upgrade concord"])
    }
}

/// The same through `concord serve`: its pre-receive refuses a key without its holder's proof, in a
/// plain commit and in a merge, pushed with plain git over a real sshd; the server stores nothing.
final class KeyProofServeTests: ConcordServeTestCase {
    func testThePreReceiveRefusesAKeyWithoutItsHoldersProof() throws {
        let alice = try makeDevice("alice", device: "laptop")
        let vera = try makeDevice("vera", device: "tablet")
        let host = try makeHost(admin: alice)
        let aliceProfile = try publish("kid", on: host, members: [(vera, "viewer")])
        let profileID = try self.profileID(of: aliceProfile)
        let ssh = try gitSSHEnvironment(vera, host: host)
        let clone = sandbox.appendingPathComponent("vera-git")
        try gitOK(["clone", "--quiet", host.url("kid"), clone.path], environment: ssh)
        fsckAtEnd.append(clone)
        let phoneKey = sandbox.appendingPathComponent("vera_phone")
        let phone = try GitSigning.makeKey(at: phoneKey, comment: "vera@phone", environment: environment())
        let start = try serverMain("kid", host: host)

        // Plain commits: the key with no proof, one by another key, one for another profile, one for another member.
        let forgeries: [(proof: String?, mention: String)] = [
            (nil, "it has no proof of possession"),
            (try proof(signedBy: vera.keyFile, profileID: profileID, member: "vera", key: phone), "signed by another key"),
            (try proof(signedBy: phoneKey, profileID: "another-profile", member: "vera", key: phone), "does not verify for this profile and member"),
            (try proof(signedBy: phoneKey, profileID: profileID, member: "alice", key: phone), "does not verify for this profile and member"),
        ]
        for (proof, mention) in forgeries {
            try gitOK(["reset", "--quiet", "--hard", start], in: clone)
            let forged = try commitWithGit(in: clone, signedWith: vera.keyFile) { clone in
                try self.addKey(phone, device: "phone", proof: proof, to: "vera", in: clone)
            }
            let pushed = try git(["push", "origin", "HEAD:main"], in: clone, environment: ssh)
            XCTAssertNotEqual(pushed.status, 0, pushed.summary)
            XCTAssertTrue(pushed.stderr.contains("remote: concord serve: refused: \(forged.prefix(7)) by vera@tablet changes "
                                                 + ".concord/members/vera.json: it adds device phone's key"), pushed.stderr)
            XCTAssertTrue(pushed.stderr.contains(mention), "\(mention): \(pushed.stderr)")
            XCTAssertEqual(try serverMain("kid", host: host), start, "the server stored nothing")
        }

        // A merge of Alice's new commit (first, as the mainline rule asks) that brings the key without any proof.
        try gitOK(["reset", "--quiet", "--hard", start], in: clone)
        try concordOK(["put", "vocabulary/ball", "--json", #"{"label":"ball"}"#], as: alice, in: aliceProfile)
        try concordOK(["sync"], as: alice, in: aliceProfile)
        let main = try serverMain("kid", host: host)
        try gitOK(["fetch", "--quiet", "origin"], in: clone, environment: ssh)
        let merge = try mergeWithGit(in: clone, "origin/main", signedWith: vera.keyFile, mainFirst: true) { clone in
            try self.addKey(phone, device: "phone", proof: nil, to: "vera", in: clone)
        }
        let mergePush = try git(["push", "origin", "HEAD:main"], in: clone, environment: ssh)
        XCTAssertNotEqual(mergePush.status, 0, mergePush.summary)
        XCTAssertTrue(mergePush.stderr.contains("remote: concord serve: refused: \(merge.prefix(7)) by vera@tablet changes "
                                                + ".concord/members/vera.json: a merge changes member and invitation files only as merging its parents does"),
                      mergePush.stderr)
        XCTAssertEqual(try serverMain("kid", host: host), main, "the server stored nothing")

        // With the phone key's own proof the commit is stored.
        try gitOK(["reset", "--quiet", "--hard", main], in: clone)
        let proven = try commitWithGit(in: clone, signedWith: vera.keyFile) { clone in
            try self.addKey(phone, device: "phone", proof: try self.proof(signedBy: phoneKey, profileID: profileID, member: "vera", key: phone),
                            to: "vera", in: clone)
        }
        try gitOK(["push", "--quiet", "origin", "HEAD:main"], in: clone, environment: ssh)
        XCTAssertEqual(try serverMain("kid", host: host), proven)
    }
}

extension ConcordTestCase {
    /// Member `name`'s file in `profile`, as JSON.
    func memberFile(_ name: String, in profile: URL) throws -> [String: Any] {
        let url = profile.appendingPathComponent(".concord/members/\(name).json")
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    /// `ssh-keygen -Y verify` takes `proof` as `key`'s signature, namespace `concord-key`, over the message.
    func assertOpenSSHVerifies(_ proof: String, profileID: String, member: String, key: String,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let blob = try XCTUnwrap(Data(base64Encoded: proof), "base64", file: file, line: line).base64EncodedString()
        var armor = "-----BEGIN SSH SIGNATURE-----\n"
        var rest = Substring(blob)
        while !rest.isEmpty { armor += String(rest.prefix(70)) + "\n"; rest = rest.dropFirst(70) }
        armor += "-----END SSH SIGNATURE-----\n"
        let name = "verify-\(UUID().uuidString.prefix(8))"
        let signature = sandbox.appendingPathComponent(name + ".sig"), signers = sandbox.appendingPathComponent(name + ".signers")
        try Data(armor.utf8).write(to: signature)
        let words = key.split(separator: " ")
        try Data("\(member) \(words[0]) \(words[1])\n".utf8).write(to: signers)
        let result = try ProcessRunner.run(GitSigning.sshKeygenPath, ["-Y", "verify", "-f", signers.path, "-I", member, "-n", "concord-key",
                                                                     "-s", signature.path],
                                           environment: environment(), input: Data(proofMessage(profileID: profileID, member: member, key: key).utf8))
        XCTAssertEqual(result.status, 0, "ssh-keygen -Y verify of \(member)'s proof: \(result.summary)", file: file, line: line)
    }

    /// Adds `key` (a key line) as `device` to member `name`'s file in `clone`, with `proof` when given.
    func addKey(_ key: String, device: String, proof: String?, to name: String, in clone: URL) throws {
        let words = key.split(separator: " ")
        var entry: [String: Any] = ["device": device, "publicKey": "\(words[0]) \(words[1])"]
        if let proof { entry["proof"] = proof }
        try editMember(name, in: clone) { member in member["keys"] = (member["keys"] as? [Any] ?? []) + [entry] }
    }
}
