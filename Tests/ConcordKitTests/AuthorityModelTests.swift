import Foundation
import XCTest
import ConcordModel

@testable import ConcordGit
@testable import ConcordEngine
@testable import ConcordKit

/// The validity rule against its reference model (`AuthorityModel`, in the test-support target): five
/// members, some of them malicious, build random histories on a real repository — commits on 3–5
/// heads, forks from any earlier commit, merges of any two commits in either parent order (the policy
/// merge, or one with an extra change of the signer's), revocations, demotions and promotions racing
/// one another, members leaving, claiming a higher role or another's key, Admins (and demoted Admins on
/// old forks) changing who writes a kind. Every commit is judged by
/// the real check every device and server runs (`IncomingCheck`) and by the model, which must agree;
/// for every merge the real policy merge must give the membership and records the model gives.
final class AuthorityModelTests: KitTestCase {
    /// 300 cases in the suite (about 70 s in a debug build on a shared machine); `CONCORD_MODEL_CASES` and `CONCORD_MODEL_SEED` run more and others.
    static let cases = ProcessInfo.processInfo.environment["CONCORD_MODEL_CASES"].flatMap(Int.init) ?? 300
    static let baseSeed = ProcessInfo.processInfo.environment["CONCORD_MODEL_SEED"].flatMap(UInt64.init) ?? 0xA07_0031

    private typealias Model = AuthorityModel
    private let names = ["alice", "bob", "carol", "dave", "eve"]
    private let newcomers = ["fay", "gus"]
    private var identities = [String: Identity]()

    func testTheRealRuleAgreesWithTheReferenceModelOnRandomHistories() throws {
        // hal's key is never a signer's: the one two copies give two newcomers (`keyClash`).
        for name in names + newcomers + ["hal"] { identities[name] = try makeIdentity(name, device: "d") }
        var totals = (commits: 0, refused: 0, merges: 0, leftOut: 0, fell: 0, forks: 0, keyClashes: 0, kindsChanges: 0, leftOutByKinds: 0,
                      ambiguous: 0)
        for n in 0..<UInt64(Self.cases) {
            let seed = Self.baseSeed &+ n &* 104_729
            let outcome = try runCase(seed: seed, directory: "case\(n)")
            totals.commits += outcome.commits
            totals.refused += outcome.refused
            totals.merges += outcome.merges
            totals.leftOut += outcome.leftOut
            totals.fell += outcome.fell
            totals.forks += outcome.forks
            totals.keyClashes += outcome.keyClashes
            totals.kindsChanges += outcome.kindsChanges
            totals.leftOutByKinds += outcome.leftOutByKinds
            totals.ambiguous += outcome.ambiguous
        }
        print("authority model: \(Self.cases) cases, \(totals.commits) commits judged, \(totals.refused) refused, \(totals.merges) merges, "
              + "\(totals.fell) merges where a membership change fell, \(totals.leftOut) where writes were left out, "
              + "\(totals.forks) adversarial forks merged back, \(totals.keyClashes) merges of two copies giving one key to two newcomers, "
              + "\(totals.kindsChanges) kinds changes, \(totals.leftOutByKinds) merges leaving writes out for the kinds where they land, "
              + "\(totals.ambiguous) merges not made (merge bases with different kinds: git's choice of base decides)")
        // The generator must reach the cases the rule is about.
        XCTAssertGreaterThan(totals.refused, totals.commits / 10)
        XCTAssertGreaterThan(totals.fell, Self.cases / 20)
        XCTAssertGreaterThan(totals.leftOut, Self.cases / 20)
        XCTAssertGreaterThan(totals.forks, Self.cases / 20)
        XCTAssertGreaterThan(totals.keyClashes, Self.cases / 20)
        XCTAssertGreaterThan(totals.kindsChanges, Self.cases / 5)
        XCTAssertGreaterThan(totals.leftOutByKinds, Self.cases / 50)
    }

