// samples/embedding: ConcordKit embedded in a small app, end to end, as `make test` runs it.
// A parent's phone and a therapist's tablet share a child's communication board through a real
// bare git remote: typed records with an app-declared kind, a query on the local index, an
// observer, the change feed, an invitation accepted on a second device, a sync each way, a
// role change, a refusal the app switches on, the parent's new device added with its key proof,
// the store's status, a sync engine bound to the tablet's store, and a revocation that ends that
// store before its copy goes. Not shown here (see the DocC articles and their tests): open
// invitations, lost edits, destroying a profile. Prints each step; exits 1 on the first failure.
import ConcordKit
import Foundation

/// A symbol on the board: its kind (declared here, registered when the Admin opens the store),
/// and the fields queries name (`fields`: explicit, no reflection).
struct Symbol: ConcordRecord, Equatable {
    static let fields: FieldNames<Symbol> = [\.page: "page", \.position: "position", \.label: "label"]
    static let kind = Kind("vocabulary", policy: .lastWriterWins, writers: .editor, indexed: fields.names)
    var id: String
    var label: String
    var page: Int
    var position: Int
}

/// One tap on the board: an append-only log entry.
struct Tap: ConcordLogEntry {
    static let kind = Kind("taps", policy: .append, writers: .user)
    var symbol: String
}

struct SampleFailure: Error, CustomStringConvertible {
    let description: String
}

func check(_ condition: Bool, _ what: String) throws {
    guard condition else { throw SampleFailure(description: "expected: \(what)") }
    print("  ok: \(what)")
}

func step(_ text: String) { print("- \(text)") }

