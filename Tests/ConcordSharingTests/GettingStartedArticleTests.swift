import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// The Getting Started article (Sources/ConcordKit/ConcordKit.docc/GettingStarted.md) run as it is
/// written: each line below is read from the article (the test fails when the article no longer
/// shows it), and the test runs the same code, against a real sshd on loopback where the article
/// syncs with a server. Only the names the article leaves to the app (a URL, a fingerprint, a
/// key, a messaging service) are bound here. So an article cannot throw, or fail to compile, unseen.
/// `Symbol` and `Tap` are the article's (ConcordTestSupport).
final class GettingStartedArticleTests: ConcordTestCase {
    /// The article's lines this test runs, each as the article has it (leading spaces aside).
    private let lines = [
        #"let me = try (try? Identity.load(from: home)) ?? Identity.create(member: "parent", device: "phone", in: home)"#,
        #"    static let fields: FieldNames<Symbol> = [\.page: "page", \.position: "position", \.label: "label"]"#,
        #"    static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor, indexed: fields.names)"#,
        #"    static let kind = Kind("taps", policy: .append, writers: .user)"#,
        "let environment = ConcordEnvironment(home: home)",
        "store = try ConcordStore.open(at: boardURL, identity: me, environment: environment,",
        #"store = try ConcordStore.create(at: boardURL, name: "Sam's board", identity: me, environment: environment,"#,
        "records: [Symbol.self], logs: [Tap.self])",
        #"try transaction.save(Symbol(id: "puzzle", label: "puzzle", page: 3, position: 2))"#,
        #"try transaction.save(Symbol(id: "juice", label: "juice", page: 3, position: 1))"#,
        #"try await store.write { try $0.append(Tap(symbol: "juice")) }"#,
        #"let page3 = Symbol.filter(\.page == 3).order(\.position)"#,
        "let symbols = try await store.read { try page3.fetchAll($0) }",
        #"let count = try await store.read { try Symbol.filter(\.page >= 1).fetchCount($0) }"#,
        "let taps = try await store.read { try $0.logEntries(Tap.self) }",
        "for try await symbols in store.observe(page3) {",
        "try await store.trustHost(fingerprint: nasFingerprint)",
        #"try await store.addMember("partner", role: .admin, device: "tablet", key: partnerKey)"#,
        "let report = try await store.sync()",
        "trustHost: nasFingerprint)",
        #"try await tablet.write { try $0.save(Symbol(id: "park", label: "park", page: 1, position: 3)) }"#,
        #"let shared = try await store.shareLink("therapist", role: .user, expiresIn: 7 * 86_400)"#,
        "_ = try await store.sync()",
        "messages.send(shared.invitation.text)",
        "let (board, _) = try await ConcordStore.accept(try Invitation(text: received), into: url, identity: therapist)",
        #"try await board.write { try $0.append(Tap(symbol: "juice")) }"#,
        "for try await event in store.changes(since: lastSeen) {",
        "case .commit(let commit):",
        "apply(commit.records)",
        "show(commit.conflicts)",
        "lastSeen = commit.token",
        "case .accessRemoved, .profileDeleted:",
    ]

