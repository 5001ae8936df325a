import ConcordGit
import ConcordTestSupport
import ConcordTrust
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// A path fetch verifies each copied commit's signature ahead (`SignaturePrefetch`) into a
/// `SignatureMemo` the check then asks. The memo must answer exactly as `SSHSignature.verify`,
/// and only for the very bytes it verified: a good signature moved onto other bytes stays bad.
final class SignaturePrefetchTests: KitTestCase {
    private let tree = String(repeating: "4b825dc6", count: 5)

    func testARawCommitSplitsIntoWhatWasSignedAndTheMemoAnswersAsVerifyDoes() throws {
        let alice = try makeIdentity("alice", device: "laptop")
        let bob = try makeIdentity("bob", device: "phone")
        let memo = SignatureMemo()
        let (raw, payload) = signedCommit(by: alice, message: "first\n")
        let signed = try XCTUnwrap(CommitSignature(rawCommit: raw))
        XCTAssertEqual(signed.signedData, payload)
        XCTAssertEqual(describe(memo.check(signed)), "good \(alice.key.publicKey.fingerprint)")
        XCTAssertEqual(memo.count, 1)
        XCTAssertEqual(describe(memo.check(signed)), "good \(alice.key.publicKey.fingerprint)", "asked again")
        XCTAssertEqual(memo.count, 1, "the kept answer")

        // Alice's signature on other bytes (the message changed, the gpgsig field kept): bad,
        // although the answer for her real commit is kept.
        let moved = Array(String(decoding: raw, as: UTF8.self).replacingOccurrences(of: "first\n", with: "forged\n").utf8)
        let movedSigned = try XCTUnwrap(CommitSignature(rawCommit: moved))
        XCTAssertEqual(movedSigned.signature, signed.signature)
        XCTAssertEqual(describe(memo.check(movedSigned)), "bad")
        XCTAssertEqual(memo.count, 2)
        XCTAssertEqual(describe(memo.check(signed)), "good \(alice.key.publicKey.fingerprint)")

        let (bobs, _) = signedCommit(by: bob, message: "first\n")
        XCTAssertEqual(describe(memo.check(try XCTUnwrap(CommitSignature(rawCommit: bobs)))), "good \(bob.key.publicKey.fingerprint)")
        // No signature field, a NUL byte, no blank line: nothing to verify ahead.
        XCTAssertNil(CommitSignature(rawCommit: Array("tree \(tree)\nauthor A <a@x> 1 +0000\n\nunsigned\n".utf8)))
        XCTAssertNil(CommitSignature(rawCommit: raw + [0]))
        XCTAssertNil(CommitSignature(rawCommit: Array("tree \(tree)\ngpgsig x\n".utf8)))
    }

    /// Given 300 commits, 1 in 7 with a signature moved onto other bytes and 1 in 11 unsigned, the
    /// prefetch verifies every signed one once, and the memo's answers are `SSHSignature.verify`'s.
    func testAPrefetchVerifiesEverySignedCommitItIsGivenAsVerifyDoes() throws {
        let alice = try makeIdentity("alice", device: "laptop")
        let prefetch = SignaturePrefetch(memo: SignatureMemo())
        var raws = [[UInt8]]()
        for index in 0..<300 {
            if index % 11 == 0 {
                raws.append(Array("tree \(tree)\nauthor A <a@x> \(index) +0000\n\nunsigned \(index)\n".utf8))
                continue
            }
            var (raw, _) = signedCommit(by: alice, message: "commit \(index)\n")
            if index % 7 == 0 {
                raw = Array(String(decoding: raw, as: UTF8.self).replacingOccurrences(of: "commit \(index)\n", with: "moved \(index)\n").utf8)
            }
            raws.append(raw)
        }
        for raw in raws { prefetch.add(rawCommit: raw) }
        prefetch.finish()
        let signed = raws.compactMap { CommitSignature(rawCommit: $0) }
        XCTAssertEqual(signed.count, 300 - 28)
        XCTAssertEqual(prefetch.memo.count, signed.count)
        var bad = 0
        for item in signed {
            let direct: String
            do { direct = "good \(try SSHSignature.verify(item.signature, message: item.signedData).fingerprint)" } catch { direct = "bad" }
            XCTAssertEqual(describe(prefetch.memo.check(item)), direct)
            if direct == "bad" { bad += 1 }
        }
        XCTAssertEqual(bad, (1..<300).filter { $0 % 7 == 0 && $0 % 11 != 0 }.count)
        XCTAssertEqual(prefetch.memo.count, signed.count, "every answer was there already")
    }

    /// A cancelled prefetch (the fetch failed) takes nothing more and returns at once.
    func testACancelledPrefetchTakesNothingMore() throws {
        let alice = try makeIdentity("alice", device: "laptop")
        let prefetch = SignaturePrefetch(memo: SignatureMemo())
        prefetch.add(rawCommit: signedCommit(by: alice, message: "one\n").raw)
        prefetch.finish()
        XCTAssertEqual(prefetch.memo.count, 1)
        prefetch.cancel()
        for index in 0..<200 { prefetch.add(rawCommit: signedCommit(by: alice, message: "later \(index)\n").raw) }
        prefetch.finish()
        XCTAssertEqual(prefetch.memo.count, 1)
    }

    /// A raw commit signed by `identity` the way git signs (the signature over the commit without
    /// its `gpgsig` field), and the bytes signed.
    private func signedCommit(by identity: Identity, message: String) -> (raw: [UInt8], payload: [UInt8]) {
        let header = "tree \(tree)\nauthor A <a@x> 1767261600 +0000\ncommitter A <a@x> 1767261600 +0000\n"
        let payload = Array((header + "\n" + message).utf8)
        let signature = identity.sign(payload).split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.isEmpty }.joined(separator: "\n ")
        return (Array((header + "gpgsig " + signature + "\n\n" + message).utf8), payload)
    }

    private func describe(_ check: CommitAuthorizer.SignatureCheck) -> String {
        switch check {
        case .unsigned: return "unsigned"
        case .bad: return "bad"
        case .good(let key): return "good \(key.fingerprint)"
        }
    }
}