    private struct Outcome {
        var commits = 0, refused = 0, merges = 0, leftOut = 0, fell = 0, forks = 0, keyClashes = 0, kindsChanges = 0, leftOutByKinds = 0
        var ambiguous = 0
    }

    /// The profile every case starts from (alice creates it and adds the others), made once: each
    /// case builds on its last commit in the same repository.
    private var shared: (profile: Profile, start: ObjectID, state: Model.State)?

    private func startingPoint() throws -> (profile: Profile, start: ObjectID, state: Model.State) {
        if let shared { return shared }
        let alice = identities["alice"]!
        let profile = try Profile.create(at: sandbox.appendingPathComponent("shared"), name: "Case", template: .aac, identity: alice,
                                         environment: makeEnvironment(alice))
        for (name, role) in [("bob", ConcordModel.Role.admin), ("carol", .editor), ("dave", .viewer), ("eve", .user)] {
            try profile.members.add(name, role: role, device: "d", key: identities[name]!.key.publicKey, as: alice)
        }
        let start = try XCTUnwrap(try profile.repository.resolveReference("HEAD"))
        shared = (profile, start, try modelState(start, profile.repository))
        return shared!
    }

    private func runCase(seed: UInt64, directory: String) throws -> Outcome {
        var rng = SplitMix64(seed: seed)
        let (profile, start, startState) = try startingPoint()
        let repository = profile.repository
        let model = Model.History(root: start.hex, state: startState)
        var outcome = Outcome()
        var valid = [start]
        var heads = [ObjectID](repeating: start, count: Int.random(in: 3...5, using: &rng))
        var story = [String]()
        var stamp: Int64 = 0
        var nextRecord = 0

        func judge(_ commit: ObjectID, parents: [ObjectID], signer: String, op: Model.Op?, what: String) throws -> Bool {
            let real: Bool
            var refusal = ""
            do {
                try IncomingCheck(repository: repository, profileID: profile.info.id, caches: EngineCaches()).verify(tip: commit, known: parents)
                real = true
            } catch let error as ConcordError {
                guard case .unauthorizedCommit = error else { throw error }   // anything else: the generator wrote a bad file
                real = false
                refusal = "\(error)"
            }
            let modelState = model.judge(Model.Commit(id: commit.hex, parents: parents.map(\.hex), key: key(signer), op: op))
            story.append("\(commit.short) on \(parents.map(\.short).joined(separator: "+")): \(what) by \(signer): \(real ? "valid" : "refused")")
            outcome.commits += 1
            if !real { outcome.refused += 1 }
            if real, case .setWriters? = op { outcome.kindsChanges += 1 }
            XCTAssertEqual(real, modelState != nil, "seed \(seed): \(what) by \(signer): real \(real ? "accepts" : "refuses (\(refusal))"), "
                           + "the model \(modelState != nil ? "accepts" : "refuses")\n\(story.joined(separator: "\n"))")
            if real, let modelState {
                let realState = try self.modelState(commit, repository)
                XCTAssertTrue(realState == modelState, "seed \(seed): \(what): \(difference(realState, modelState))\n\(story.joined(separator: "\n"))")
            }
            return real && modelState != nil
        }

        /// The policy merge of `parents` (first: the main line), checked against the model, then
        /// committed by `signer` (with an extra change now and then) and judged.
        func mergeStep(head: Int, parents: [ObjectID], signer: String, extra: Bool) throws {
            guard model.baseWriters(parents[0].hex, parents[1].hex) != nil else {
                outcome.ambiguous += 1
                return
            }
            let merge = try PolicyMerge.compute(in: repository, ours: parents[0], theirs: parents[1], caches: EngineCaches())
            outcome.merges += 1
            if !merge.resolution.overrides.isEmpty { outcome.fell += 1 }
            if !merge.leftOut.isEmpty { outcome.leftOut += 1 }
            if merge.leftOut.contains(where: { $0.cause == .kindsChanged }) { outcome.leftOutByKinds += 1 }
            let expected = model.merged(parents[0].hex, parents[1].hex)
            let realMerge = try modelState(merge.tree, tree: true, repository)
            XCTAssertTrue(realMerge == expected, "seed \(seed): the policy merge of \(parents[0].short) and \(parents[1].short): "
                           + "\(difference(realMerge, expected))\n\(story.joined(separator: "\n"))")
            var op: Model.Op?
            var tree = merge.tree
            if extra, let change = randomOp(by: signer, state: expected, record: &nextRecord, rng: &rng) {
                op = change
                tree = try apply(change, by: signer, to: tree, state: expected, stamp: stamp, repository)
            }
            let commit = try repository.createSignedCommit(tree: tree, parents: parents, author: author(signer, stamp),
                                                           message: "merge", sign: { self.identities[signer]!.sign($0) })
            if try judge(commit, parents: parents, signer: signer, op: op, what: "merge \(parents[0].short)+\(parents[1].short)"
                         + (op.map { " with " + Self.describe($0) } ?? "")) {
                heads[head] = commit
                valid.append(commit)
            }
        }

        /// A member who lost rights at this head (revoked, demoted, or their key removed) forks from an
        /// earlier commit where they were an active Admin holding that key, makes a membership decision
        /// there (revoke or demote an Admin of the head, or add an alias Admin), and merges it back in
        /// either parent order, signed by themselves or by an Admin of the head.
        func adversarialFork(head: Int) throws {
            let tip = heads[head], tipState = model.states[tip.hex]!
            let losers = names.filter { name in
                guard let member = tipState.members[name] else { return false }
                return !member.active || member.role != .admin || !member.keys.values.contains(key(name))
            }
            guard let loser = losers.randomElement(using: &rng) else { return }
            let points = valid.filter { id in
                guard let member = model.states[id.hex]!.members[loser] else { return false }
                return member.active && member.role == .admin && model.holder(key(loser), model.states[id.hex]!.members) == loser
            }
            guard let point = points.randomElement(using: &rng) else { return }
            let there = model.states[point.hex]!
            let tipAdmins = tipState.members.filter { $0.value.active && $0.value.role == .admin }.keys.sorted()
            let targets = tipAdmins.filter { $0 != loser && there.members[$0] != nil }
            var choices = [Model.Op]()
            if let target = targets.randomElement(using: &rng) { choices += [.revoke(target), .setRole(target, .viewer)] }
            if let alias = newcomers.filter({ there.members[$0] == nil }).randomElement(using: &rng) {
                choices.append(.add(name: alias, role: .admin, device: "d", key: key(alias)))
            }
            if there.writers != .viewer { choices.append(.setWriters(.viewer)) }   // loosen a kind on the old copy, then write it
            guard let op = choices.randomElement(using: &rng) else { return }
            stamp += 1000
            story.append("\(loser), who lost rights at head \(head), forks from \(point.short)")
            let tree = try apply(op, by: loser, to: try repository.commit(point).tree, state: there, stamp: stamp, repository)
            let fork = try repository.createSignedCommit(tree: tree, parents: [point], author: author(loser, stamp),
                                                         message: "\(op)", sign: { self.identities[loser]!.sign($0) })
            guard try judge(fork, parents: [point], signer: loser, op: op, what: Self.describe(op)) else { return }
            valid.append(fork)
            var sideTip = fork
            if case .setWriters = op, let writer = there.members.filter({ $0.value.active }).keys.sorted().randomElement(using: &rng) {
                // Someone writes the kind the loosening opened to them, on the old copy.
                stamp += 1000
                nextRecord += 1
                if let write = try commitStep(.write(kind: "vocabulary", id: "r\(nextRecord)"), by: writer, on: fork) { sideTip = write }
            }
            guard try !repository.isAncestor(sideTip, of: tip), try !repository.isAncestor(tip, of: sideTip) else { return }
            outcome.forks += 1
            let parents = Bool.random(using: &rng) ? [tip, sideTip] : [sideTip, tip]
            let signer = Bool.random(using: &rng) || tipAdmins.isEmpty ? loser : tipAdmins.randomElement(using: &rng)!
            try mergeStep(head: head, parents: parents, signer: signer, extra: false)
        }

        /// `op` by `signer` committed on `parent` and judged; the commit if it is valid.
        func commitStep(_ op: Model.Op, by signer: String, on parent: ObjectID) throws -> ObjectID? {
            let state = model.states[parent.hex]!
            let tree = try apply(op, by: signer, to: try repository.commit(parent).tree, state: state, stamp: stamp, repository)
            let commit = try repository.createSignedCommit(tree: tree, parents: [parent], author: author(signer, stamp),
                                                           message: "\(op)", sign: { self.identities[signer]!.sign($0) })
            guard try judge(commit, parents: [parent], signer: signer, op: op, what: Self.describe(op)) else { return nil }
            valid.append(commit)
            return commit
        }

        /// A member writes on a copy of the head while an Admin there revokes or demotes them, or lets only Admins write the kind, and the
        /// two meet in a merge in either parent order: the write falls only when it is on the side.
        func race(head: Int) throws {
            let tip = heads[head], state = model.states[tip.hex]!
            let admins = state.members.filter { $0.value.active && $0.value.role == .admin }.keys.sorted()
            guard let admin = admins.randomElement(using: &rng),
                  let writer = state.members.filter({ $0.key != admin && $0.value.active && $0.value.role >= .editor })
                      .keys.sorted().randomElement(using: &rng) else { return }
            stamp += 1000
            nextRecord += 1
            guard let write = try commitStep(.write(kind: "vocabulary", id: "r\(nextRecord)"), by: writer, on: tip) else { return }
            stamp += 1000
            let decision: Model.Op = [.revoke(writer), .setRole(writer, .viewer), .setWriters(.admin)].randomElement(using: &rng)!
            guard let decided = try commitStep(decision, by: admin, on: tip) else { return }
            heads[head] = decided
            let parents = Bool.random(using: &rng) ? [decided, write] : [write, decided]
            try mergeStep(head: head, parents: parents, signer: admin, extra: false)
        }

        /// An Admin lets a member who may not write vocabulary write it, on a copy of the head, and the
        /// member writes it there; meanwhile, on the head, another Admin demotes or revokes that
        /// Admin, lets only Admins write it, or writes something. The two meet in a merge in either
        /// parent order: the write stands where the loosening stands where it lands.
        func kindsRace(head: Int) throws {
            let tip = heads[head], state = model.states[tip.hex]!
            let admins = state.members.filter { $0.value.active && $0.value.role == .admin }.keys.sorted()
            guard let loosener = admins.randomElement(using: &rng),
                  let writer = state.members.filter({ $0.value.active && $0.value.role < state.writers }).keys.sorted().randomElement(using: &rng)
            else { return }
            stamp += 1000
            guard let loosened = try commitStep(.setWriters(state.members[writer]!.role), by: loosener, on: tip) else { return }
            stamp += 1000
            nextRecord += 1
            guard let write = try commitStep(.write(kind: "vocabulary", id: "r\(nextRecord)"), by: writer, on: loosened) else { return }
            stamp += 1000
            guard let other = admins.filter({ $0 != loosener }).randomElement(using: &rng) else {
                heads[head] = write
                return
            }
            nextRecord += 1
            let decision: Model.Op = [.setRole(loosener, .editor), .revoke(loosener), .setWriters(.admin),
                                      .write(kind: "settings", id: "r\(nextRecord)")].randomElement(using: &rng)!
            guard let decided = try commitStep(decision, by: other, on: tip) else { return }
            heads[head] = decided
            try mergeStep(head: head, parents: Bool.random(using: &rng) ? [decided, write] : [write, decided], signer: admins[0], extra: false)
        }

        /// Admins on two copies of the head add the two newcomers with one key, and the copies meet in
        /// a merge in either parent order: the side's addition falls (a key belongs to one member).
        func keyClash(head: Int) throws {
            let tip = heads[head], state = model.states[tip.hex]!
            let admins = state.members.filter { $0.value.active && $0.value.role == .admin }.keys.sorted()
            guard let first = admins.randomElement(using: &rng), let second = admins.randomElement(using: &rng),
                  newcomers.allSatisfy({ state.members[$0] == nil }), model.holder(key("hal"), state.members) == nil else { return }
            stamp += 1000
            guard let a = try commitStep(.add(name: newcomers[0], role: .editor, device: "d", key: key("hal")), by: first, on: tip) else { return }
            stamp += 1000
            guard let b = try commitStep(.add(name: newcomers[1], role: .admin, device: "d", key: key("hal")), by: second, on: tip) else { return }
            heads[head] = a
            outcome.keyClashes += 1
            try mergeStep(head: head, parents: Bool.random(using: &rng) ? [a, b] : [b, a], signer: first, extra: false)
        }

        for _ in 0..<Int.random(in: 10...18, using: &rng) {
            let head = Int.random(in: 0..<heads.count, using: &rng)
            let parent = heads[head]
            let state = model.states[parent.hex]!
            // Half the time an active Admin there, else anyone (a newcomer not yet added now and then).
            let admins = state.members.filter { $0.value.active && $0.value.role == .admin }.keys.sorted()
            let signer = Bool.random(using: &rng) && !admins.isEmpty ? admins.randomElement(using: &rng)!
                : (names + newcomers).filter { state.members[$0] != nil || Int.random(in: 0..<6, using: &rng) == 0 }.randomElement(using: &rng)!
            stamp += 1000
            switch Int.random(in: 0..<16, using: &rng) {
            case 0..<5:
                guard let op = randomOp(by: signer, state: state, record: &nextRecord, rng: &rng) else { continue }
                if let commit = try commitStep(op, by: signer, on: parent) { heads[head] = commit }
            case 13:
                try race(head: head)
            case 14:
                try keyClash(head: head)
            case 15:
                try kindsRace(head: head)
            case 5:
                heads[head] = valid.randomElement(using: &rng)!   // a fork from any earlier commit
                story.append("head \(head) goes back to \(heads[head].short)")
            case 6..<9:
                try adversarialFork(head: head)
            default:
                // A merge of this head with another head or any earlier commit, in either parent order.
                let other = (Bool.random(using: &rng) ? heads : valid).randomElement(using: &rng)!
                guard try !repository.isAncestor(other, of: parent), try !repository.isAncestor(parent, of: other) else { continue }
                let parents = Bool.random(using: &rng) ? [parent, other] : [other, parent]
                try mergeStep(head: head, parents: parents, signer: signer, extra: Int.random(in: 0..<3, using: &rng) == 0)
            }
        }
        return outcome
    }