    func testTheArticlesCodeRunsAsWritten() async throws {
        try assertArticle("GettingStarted.md", shows: lines)
        let server = try startSSHServer()
        let bare = sandbox.appendingPathComponent("sam.git")
        try Sync.createBareRemote(at: bare)

        // Identity and the store, on the parent's phone.
        let home = sandbox.appendingPathComponent("phone/concord")
        let me = try (try? Identity.load(from: home)) ?? Identity.create(member: "parent", device: "phone", in: home)
        let boardURL = sandbox.appendingPathComponent("phone/board")
        let environment = ConcordEnvironment(home: home)
        let store: ConcordStore
        if FileManager.default.fileExists(atPath: boardURL.path) {
            store = try ConcordStore.open(at: boardURL, identity: me, environment: environment,
                                          records: [Symbol.self], logs: [Tap.self])
        } else {   // the first launch
            store = try ConcordStore.create(at: boardURL, name: "Sam's board", identity: me, environment: environment,
                                            records: [Symbol.self], logs: [Tap.self])
        }
        try await store.write { transaction in
            try transaction.save(Symbol(id: "puzzle", label: "puzzle", page: 3, position: 2))
            try transaction.save(Symbol(id: "juice", label: "juice", page: 3, position: 1))
        }
        try await store.write { try $0.append(Tap(symbol: "juice")) }

        // Reading and observing.
        let page3 = Symbol.filter(\.page == 3).order(\.position)
        let symbols = try await store.read { try page3.fetchAll($0) }
        XCTAssertEqual(symbols.map(\.id), ["juice", "puzzle"])
        let count = try await store.read { try Symbol.filter(\.page >= 1).fetchCount($0) }
        XCTAssertEqual(count, 2)
        let taps = try await store.read { try $0.logEntries(Tap.self) }
        XCTAssertEqual(taps.map(\.value.symbol), ["juice"])
        for try await symbols in store.observe(page3) {
            XCTAssertEqual(symbols.map(\.id), ["juice", "puzzle"], "the current page first")
            break
        }

        // A server (a real sshd), the other parent's tablet.
        try server.authorize(publicKeyLine: me.publicKeyLine)
        try await store.addRemote("origin", url: server.url(for: bare))
        let nasFingerprint = server.hostKeyFingerprint
        let partner = try Identity.create(member: "partner", device: "tablet", in: sandbox.appendingPathComponent("tablet/concord"))
        try server.authorize(publicKeyLine: partner.publicKeyLine)
        let partnerKey = partner.key.publicKey
        try await store.trustHost(fingerprint: nasFingerprint)
        try await store.addMember("partner", role: .admin, device: "tablet", key: partnerKey)
        let report = try await store.sync()
        XCTAssertGreaterThan(report.sent, 0)
        let tabletURL = sandbox.appendingPathComponent("tablet/board")
        let tablet = try await ConcordStore.clone(url: server.url(for: bare), into: tabletURL, identity: partner,
                                                  environment: ConcordEnvironment(home: partner.home), trustHost: nasFingerprint)
        try await tablet.write { try $0.save(Symbol(id: "park", label: "park", page: 1, position: 3)) }

        // An invitation link for the therapist, sent by the app's own messaging.
        let shared = try await store.shareLink("therapist", role: .user, expiresIn: 7 * 86_400)
        _ = try await store.sync()
        var messages = Outbox()
        messages.send(shared.invitation.text)
        let received = try XCTUnwrap(messages.sent.last)
        let therapist = try Identity.create(member: "therapist", device: "ipad", in: sandbox.appendingPathComponent("ipad/concord"))
        try server.authorize(publicKeyLine: therapist.publicKeyLine)
        let url = sandbox.appendingPathComponent("ipad/board")
        let (board, _) = try await ConcordStore.accept(try Invitation(text: received), into: url, identity: therapist,
                                                       environment: ConcordEnvironment(home: therapist.home), trustHost: nasFingerprint)
        try await board.write { try $0.append(Tap(symbol: "juice")) }
        let boardTaps = try await board.read { try $0.logEntries(Tap.self) }
        XCTAssertEqual(boardTaps.count, 2, "the phone's tap came with the clone, and the therapist's own")

        // The change feed, from the start, until it has told the phone's own commits.
        var lastSeen: ChangeToken?
        var told = [ChangedRecord]()
        func apply(_ records: [ChangedRecord]) { told += records }
        func show(_ conflicts: [MergeConflictLoss]) { XCTAssertEqual(conflicts.count, 0) }
        for try await event in store.changes(since: lastSeen) {
            switch event {
            case .commit(let commit):
                apply(commit.records)
                show(commit.conflicts)
                lastSeen = commit.token
            case .accessRemoved, .profileDeleted:
                XCTFail("the feed ended: \(event)")
            }
            if told.contains(where: { $0.id == "puzzle" }) { break }
        }
        XCTAssertNotNil(lastSeen)
        for opened in [store, tablet, board] { opened.close() }
    }
}

/// The app's own messaging, as the article's `messages` stands for it.
private struct Outbox {
    private(set) var sent = [String]()

    mutating func send(_ text: String) { sent.append(text) }
}
