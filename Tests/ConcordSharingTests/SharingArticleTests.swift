import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// The Sharing Profiles and Syncing Devices articles (Sources/ConcordKit/ConcordKit.docc) run as
/// written: each line below is read from its article (the test fails when the article no longer
/// shows it) and run here, over a bare path remote, with the names the articles leave to the app
/// (keys, URLs, what the app shows) bound by the test. A snippet that throws, or does not
/// compile, fails here. `Symbol` is the articles' (ConcordTestSupport).
final class SharingArticleTests: ConcordTestCase {
    func testTheSharingArticlesCodeRunsAsWritten() async throws {
        try assertArticle("SharingProfiles.md", shows: [
            "let named = try await store.share(\"bob\", role: .editor, key: bobsKey, expiresIn: 7 * 86_400)",
            "let link = try await store.shareLink(\"therapist\", role: .user, expiresIn: 2 * 86_400)",
            "let open = try await store.shareOpen(role: .viewer, uses: 10, expiresIn: 86_400)",
            "_ = try await store.sync()",
            "send(link.invitation.text)",
            "send(open.text.text)",
            "switch link.invitation.form { case .named: …; case .link: …; case .open(let id, let uses): … }",
            "let joined = try await store.openInvitations()",
            "let invitation = try Invitation(text: pasted)",
            "let (store, _) = try await ConcordStore.accept(invitation, into: url, identity: me)",
            "try await store.setRole(\"bob\", to: .viewer)",
            "try await store.revoke(\"bob\")",
            "try await store.leave()",
            "let report = try await store.destroy()",
            "for change in event.commit?.membership ?? [] {",
            "print(change.member, change.change)",
            "let phone = try Identity.create(member: \"bob\", device: \"phone\", in: phoneHome)",
            "let proof = phone.keyProof(profileID: profileID)",
            "try await store.addDevice(\"phone\", key: phone.key.publicKey, proof: proof)",
            "let mine = try await ConcordStore.clone(url: remoteURL, into: boardURL, identity: phone)",
            "try await store.write { try $0.save(Symbol(id: \"kite\", label: \"kite\", page: 2, position: 1)) }",
            "} catch ConcordError.notAllowed(let member, let role, let action, let needs, _, _) {",
            "alert(\"\\(member) is \\(role.rawValue): \\(action) needs \\(needs.rawValue)\")",
        ])
        let remoteURL = sandbox.appendingPathComponent("board.git").path
        try Sync.createBareRemote(at: URL(fileURLWithPath: remoteURL))
        let alice = try storeIdentity("alice", device: "laptop")
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("alice"), name: "Board", identity: alice,
                                            environment: storeEnvironment(alice), records: [Symbol.self])
        try await store.addRemote("origin", url: remoteURL)

        // The three kinds of invitation.
        let bobTablet = try storeIdentity("bob", device: "tablet")
        let bobsKey = bobTablet.key.publicKey
        var outbox = [String]()
        func send(_ text: String) { outbox.append(text) }
        let named = try await store.share("bob", role: .editor, key: bobsKey, expiresIn: 7 * 86_400)
        let link = try await store.shareLink("therapist", role: .user, expiresIn: 2 * 86_400)
        let open = try await store.shareOpen(role: .viewer, uses: 10, expiresIn: 86_400)
        _ = try await store.sync()
        send(link.invitation.text)
        send(open.text.text)
        switch link.invitation.form {
        case .named, .open: XCTFail("a link is told as a link")
        case .link: break
        }
        guard case .open(_, let uses) = open.text.form else { return XCTFail("an open invitation is told as open") }
        XCTAssertEqual(uses, 10)
        let joined = try await store.openInvitations()
        XCTAssertEqual(joined.map(\.used), [0])

        // Accepting: the therapist pastes the link.
        let therapist = try storeIdentity("therapist", device: "ipad")
        let therapistStore: ConcordStore
        do {
            let pasted = outbox[0], url = sandbox.appendingPathComponent("therapist"), me = therapist
            let invitation = try Invitation(text: pasted)
            let (store, _) = try await ConcordStore.accept(invitation, into: url, identity: me, environment: storeEnvironment(me))
            therapistStore = store
        }
        // A User may not write an Editor's kind: the article's catch.
        var alerts = [String]()
        func alert(_ text: String) { alerts.append(text) }
        do {
            try await therapistStore.write { try $0.save(Symbol(id: "kite", label: "kite", page: 2, position: 1)) }
        } catch ConcordError.notAllowed(let member, let role, let action, let needs, _, _) {
            alert("\(member) is \(role.rawValue): \(action) needs \(needs.rawValue)")
        }
        XCTAssertEqual(alerts.count, 1, "the User's write was not refused as notAllowed")
        XCTAssertTrue(alerts.first?.hasPrefix("therapist is user: ") ?? false, "\(alerts)")
        XCTAssertTrue(alerts.first?.hasSuffix("needs editor") ?? false, "\(alerts)")

        // Bob accepts on his tablet, then adds his new phone.
        let tablet = try await ConcordStore.accept(try Invitation(text: named.invitation.text), into: sandbox.appendingPathComponent("bob-tablet"),
                                                   identity: bobTablet, environment: storeEnvironment(bobTablet)).store
        let profileID = tablet.info.id
        let phoneHome = sandbox.appendingPathComponent("home-bob-phone")
        let phone = try Identity.create(member: "bob", device: "phone", in: phoneHome)
        let proof = phone.keyProof(profileID: profileID)
        try await tablet.addDevice("phone", key: phone.key.publicKey, proof: proof)
        _ = try await tablet.sync()
        let boardURL = sandbox.appendingPathComponent("bob-phone")
        let mine = try await ConcordStore.clone(url: remoteURL, into: boardURL, identity: phone, environment: storeEnvironment(phone))
        XCTAssertEqual(mine.info.id, profileID)