    /// Something `signer` might try on `state`: what their role allows or not, honest or not.
    private func randomOp(by signer: String, state: Model.State, record: inout Int, rng: inout SplitMix64) -> Model.Op? {
        let others = state.members.keys.filter { $0 != signer }.sorted()
        switch Int.random(in: 0..<14, using: &rng) {
        case 12:
            guard let target = others.filter({ !state.members[$0]!.keys.isEmpty }).randomElement(using: &rng) else { return nil }
            return .removeKeys(target)
        case 0, 1:
            guard let target = others.filter({ state.members[$0]!.active }).randomElement(using: &rng) else { return nil }
            return .revoke(target)
        case 2, 3:
            guard let target = (others + [signer]).filter({ state.members[$0] != nil }).randomElement(using: &rng) else { return nil }
            let role = Model.Role.allCases.filter { $0 != state.members[target]!.role }.randomElement(using: &rng)!
            return .setRole(target, role)
        case 4:
            guard let name = newcomers.filter({ state.members[$0] == nil }).randomElement(using: &rng) else { return nil }
            return .add(name: name, role: Model.Role.allCases.randomElement(using: &rng)!, device: "d", key: key(name))
        case 5:
            return state.members[signer]?.active == true ? .leave : nil
        case 6:
            guard state.members[signer] != nil,
                  let victim = others.filter({ !state.members[$0]!.keys.isEmpty }).randomElement(using: &rng) else { return nil }
            return .takeKey(from: victim, device: "taken")
        case 7:
            guard let role = state.members[signer]?.role, role != .admin else { return nil }
            return .grantSelf(.admin)
        case 8:
            return .setWriters(Model.Role.allCases.filter { $0 != state.writers }.randomElement(using: &rng)!)
        default:
            record += 1
            return .write(kind: Int.random(in: 0..<4, using: &rng) == 0 ? "settings" : "vocabulary", id: "r\(record)")
        }
    }

