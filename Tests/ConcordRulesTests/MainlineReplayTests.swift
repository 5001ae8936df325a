import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// The side replay on its own (no git, `MembershipResolution.replayOnMainline`): decisions judged in
/// order against the membership replayed so far, and rule 5 where a side joins the main line — a
/// key a decision adds is no one else's there, and is proven when the format there asks for proofs.
final class MainlineReplayTests: XCTestCase {
    let alice = SigningKey.generate(), mallory = SigningKey.generate(), zed = SigningKey.generate(), spare = SigningKey.generate()
    let profileID = "0f6b2a44-5d1e-4c1f-9a57-3f1c2d6e8b90"

    private func file(_ name: String, _ role: Role, _ status: Member.Status = .active, keys: [Member.Key]) -> (String, [UInt8]) {
        (ProfilePaths.member(name), Member(name: name, role: role, status: status, keys: keys, addedBy: "alice",
                                           addedAt: "2026-01-01T00:00:00.000Z").json.canonicalBytes())
    }

    private func key(_ device: String, _ signingKey: SigningKey, proofFor member: String? = nil) -> Member.Key {
        Member.Key(device: device, publicKey: signingKey.publicKey, proof: member.map { KeyProof.sign(profileID: profileID, member: $0, with: signingKey) })
    }

    /// The main line: alice (Admin) and mallory (Viewer), and zed (Admin) when `withZed`.
    func mainline(withZed: Bool = true) -> [String: [UInt8]] {
        var files = Dictionary(uniqueKeysWithValues: [file("alice", .admin, keys: [key("laptop", alice)]),
                                                      file("mallory", .viewer, keys: [key("phone", mallory)])])
        if withZed { files[ProfilePaths.member("zed")] = file("zed", .admin, keys: [key("desk", zed)]).1 }
        return files
    }

    /// Mallory's change of her own file, from her file with only her phone to one with `keys` too.
    private func malloryAdds(_ keys: [Member.Key], signedBy signer: SigningKey? = nil) -> MembershipResolution.SideDecision {
        let before = file("mallory", .viewer, keys: [key("phone", mallory)])
        let after = file("mallory", .viewer, keys: [key("phone", mallory)] + keys)
        return .init(commit: String(repeating: "a", count: 40),
                     change: .init(signer: (signer ?? mallory).publicKey, files: [before.0: (before.1, after.1)]))
    }

    private func keys(of name: String, in state: [String: [UInt8]]) -> [SSHPublicKey] {
        (try? Member.decode(state[ProfilePaths.member(name)] ?? [], path: ProfilePaths.member(name)))?.keys.map(\.publicKey) ?? []
    }

    func testAKeyAnotherMemberHoldsWhereTheSideJoinsIsNotGivenAway() {
        for proofs in [nil, profileID] {
            let outcome = MembershipResolution.replayOnMainline(mainline(), side: [malloryAdds([key("desk2", zed)])], proofsFor: proofs)
            XCTAssertEqual(keys(of: "mallory", in: outcome.state), [mallory.publicKey], "proofs: \(String(describing: proofs))")
            XCTAssertEqual(outcome.fallen.map(\.signer), ["mallory"])
            XCTAssertTrue(outcome.fallen.first?.reason.hasPrefix("zed holds the key it gives mallory (device desk2") ?? false, "\(outcome.fallen)")
        }
        // Where zed is not there, the same decision stands (without proofs asked for).
        let free = MembershipResolution.replayOnMainline(mainline(withZed: false), side: [malloryAdds([key("desk2", zed)])])
        XCTAssertEqual(keys(of: "mallory", in: free.state), [mallory.publicKey, zed.publicKey])
        XCTAssertEqual(free.fallen, [])
    }