@main
struct EmbeddingSample {
    static func main() async {
        do {
            try await run()
            print("embedding sample: all steps passed")
        } catch {
            FileHandle.standardError.write(Data("embedding sample failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run() async throws {
        let work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("concord-embedding-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let parent = try Identity.create(member: "parent", device: "phone", in: work.appendingPathComponent("parent-home"))
        let therapist = try Identity.create(member: "therapist", device: "tablet", in: work.appendingPathComponent("therapist-home"))
        let remote = work.appendingPathComponent("server/sam.git")

        step("the parent creates Sam's board with the app's kinds, and a bare remote")
        try Sync.createBareRemote(at: remote)
        let phone = try ConcordStore.create(at: work.appendingPathComponent("phone/sam"), name: "Sam's board", identity: parent,
                                            environment: ConcordEnvironment(home: parent.home),
                                            records: [Symbol.self], logs: [Tap.self])
        try await phone.addRemote("origin", url: remote.path)
        try check(phone.kinds.kind(named: "vocabulary") != nil, "the vocabulary kind is registered by the Admin's open")

        step("an observer of page 3, in the order of the board")
        let page3 = Symbol.filter(\.page == 3).order(\.position)
        let updates = phone.observe(page3)   // subscribed now: its first value is read before the writes below
        let observed = Task {
            var seen: [[Symbol]] = []
            for try await symbols in updates {
                seen.append(symbols)
                if symbols.count == 2 { break }
            }
            return seen
        }

        step("typed writes, one commit each")
        try await phone.write { try $0.save(Symbol(id: "puzzle", label: "puzzle", page: 3, position: 2)) }
        try await phone.write { try $0.save(Symbol(id: "biscuit", label: "biscuit", page: 3, position: 1)) }
        try await phone.write { try $0.save(Symbol(id: "swing", label: "swing", page: 1, position: 1)) }
        try await phone.write { try $0.append(Tap(symbol: "puzzle")) }
        let views = try await observed.value
        try check(views.first?.isEmpty == true, "the observer's first value is the board before the writes")
        try check(views.last?.map(\.id) == ["biscuit", "puzzle"], "the observer's last value is page 3 in order")

        step("a query on the local index")
        let onPage3 = try await phone.read { try page3.fetchAll($0) }
        try check(onPage3.map(\.label) == ["biscuit", "puzzle"], "page 3 ordered by position: biscuit, puzzle")
        let count = try await phone.read { try Symbol.filter(\.page >= 1).fetchCount($0) }
        try check(count == 3, "three symbols in all")

        step("the change feed from the start: one event per commit")
        var feed = phone.changes(since: nil).makeAsyncIterator()
        var tokens: [ChangeToken] = []
        var changed: [String] = []
        while let event = try await feed.next(), let commit = event.commit {
            tokens.append(commit.token)
            changed += commit.records.map(\.reference)
            if changed.contains("vocabulary/swing") { break }
        }
        try check(changed.suffix(3) == ["vocabulary/puzzle", "vocabulary/biscuit", "vocabulary/swing"],
                  "the feed names the three symbols written, in order")

        step("the parent invites the therapist as an editor, by key, and syncs")
        let invited = try await phone.share("therapist", role: .editor, key: therapist.key.publicKey, expiresIn: 3600)
        _ = try await phone.sync()
        print("  invitation: \(invited.invitation.text.prefix(48))…")

        step("the therapist accepts on the tablet, adds a symbol and syncs")
        let (tablet, _) = try await ConcordStore.accept(invited.invitation, into: work.appendingPathComponent("tablet/sam"),
                                                        identity: therapist, environment: ConcordEnvironment(home: therapist.home))
        try await tablet.write { try $0.save(Symbol(id: "ball", label: "ball", page: 3, position: 3)) }
        _ = try await tablet.sync()

        step("the parent syncs; the feed resumes from the last token seen and tells where the change came from")
        _ = try await phone.sync()
        var resumed = phone.changes(since: tokens.last).makeAsyncIterator()
        var fromSync: [String] = []
        while let event = try await resumed.next(), let commit = event.commit {
            if commit.origin == .sync { fromSync += commit.records.map(\.reference) }
            if fromSync.contains("vocabulary/ball") { break }
        }
        try check(fromSync.contains("vocabulary/ball"), "the therapist's symbol arrives as a change from a sync")
        let board = try await phone.read { try page3.fetchAll($0) }
        try check(board.map(\.id) == ["biscuit", "puzzle", "ball"], "page 3 on the phone now has the therapist's ball")

        step("the parent makes the therapist a viewer; the tablet's next edit is refused with a typed error")
        try await phone.setRole("therapist", to: .viewer)
        _ = try await phone.sync()
        _ = try await tablet.sync()
        do {
            try await tablet.write { try $0.save(Symbol(id: "kite", label: "kite", page: 2, position: 1)) }
            throw SampleFailure(description: "a viewer's write was accepted")
        } catch ConcordError.notAllowed(let member, let role, _, let needs, _, _) {
            try check(member == "therapist" && role == .viewer && needs == .editor, "notAllowed(therapist, viewer, needs editor)")
        }

        step("the parent's new laptop: its proof of its key, added from the phone, cloned, opened as itself")
        let laptop = try Identity.create(member: "parent", device: "laptop", in: work.appendingPathComponent("laptop-home"))
        try await phone.addDevice("laptop", key: laptop.key.publicKey, proof: laptop.keyProof(profileID: phone.info.id))
        try check(phone.status.pendingCommits == 1, "the phone's status: one commit to send")
        _ = try await phone.sync()
        try check(phone.status.pendingCommits == 0 && phone.status.lastSync != nil, "the phone's status: sent, with the time")
        let onLaptop = try await ConcordStore.clone(url: remote.path, into: work.appendingPathComponent("laptop/sam"), identity: laptop,
                                                    environment: ConcordEnvironment(home: laptop.home))
        try await onLaptop.write { try $0.save(Symbol(id: "kite", label: "kite", page: 2, position: 1)) }
        _ = try await onLaptop.sync()
        onLaptop.close()

        step("the tablet syncs in the background, bound to its store; the parent revokes the therapist")
        let engine = try SyncEngine(for: tablet, interval: 0.2)
        let events = engine.events()
        engine.start()
        try await phone.revoke("therapist")
        _ = try await phone.sync()
        for await event in events {
            if case .accessRemoved = event.kind { break }
        }
        await engine.stop()
        try check(tablet.status.isAccessRemoved, "the tablet's store says its access was removed")
        do {
            _ = try await tablet.read { try page3.fetchAll($0) }
            throw SampleFailure(description: "the revoked store still reads")
        } catch ConcordError.accessRemoved(let member, _, _) {
            try check(member == "therapist", "every call on the tablet's store throws accessRemoved")
        }
        try check(!FileManager.default.fileExists(atPath: tablet.directory.path), "the revoked copy is deleted, nothing re-created")
        phone.close()
    }
}