    /// `tree` with `op` by `signer` written as concord writes it (member files, records).
    private func apply(_ op: Model.Op, by signer: String, to tree: ObjectID, state: Model.State, stamp: Int64,
                       _ repository: Repository) throws -> ObjectID {
        func member(_ name: String) throws -> Member? {
            let path = ProfilePaths.member(name)
            guard let entry = try repository.entry(at: path, inTree: tree) else { return nil }
            return try Member.decode(try repository.blob(entry.id), path: path)
        }
        let instant = HLClock.formatInstant(HLClock.parseInstant("2026-01-02T00:00:00.000Z")! + stamp)
        var path: String
        var bytes: [UInt8]
        switch op {
        case .add(let name, let role, let device, let key):
            path = ProfilePaths.member(name)
            bytes = Member(name: name, role: role.concord, status: .active, keys: [Member.Key(device: device, publicKey: try SSHPublicKey(line: key))],
                           addedBy: signer, addedAt: instant).json.canonicalBytes()
        case .revoke(let name), .setRole(let name, _), .removeKeys(let name):
            guard var member = try member(name) else { throw ConcordError.invalidInput(.memberState, "no member \(name)") }
            if case .setRole(_, let role) = op {
                member.role = role.concord
            } else if case .removeKeys = op {
                member.keys = []
            } else {
                member.status = .revoked
                member.revokedBy = signer
                member.revokedAt = instant
            }
            path = ProfilePaths.member(name)
            bytes = member.json.canonicalBytes()
        case .leave, .grantSelf, .takeKey:
            guard var member = try member(signer) else { throw ConcordError.invalidInput(.memberState, "no member \(signer)") }
            switch op {
            case .leave:
                member.status = .revoked
                member.revokedBy = signer
                member.revokedAt = instant
                member.keys = []
            case .grantSelf(let role):
                member.role = role.concord
            case .takeKey(let victim, let device):
                member.keys.append(Member.Key(device: device, publicKey: try SSHPublicKey(line: key(victim))))
            default: break
            }
            path = ProfilePaths.member(signer)
            bytes = member.json.canonicalBytes()
        case .setWriters(let role):
            let table = try KindsTable.decode(try repository.blob(try XCTUnwrap(try repository.entry(at: KindsTable.path, inTree: tree)).id))
            path = KindsTable.path
            bytes = try KindsTable(try table.kinds.map { kind in
                kind.name == "vocabulary" ? try RecordKind(name: kind.name, directory: kind.directory, policy: kind.policy, writers: role.concord) : kind
            }).canonicalBytes()
        case .write(let kind, let id):
            path = RecordPaths.file(directory: kind, id: id)
            bytes = Record(id: try RecordID(id), kind: kind, device: "d", member: signer, stamp: HLC(wallMillis: 1_767_225_600_000 + stamp),
                           state: .live(data: ["n": .number(String(stamp))])).encoded()
        }
        return try repository.createUpdatedTree(base: tree, edits: [(path, try repository.writeBlob(bytes))])
    }