        // The membership changes, as the change feed tells them.
        _ = try await store.sync()
        var told = [(String, MembershipEvent.Change)]()
        func print(_ member: String, _ change: MembershipEvent.Change) { told.append((member, change)) }
        for try await event in store.changes(since: nil) {
            for change in event.commit?.membership ?? [] {
                print(change.member, change.change)
            }
            if told.contains(where: { $0.0 == "bob" && $0.1 == .devicesChanged }) { break }
        }
        XCTAssertTrue(told.contains { $0.0 == "therapist" && $0.1 == .joined(.user) }, "\(told)")
        XCTAssertTrue(told.contains { $0.0 == "bob" && $0.1 == .joined(.editor) }, "\(told)")

        // Roles, revocation, leaving, deletion.
        try await store.setRole("bob", to: .viewer)
        try await store.revoke("bob")
        _ = try await therapistStore.sync()
        try await therapistStore.leave()
        _ = try await therapistStore.sync()
        _ = try await store.sync()
        let report = try await store.destroy()
        XCTAssertTrue(report.copyDeleted, "\(report.failed)")
        XCTAssertEqual(report.deleted.map(\.remote), ["origin"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: remoteURL + "/objects"), "the remote's repository is gone (its notice stays)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: store.directory.path), "the Admin's copy is gone")
        for opened in [therapistStore, tablet, mine] { opened.close() }
    }

    func testTheSyncingArticlesCodeRunsAsWritten() async throws {
        try assertArticle("SyncingDevices.md", shows: [
            "let report = try await store.sync()",
            "print(report.received, report.sent, report.resolved.count, report.lost.count)",
            "let engine = try SyncEngine(for: store)",
            "let events = engine.events()",
            "engine.start()",
            "for await event in events {",
            "switch event.kind {",
            "case .synced(let report): refresh(report)",
            "case .offline: showOffline()",
            "case .accessRemoved, .profileDeleted: closeBoard()",
            "for try await symbols in store.observe(Symbol.filter(\\.page == 3).order(\\.position)) { board.show(symbols) }",
            "guard let commit = event.commit else { closeBoard(); break }",
            "for record in commit.records where commit.origin == .sync { refresh(record.kind, record.id) }",
            "for conflict in commit.conflicts { notice(conflict.description) }",
            "lastSeen = event.token",
        ])
        let (_, store, other) = try sharedCareTeam(other: "bob", otherDevice: "tablet", role: .editor)
        try await other.write { try $0.put("vocabulary", "from-bob", data: ["label": "bob's"]) }
        _ = try await other.sync()

        // One sync, and what it says.
        var printed = [String]()
        func print(_ values: Int...) { printed.append(values.map(String.init).joined(separator: " ")) }
        let report = try await store.sync()
        print(report.received, report.sent, report.resolved.count, report.lost.count)
        XCTAssertEqual(printed.count, 1)
        XCTAssertGreaterThan(report.received, 0)

        // The change feed, telling what came by sync.
        var lastSeen: ChangeToken?
        var refreshed = [String]()
        func refresh(_ kind: String, _ id: String) { refreshed.append("\(kind)/\(id)") }
        func notice(_ text: String) {}
        func closeBoard() { XCTFail("the feed ended") }
        for try await event in store.changes(since: lastSeen) {
            guard let commit = event.commit else { closeBoard(); break }   // .accessRemoved, .profileDeleted
            for record in commit.records where commit.origin == .sync { refresh(record.kind, record.id) }
            for conflict in commit.conflicts { notice(conflict.description) }
            lastSeen = event.token
            if refreshed.contains("vocabulary/from-bob") { break }
        }
        XCTAssertNotNil(lastSeen)

        // An observer of a page, as the article writes it (Symbol's kind is the template's vocabulary).
        try await store.write { try $0.save(Symbol(id: "ball", label: "ball", page: 3, position: 1)) }
        var shown = [[Symbol]]()
        let board = (show: { (symbols: [Symbol]) in shown.append(symbols) }, ())
        for try await symbols in store.observe(Symbol.filter(\.page == 3).order(\.position)) { board.show(symbols); break }
        XCTAssertEqual(shown.first?.map(\.id), ["ball"])

        // The sync engine, bound to the store, until it has synced once.
        try await other.write { try $0.put("vocabulary", "later", data: ["label": "later"]) }
        _ = try await other.sync()
        let engine = try SyncEngine(for: store)
        let events = engine.events()
        engine.start()
        var synced = 0
        func refresh(_ report: SyncReport) { synced += 1 }
        func showOffline() { XCTFail("offline on a path remote") }
        for await event in events {
            switch event.kind {
            case .synced(let report): refresh(report)
            case .offline: showOffline()
            case .accessRemoved, .profileDeleted: closeBoard()
            default: break
            }
            if synced > 0 { break }
        }
        await engine.stop()
        XCTAssertEqual(synced, 1)
        let later = try await store.read { try $0.get("vocabulary", "later") }
        XCTAssertNotNil(later)
    }
}
