import Foundation
import XCTest
@_exported import ConcordTestSupport

@testable import ConcordEngine
@testable import ConcordKit

/// A wall clock a test can move by hand, backwards included.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var millis: Int64

    init(_ iso: String) {
        millis = HLClock.parseInstant(iso)!
    }

    var now: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return millis
    }

    func set(_ value: Int64) {
        lock.lock()
        millis = value
        lock.unlock()
    }

    func advance(by delta: Int64) { set(now + delta) }

    var environmentClock: @Sendable () -> Int64 { { [self] in now } }
}

extension XCTestCase {
    /// Every remote and device of an engine test must pass `git fsck --full` when it ends (ConcordTestCase's
    /// `fsckAtEnd`, for this target): `repositories` are checked in a teardown block, so after the test and
    /// its own teardown blocks but before the sandbox goes (blocks run last registered first, and the
    /// sandbox's block was registered in setUp). Any test case of this target may call it, KitTestCase or not.
    func fsckAtEnd(_ repositories: URL..., file: StaticString = #filePath, line: UInt = #line) {
        addTeardownBlock {
            for problem in repositories.compactMap(fsckProblem(in:)) { XCTFail(problem, file: file, line: line) }
        }
    }
}

/// Base class of the engine tests: temp dirs, identities, profiles, and the git CLI as judge.
class KitTestCase: XCTestCase {
    private(set) var sandbox: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        ConcordBinary.runningClass.withLock { $0 = "\(type(of: self))" }
        sandbox = try makeSandbox(prefix: "concord-kit-tests", removedBy: addTeardownBlock)
    }

    /// A new identity in its own home directory.
    func makeIdentity(_ member: String = "alice", device: String = "laptop") throws -> Identity {
        try Identity.create(member: member, device: device, in: sandbox.appendingPathComponent("home-\(member)-\(device)"))
    }

    /// An environment whose wall clock is `clock` (a fixed 2026-01-01T10:00:00.001Z when nil).
    func makeEnvironment(_ identity: Identity, clock: ManualClock? = nil) -> ConcordEnvironment {
        let clock = clock ?? ManualClock("2026-01-01T10:00:00.001Z")
        return ConcordEnvironment(home: identity.home, wallClock: clock.environmentClock)
    }

    /// A new aac store "P" in `<sandbox>/<name>`, `identity`'s (a new alice's when nil), under the fixed clock.
    func makeStore(_ name: String = "p", identity: Identity? = nil) throws -> ConcordStore {
        let identity = try identity ?? makeIdentity()
        return try ConcordStore.create(at: sandbox.appendingPathComponent(name), name: "P", template: .aac, identity: identity,
                                       environment: makeEnvironment(identity))
    }

    /// The ids of the live vocabulary records, sorted.
    static let vocabularyIDs = ClosureRequest(kinds: ["vocabulary"]) { reader in
        try reader.list(kind: "vocabulary").items.map(\.id).sorted()
    }

    /// A new profile in the sandbox.
    func makeProfile(_ name: String = "profile", template: Template = .aac, identity: Identity,
                     clock: ManualClock? = nil) throws -> Profile {
        try Profile.create(at: sandbox.appendingPathComponent(name), name: "Test \(name)", template: template,
                           identity: identity, environment: makeEnvironment(identity, clock: clock))
    }

    /// Runs the real git in `directory`, with no user or system config.
    @discardableResult
    func git(_ arguments: [String], in directory: URL) throws -> RunResult {
        try ProcessRunner.run(gitPath, arguments, environment: isolatedEnvironment(home: sandbox), in: directory)
    }

    /// git's trimmed stdout, failing the test unless git exits 0.
    @discardableResult
    func gitOK(_ arguments: [String], in directory: URL, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let output = try git(arguments, in: directory)
        XCTAssertEqual(output.status, 0, "git \(arguments.joined(separator: " ")): \(output.stderr)", file: file, line: line)
        return output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A second working copy of `profile` (a git clone named `name` in the sandbox), opened for
    /// `identity` with its own clock; `git fsck` checks it when the test ends.
    func copy(of profile: Profile, _ name: String, as identity: Identity, clock: ManualClock) throws -> Profile {
        let path = sandbox.appendingPathComponent(name)
        try gitOK(["clone", "-q", profile.root.path, path.path], in: sandbox)
        fsckAtEnd(path)
        return try Profile.open(at: path, environment: makeEnvironment(identity, clock: clock))
    }

    /// Fetches `from`'s branch into `into` as a remote's main (`refs/remotes/peer/main`) and merges
    /// it, as a sync does: `from`'s line is the merge's main line (its first parent).
    @discardableResult
    func pull(_ from: Profile, into: Profile, as identity: Identity) throws -> MergeReport {
        try gitOK(["fetch", "-q", from.root.path, "+main:refs/remotes/peer/main"], in: into.root)
        return try into.sync.merge(revision: "refs/remotes/peer/main", as: identity)
    }

    func lines(_ text: String) -> [String] {
        text.split(separator: "\n").map(String.init)
    }

    /// The `ConcordError` that `body` throws; fails the test if it throws nothing or something else.
    func concordError<T>(file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T) -> ConcordError? {
        let thrown = thrownError(ConcordError.self, by: body)
        if let problem = thrown.problem { XCTFail(problem, file: file, line: line) }
        return thrown.error
    }

    /// The record's data as a plain object, for compact comparisons.
    func object(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> [String: JSONValue] {
        do {
            guard let object = try JSONValue.parse(json).objectValue else {
                XCTFail("not an object: \(json)", file: file, line: line)
                return [:]
            }
            return object
        } catch {
            XCTFail("bad JSON in test: \(error)", file: file, line: line)
            return [:]
        }
    }
}

/// The record index's fixtures (`RecordIndexTests`, `ReadOnlySQLTests`, `IndexScanAgreementTests`).
extension KitTestCase {
    /// A store with 20 records w0…w19: page = i % 4, position = 20 - i, label = "word<i>".
    func storeWithRecords() throws -> ConcordStore {
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        _ = try store.write { transaction in
            try transaction.put((0..<20).map { index in
                (kind: "vocabulary", id: "w\(index)",
                 data: ["page": .number(String(index % 4)), "position": .number(String(20 - index)), "label": .string("word\(index)")])
            })
        }
        return store
    }

    func indexPath(_ store: ConcordStore) -> String { store.directory.path + "/.git/concord/index.sqlite" }
}
