import ConcordGit
import Foundation
import XCTest

/// A hostile ssh server (a real sshd whose forced command answers with what the test wrote) reading
/// the ref list that `watch` polls and `remote trust` reads: every malformed answer fails with one
/// error naming what was wrong; none crashes, none is taken for refs, and a silent server is cut
/// off by the stall timeout instead of holding the caller.
final class HostileSSHServerTests: GitTestCase {
    private static let id = String(repeating: "ab", count: 20)

    func testAnInvalidPacketLengthIsRefused() throws {
        let error = try readHeads(answer: Array("zzzz0000".utf8))
        XCTAssertTrue(message(of: error).contains("invalid pkt-line length"), message(of: error))
    }

    func testARefLineWithoutAnObjectIDIsRefused() throws {
        let error = try readHeads(answer: packet("not-an-id refs/heads/main\n") + Array("0000".utf8))
        XCTAssertTrue(message(of: error).contains("invalid ref line"), message(of: error))
    }

    func testAnEmptyPacketIsRefused() throws {
        let error = try readHeads(answer: Array("0004".utf8) + Array("0000".utf8))
        XCTAssertTrue(message(of: error).contains("unexpected pkt-line"), message(of: error))
    }

    func testTheServersErrorPacketIsPassedOn() throws {
        let error = try readHeads(answer: packet("ERR access denied by policy\n"))
        XCTAssertTrue(message(of: error).contains("remote error: access denied by policy"), message(of: error))
    }

    func testAnAnswerCutShortIsRefused() throws {
        let line = packet("\(Self.id) refs/heads/main\0multi_ack\n")
        let error = try readHeads(answer: Array(line.prefix(line.count - 5)))
        XCTAssertFalse(message(of: error).isEmpty)
    }

    /// An endless list of refs: refused once it passes the 1 MiB bound, never read to the end.
    func testAnEndlessAdvertisementIsCutAtItsBound() throws {
        let line = String(decoding: packet("\(Self.id) refs/heads/main\n"), as: UTF8.self)
        let error = try readHeads(script: "while :; do printf '%s' '\(line)'; done 2>/dev/null\n")
        XCTAssertTrue(message(of: error).contains("over 1 MiB"), message(of: error))
    }

    /// A server that accepts the connection and then says nothing.
    func testASilentServerIsCutOffByTheStallTimeout() throws {
        let start = Date()
        let error = try readHeads(script: "exec sleep 60\n", stallTimeout: 2)
        let waited = Date().timeIntervalSince(start)
        guard case .timedOut(let seconds)? = error as? TransportFailure else {
            return XCTFail("expected a timeout, got \(message(of: error))")
        }
        XCTAssertEqual(seconds, 2)
        // Not a speed target: the bound only proves the server could not hold the caller (sleep 60).
        XCTAssertLessThan(waited, 30, "a silent server held the caller \(Int(waited)) s")
    }

    /// A wait on a silent server is cut the moment its owner cancels it (`TransferCancellation`, what
    /// `watch` does before it deletes a copy and exits), not after the stall timeout; a connection
    /// opened after the cancel is cut at once.
    func testACancelCutsAWaitAtOnceAndEveryConnectionAfterIt() throws {
        let cancellation = TransferCancellation()
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { cancellation.cancel() }
        let start = Date()
        XCTAssertThrowsError(try headsFrom(script: "exec sleep 60\n", stallTimeout: 60, cancellation: cancellation))
        let waited = Date().timeIntervalSince(start)
        XCTAssertLessThan(waited, 20, "the cancelled wait held its caller \(Int(waited)) s")
        XCTAssertTrue(cancellation.isCancelled)
        let again = Date()
        XCTAssertThrowsError(try headsFrom(script: "exec sleep 60\n", stallTimeout: 60, cancellation: cancellation))
        XCTAssertLessThan(Date().timeIntervalSince(again), 20, "a connection opened after the cancel was not cut")
    }

