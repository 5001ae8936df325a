import ConcordGit
import Crypto
import Dispatch
import Foundation
import Synchronization

/// What `SSHSignature.verify` answered for exact (signature, signed bytes) pairs: the same
/// question asked again gets the same answer without another Ed25519 verification. Keyed by the
/// SHA-256 of the signature and the signed bytes, so an answer is only ever reused for exactly
/// the bytes it was computed on, whoever split them out of a commit. Safe from any thread.
final class SignatureMemo: Sendable {
    /// Answers kept at most (~120 bytes each); when full, it starts over.
    static let capacity = 100_000
    private let state = Mutex<(answers: [[UInt8]: CommitAuthorizer.SignatureCheck], answered: Int)>(([:], 0))

    /// `SSHSignature.verify(signed.signature, message: signed.signedData)` as a check, remembered.
    func check(_ signed: CommitSignature) -> CommitAuthorizer.SignatureCheck {
        let key = Self.key(signed)
        if let known = state.withLock({ state -> CommitAuthorizer.SignatureCheck? in
            let known = state.answers[key]
            if known != nil { state.answered += 1 }
            return known
        }) { return known }
        let answer = CommitAuthorizer.SignatureCheck(verifying: signed)
        state.withLock { state in
            if state.answers.count >= Self.capacity { state.answers.removeAll(keepingCapacity: true) }
            state.answers[key] = answer
        }
        return answer
    }

    /// How many answers are kept, and how many questions a kept answer answered (for tests).
    var count: Int { state.withLock { $0.answers.count } }
    var hits: Int { state.withLock { $0.answered } }

    private static func key(_ signed: CommitSignature) -> [UInt8] {
        var hasher = SHA256()
        let signature = Array(signed.signature.utf8)
        withUnsafeBytes(of: UInt64(signature.count).littleEndian) { hasher.update(bufferPointer: $0) }
        hasher.update(data: signature)
        hasher.update(data: signed.signedData)
        return Array(hasher.finalize())
    }
}

/// Verifies the signatures of commits as a path fetch copies them, on the cores the copy leaves
/// idle, into a `SignatureMemo` that the check of the new commits then asks (bench row B7: the
/// copy of 10,000 commits runs on one core for ~2 s; their signatures cost ~1.1 s of another).
/// Only bytes the copy has matched to their commit ids are given here, and an answer is only
/// reused for the exact signature and signed bytes the check itself reads out of the commit, so
/// what the check decides does not change. Bounded: at most `maxPending` signatures and
/// `maxPendingBytes` of signed bytes wait to be verified, and at most `SignatureMemo.capacity`
/// are taken in all; the rest are left to the check.
final class SignaturePrefetch: Sendable {
    let memo: SignatureMemo
    static let batchSize = 64
    static let maxPending = 4_096
    static let maxPendingBytes = 64 << 20
    /// Joins the workers.
    private let group = DispatchGroup()
    private struct State {
        var batch = [CommitSignature]()
        var pending = 0
        var pendingBytes = 0
        var taken = 0
        var cancelled = false
    }
    private let state = Mutex(State())

    init(memo: SignatureMemo) {
        self.memo = memo
    }

    /// Takes one copied commit's bytes (from the copying thread).
    func add(rawCommit bytes: [UInt8]) {
        guard let signed = CommitSignature(rawCommit: bytes) else { return }
        let cost = Self.cost(signed)
        let full: [CommitSignature]? = state.withLock { state in
            guard !state.cancelled, state.taken < SignatureMemo.capacity, state.pending < Self.maxPending,
                  state.pendingBytes + cost <= Self.maxPendingBytes else { return nil }
            state.taken += 1
            state.pending += 1
            state.pendingBytes += cost
            state.batch.append(signed)
            guard state.batch.count >= Self.batchSize else { return nil }
            defer { state.batch = [] }
            return state.batch
        }
        if let full { start(full) }
    }

    /// Starts what is left and waits until every signature given is verified.
    func finish() {
        let rest = state.withLock { state -> [CommitSignature] in
            defer { state.batch = [] }
            return state.batch
        }
        if !rest.isEmpty { start(rest) }
        group.wait()
    }

    /// Drops what waits and waits only for the signatures being verified right now: the fetch
    /// or the check failed, nothing will ask.
    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.batch = []
        }
        group.wait()
    }

    private func start(_ signatures: [CommitSignature]) {
        DispatchQueue.global().async(group: group) { [self] in
            for signed in signatures {
                if state.withLock({ $0.cancelled }) { break }
                _ = memo.check(signed)
            }
            state.withLock { state in
                state.pending -= signatures.count
                state.pendingBytes -= signatures.reduce(0) { $0 + Self.cost($1) }
            }
        }
    }

    /// The bytes a waiting signature holds.
    private static func cost(_ signed: CommitSignature) -> Int { signed.signedData.count + signed.signature.utf8.count }
}