    func testWhereTheFormatThereAsksForProofsAnUnprovenKeyOfOnesOwnFalls() {
        let unproven = MembershipResolution.replayOnMainline(mainline(), side: [malloryAdds([key("spare", spare)])], proofsFor: profileID)
        XCTAssertEqual(keys(of: "mallory", in: unproven.state), [mallory.publicKey])
        XCTAssertTrue(unproven.fallen.first?.reason.contains("it has no proof of possession") ?? false, "\(unproven.fallen)")
        XCTAssertTrue(unproven.fallen.first?.reason.contains("requires a key's proof of possession") ?? false, "\(unproven.fallen)")
        // Proven: stands. Not asked for (an older format where it joins): stands.
        let proven = MembershipResolution.replayOnMainline(mainline(), side: [malloryAdds([key("spare", spare, proofFor: "mallory")])], proofsFor: profileID)
        XCTAssertEqual(keys(of: "mallory", in: proven.state), [mallory.publicKey, spare.publicKey])
        XCTAssertEqual(proven.fallen, [])
        let older = MembershipResolution.replayOnMainline(mainline(), side: [malloryAdds([key("spare", spare)])])
        XCTAssertEqual(keys(of: "mallory", in: older.state), [mallory.publicKey, spare.publicKey])
        // A proof made for another member proves nothing for mallory.
        let others = MembershipResolution.replayOnMainline(mainline(), side: [malloryAdds([key("spare", spare, proofFor: "zed")])], proofsFor: profileID)
        XCTAssertEqual(keys(of: "mallory", in: others.state), [mallory.publicKey])
    }

    func testAnActiveAdminVouchesForAnotherMembersKeyButARevokedOneDecidesNothing() {
        let vouched = MembershipResolution.replayOnMainline(mainline(), side: [malloryAdds([key("spare", spare)], signedBy: alice)], proofsFor: profileID)
        XCTAssertEqual(keys(of: "mallory", in: vouched.state), [mallory.publicKey, spare.publicKey])
        XCTAssertEqual(vouched.fallen, [])
        var revoked = mainline()
        revoked[ProfilePaths.member("alice")] = file("alice", .admin, .revoked, keys: [key("laptop", alice)]).1
        let fallen = MembershipResolution.replayOnMainline(revoked, side: [malloryAdds([key("spare", spare)], signedBy: alice)], proofsFor: profileID)
        XCTAssertEqual(keys(of: "mallory", in: fallen.state), [mallory.publicKey])
        XCTAssertEqual(fallen.fallen.map(\.reason), ["alice had been revoked on the main line before it arrived"])
    }

    func testDecisionsAreJudgedInOrderAgainstTheMembershipReplayedSoFar() {
        // Zed revokes alice; alice's later decision on the same side then falls.
        let aliceBefore = file("alice", .admin, keys: [key("laptop", alice)])
        let aliceRevoked = file("alice", .admin, .revoked, keys: [key("laptop", alice)])
        let revocation = MembershipResolution.SideDecision(commit: String(repeating: "b", count: 40),
                                                           change: .init(signer: zed.publicKey, files: [aliceBefore.0: (aliceBefore.1, aliceRevoked.1)]))
        let outcome = MembershipResolution.replayOnMainline(mainline(), side: [revocation, malloryAdds([key("spare", spare)], signedBy: alice)])
        XCTAssertEqual(outcome.state[aliceBefore.0], aliceRevoked.1)
        XCTAssertEqual(keys(of: "mallory", in: outcome.state), [mallory.publicKey])
        XCTAssertEqual(outcome.fallen.map(\.commit), [String(repeating: "a", count: 40)])
    }
}

extension MainlineReplayTests {
    /// An Admin's addition (on a side) of a name the main line holds in another case falls as taken.
    func testANameTheMainLineHoldsInAnotherCaseIsTaken() {
        let other = SigningKey.generate()
        let zed = Member(name: "Zed", role: .admin, status: .active, keys: [Member.Key(device: "d", publicKey: other.publicKey)],
                         addedBy: "alice", addedAt: "2026-01-01T00:00:00.000Z").json.canonicalBytes()
        let addition = MembershipResolution.SideDecision(commit: String(repeating: "c", count: 40),
                                                         change: .init(signer: alice.publicKey, files: [ProfilePaths.member("Zed"): (nil, zed)]))
        let outcome = MembershipResolution.replayOnMainline(mainline(), side: [addition])
        XCTAssertNil(outcome.state[ProfilePaths.member("Zed")])
        XCTAssertEqual(outcome.fallen.map(\.reason), ["the name Zed was already taken on the main line"])
    }
}