    /// The model's view of commit (or tree) `id`: members and records.
    private func modelState(_ id: ObjectID, tree isTree: Bool = false, _ repository: Repository) throws -> Model.State {
        let tree = isTree ? id : try repository.commit(id).tree
        var members = [String: Model.Member]()
        for member in try CommitAuthorizer.membership(in: repository, tree: tree, caches: EngineCaches()).members.values {
            members[member.name] = Model.Member(role: Model.Role(member.role), active: member.status == .active,
                                                keys: Dictionary(member.keys.map { ($0.device, $0.publicKey.line(comment: nil)) }, uniquingKeysWith: { a, _ in a }))
        }
        var records = [String: Model.Record]()
        for kind in ["vocabulary", "settings"] {
            guard try repository.entry(at: kind, inTree: tree)?.kind == .tree else { continue }
            for bucket in try repository.entries(inDirectory: kind, ofTree: tree) where bucket.kind == .tree {
                for file in try repository.entries(inDirectory: kind + "/" + bucket.name, ofTree: tree) {
                    let record = try Record.decode(try repository.blob(file.id))
                    records[record.id.rawValue] = Model.Record(kind: kind, by: record.member, live: !record.isDeleted)
                }
            }
        }
        let kinds = try KindsTable.decode(try repository.blob(try XCTUnwrap(try repository.entry(at: KindsTable.path, inTree: tree)).id))
        let writers = try XCTUnwrap(kinds.kinds.first { $0.name == "vocabulary" }).writers
        return Model.State(members: members, records: records, writers: Model.Role(writers))
    }

