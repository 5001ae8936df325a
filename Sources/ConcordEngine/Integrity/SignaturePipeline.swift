import ConcordGit
import Dispatch
import Synchronization

/// The signature checks of a list of commits, verified ahead of the checks that need them, on
/// every core. One Ed25519 verification is most of what checking a commit costs. The caller (the one
/// thread that uses the repository) reads a chunk's signatures and hands the chunk to GCD's global
/// queue, keeping up to `ahead` chunks in flight beyond the one it waits for: the cores verify
/// while the caller checks the commits before them, and the signed bytes held stay bounded.
/// (Batches verified one at a time, each spread over the cores, left a core idle while the caller
/// checked: bench row B7.) A chunk whose signatures cannot be read throws when its turn comes, so
/// the first bad commit in order is the one reported.
final class SignaturePipeline {
    private let authorizer: CommitAuthorizer
    private let commits: [Commit]
    private let size: Int
    private let ahead: Int
    private var flights = [Int: Flight]()
    private var started = 0
    private var current: (chunk: Int, checks: [CommitAuthorizer.SignatureCheck])?
    private let memo: SignatureMemo?

    init(authorizer: CommitAuthorizer, commits: [Commit], chunkSize: Int, ahead: Int, memo: SignatureMemo? = nil) {
        self.authorizer = authorizer
        self.commits = commits
        self.size = max(1, chunkSize)
        self.ahead = max(0, ahead)
        self.memo = memo
    }

    /// How many chunks `commits` make.
    var chunkCount: Int { (commits.count + size - 1) / size }

    /// The signature check of `commits[position]`; positions are asked in order.
    func check(at position: Int) throws -> CommitAuthorizer.SignatureCheck {
        let chunk = position / size
        if current?.chunk != chunk {
            while started < chunkCount, started <= chunk + ahead {
                start(started)
                started += 1
            }
            guard let flight = flights.removeValue(forKey: chunk) else { preconditionFailure("signature chunk \(chunk) asked out of order") }
            current = (chunk, try flight.wait())
        }
        return current!.checks[position - chunk * size]
    }

    /// Waits for the chunks still in flight: no verification outlives the check that started it.
    func finish() {
        for flight in flights.values { _ = try? flight.wait() }
        flights.removeAll()
    }

    private func start(_ chunk: Int) {
        let flight = Flight()
        let range = chunk * size..<min(commits.count, (chunk + 1) * size)
        do {
            let signatures = try authorizer.signatures(of: commits[range])
            let memo = memo
            DispatchQueue.global().async(group: flight.group) { flight.finish(.success(CommitAuthorizer.verify(signatures, memo: memo))) }
        } catch {
            flight.finish(.failure(error))
        }
        flights[chunk] = flight
    }

    /// One chunk on its way: its checks, written by the worker before it leaves the group, read
    /// after waiting on it.
    private final class Flight: Sendable {
        let group = DispatchGroup()
        private let checks = Mutex<Result<[CommitAuthorizer.SignatureCheck], any Error>>(.success([]))

        func finish(_ result: Result<[CommitAuthorizer.SignatureCheck], any Error>) {
            checks.withLock { $0 = result }
        }

        func wait() throws -> [CommitAuthorizer.SignatureCheck] {
            group.wait()
            return try checks.withLock { $0 }.get()
        }
    }
}