    /// A host that never answers the connection (its SYNs dropped, as by a firewall) does not hold
    /// a cancelled caller for the stall timeout: the connect in progress is given up at once.
    func testACancelGivesUpAConnectToAHostThatNeverAnswers() throws {
        // A listening socket whose accept queue is full: the system drops further SYNs.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 0) == 0
                && getsockname(listener, $0, &length) == 0 }
        }
        XCTAssertTrue(bound)
        var fillers = [Int32]()
        defer { fillers.forEach { close($0) } }
        func connecting() -> Int32 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            _ = fcntl(client, F_SETFL, O_NONBLOCK)
            var target = address
            _ = withUnsafePointer(to: &target) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } }
            fillers.append(client)
            return client
        }
        for _ in 0..<4 { _ = connecting() }
        var probe = pollfd(fd: connecting(), events: Int16(POLLOUT), revents: 0)
        if poll(&probe, 1, 500) != 0 { throw XCTSkip("this system completes connections past a full accept queue") }

        let (repository, _) = try makeRepository("device-\(UUID().uuidString.prefix(6))")
        try repository.addRemote("origin", url: "ssh://git@127.0.0.1:\(UInt16(bigEndian: address.sin_port))/remote.git")
        var options = TransportOptions(trustHostKey: { _ in true }, stallTimeout: 60)
        let cancellation = TransferCancellation()
        options.cancellation = cancellation
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { cancellation.cancel() }
        let start = Date()
        XCTAssertThrowsError(try repository.remoteHeads(remote: "origin", options: options)) { error in
            XCTAssertTrue(self.message(of: error).contains("anceled"), self.message(of: error))
        }
        XCTAssertLessThan(Date().timeIntervalSince(start), 20, "the cancelled connect held its caller")
    }

    /// A well-formed answer through the same fixture, so the failures above are the answers' doing.
    func testAWellFormedAnswerGivesItsHeads() throws {
        let answer = packet("\(Self.id) refs/heads/main\0multi_ack side-band-64k\n") + packet("\(Self.id) refs/tags/v1\n")
            + Array("0000".utf8)
        let script = try scriptServing(answer)
        let heads = try headsFrom(script: script, stallTimeout: 30)
        XCTAssertEqual(heads["refs/heads/main"]?.hex, Self.id)
    }

    // MARK: The fixture

    private func packet(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        return Array(String(format: "%04x", payload.count + 4).utf8) + payload
    }

    private func message(of error: Error) -> String {
        (error as? GitError)?.message ?? String(describing: error)
    }

    private func scriptServing(_ answer: [UInt8]) throws -> String {
        let file = sandbox.appendingPathComponent("answer-\(UUID().uuidString.prefix(6))")
        try Data(answer).write(to: file)
        return "cat '\(file.path)'\n"
    }

    private func readHeads(answer: [UInt8]) throws -> Error {
        try readHeads(script: try scriptServing(answer))
    }

    /// What reading the heads of a remote served by `script` (sh, as the key's forced command) throws.
    private func readHeads(script: String, stallTimeout: TimeInterval = 30) throws -> Error {
        do {
            let heads = try headsFrom(script: script, stallTimeout: stallTimeout)
            XCTFail("the malformed answer was taken for refs: \(heads)")
            return GitError(function: "test", code: .other(-1), message: "")
        } catch {
            return error
        }
    }

    private func headsFrom(script: String, stallTimeout: TimeInterval, cancellation: TransferCancellation? = nil) throws -> [String: ObjectID] {
        let (server, key) = try sshServer(forcedCommand: script)
        let (repository, _) = try makeRepository("device-\(UUID().uuidString.prefix(6))")
        try repository.addRemote("origin", url: server.url(for: sandbox.appendingPathComponent("remote.git")))
        var options = TransportOptions(sshPrivateKey: key.privateKey.path, trustHostKey: { _ in true }, stallTimeout: stallTimeout)
        options.cancellation = cancellation
        return try repository.remoteHeads(remote: "origin", options: options)
    }
}