    private static func describe(_ op: Model.Op) -> String {
        switch op {
        case .add(let name, let role, _, _): "add \(name) as \(role.name)"
        case .revoke(let name): "revoke \(name)"
        case .removeKeys(let name): "remove \(name)'s keys"
        case .setRole(let name, let role): "make \(name) \(role.name)"
        case .leave: "leave"
        case .write(let kind, let id): "write \(kind)/\(id)"
        case .takeKey(let victim, _): "take \(victim)'s key"
        case .grantSelf(let role): "make self \(role.name)"
        case .setWriters(let role): "let \(role.name)s write vocabulary"
        }
    }

    /// Where the real state and the model's differ, briefly.
    private func difference(_ real: Model.State, _ model: Model.State) -> String {
        func describe(_ member: Model.Member?) -> String {
            member.map { "\($0.role.name) \($0.active ? "active" : "inactive") keys \($0.keys.keys.sorted())" } ?? "absent"
        }
        var out = [String]()
        for name in Set(real.members.keys).union(model.members.keys).sorted() where real.members[name] != model.members[name] {
            out.append("\(name): real \(describe(real.members[name])), model \(describe(model.members[name]))")
        }
        for id in Set(real.records.keys).union(model.records.keys).sorted() where real.records[id] != model.records[id] {
            out.append("\(id): real \(String(describing: real.records[id])), model \(String(describing: model.records[id]))")
        }
        if real.writers != model.writers { out.append("vocabulary writers: real \(real.writers.name), model \(model.writers.name)") }
        return out.joined(separator: "; ")
    }

    private func key(_ name: String) -> String { identities[name]!.key.publicKey.line(comment: nil) }

    private func author(_ name: String, _ stamp: Int64) -> GitSignature {
        GitSignature(name: name, email: "\(name)@d.concord", time: 1_767_225_600 + stamp / 1000)
    }
}

private extension AuthorityModel.Role {
    init(_ role: ConcordModel.Role) {
        switch role {
        case .viewer: self = .viewer
        case .user: self = .user
        case .editor: self = .editor
        case .admin: self = .admin
        }
    }

    var concord: ConcordModel.Role {
        switch self {
        case .viewer: .viewer
        case .user: .user
        case .editor: .editor
        case .admin: .admin
        }
    }
}
