/// A reference model of the validity rule (docs/security.md, "The rule"): who may do what, and what
/// merging two lines of history gives, over a commit DAG — deliberately simple and slow, no git, no
/// bytes. `AuthorityModelTests` builds random histories on real repositories and asks this model and
/// the real code the same question about every commit; they must agree.
///
/// What it covers: members (role, active or not, device keys), records of two kinds (`vocabulary`,
/// written by Editors; `settings`, by Admins), membership changes by Admins (keys removed too), members leaving, a member
/// claiming another's key or a higher role, merges from any two commits (the policy merge, or one with
/// an extra change of its signer's), and who may write `vocabulary` (its `writers`, which only an
/// Admin changes). Invitations are left to their own tests.
public enum AuthorityModel {
    public enum Role: Int, Comparable, CaseIterable, Sendable {
        case viewer, user, editor, admin
        public var name: String { ["viewer", "user", "editor", "admin"][rawValue] }
        public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }
    }

    public struct Member: Equatable, Sendable {
        public var role: Role
        public var active: Bool
        /// device → public key line
        public var keys: [String: String]
        public init(role: Role, active: Bool, keys: [String: String]) {
            self.role = role
            self.active = active
            self.keys = keys
        }
    }

    public struct Record: Equatable, Sendable {
        public var kind: String
        public var by: String
        /// False: a tombstone (a merge left the write out).
        public var live: Bool
        public init(kind: String, by: String, live: Bool) {
            self.kind = kind
            self.by = by
            self.live = live
        }
    }

    public struct State: Equatable, Sendable {
        public var members: [String: Member]
        public var records: [String: Record]
        /// The lowest role that writes `vocabulary` (its kind's `writers`).
        public var writers: Role
        public init(members: [String: Member], records: [String: Record], writers: Role = .editor) {
            self.members = members
            self.records = records
            self.writers = writers
        }

        /// The lowest role that writes `kind` here.
        func writers(of kind: String) -> Role { kind == "vocabulary" ? writers : .admin }
    }

    /// What a commit does. For a merge: the change its signer made beyond the policy merge.
    public enum Op: Equatable, Sendable {
        case add(name: String, role: Role, device: String, key: String)
        case revoke(String)
        /// An Admin removes every device key of a member (who stays a member).
        case removeKeys(String)
        case setRole(String, Role)
        /// The signer's member leaves: revoked, no keys.
        case leave
        /// A new record (ids are never reused).
        case write(kind: String, id: String)
        /// The signer lists another member's key as a device of their own.
        case takeKey(from: String, device: String)
        /// The signer sets their own role.
        case grantSelf(Role)
        /// The signer sets who writes `vocabulary` (a kinds change).
        case setWriters(Role)

        var changesMembership: Bool {
            switch self {
            case .write, .setWriters: false
            default: true
            }
        }
    }

    public struct Commit: Sendable {
        public let id: String
        public let parents: [String]
        /// The signing key's line.
        public let key: String
        /// Nil: a merge equal to the policy merge of its parents.
        public let op: Op?
        public init(id: String, parents: [String], key: String, op: Op?) {
            self.id = id
            self.parents = parents
            self.key = key
            self.op = op
        }
    }

    /// The valid commits so far and the state each gives.
    public final class History {
        public private(set) var states = [String: State]()
        private var commits = [String: Commit]()
        /// Each commit's ancestors, itself included.
        private var ancestors = [String: Set<String>]()
        /// For a merge with an extra change: the policy merge of its parents, what its change is against.
        private var policyMerges = [String: State]()
        private let root: String

        public init(root: String, state: State) {
            self.root = root
            states[root] = state
            ancestors[root] = [root]
            commits[root] = Commit(id: root, parents: [], key: "", op: nil)
        }

        /// The state `commit` gives if it is valid (and then it joins the history), else nil.
        public func judge(_ commit: Commit) -> State? {
            let state: State?
            if commit.parents.count == 1 {
                state = applying(commit.op!, by: commit.key, to: states[commit.parents[0]]!)
            } else {
                state = judgeMerge(commit)
            }
            guard let state else { return nil }
            commits[commit.id] = commit
            ancestors[commit.id] = commit.parents.reduce(into: [commit.id]) { $0.formUnion(ancestors[$1]!) }
            states[commit.id] = state
            return state
        }

        /// Rules 1, 2 and 5 for a commit with one parent: the state after `op`, or nil if `key`'s
        /// member may not make it, or if it leaves no active Admin.
        func applying(_ op: Op, by key: String, to parent: State) -> State? {
            guard let next = changing(op, by: key, parent) else { return nil }
            func hasAdmin(_ state: State) -> Bool { state.members.values.contains { $0.active && $0.role == .admin } }
            return hasAdmin(next) || !hasAdmin(parent) ? next : nil
        }

        private func changing(_ op: Op, by key: String, _ parent: State) -> State? {
            guard let name = holder(key, parent.members), let me = parent.members[name], me.active else { return nil }
            var next = parent
            switch op {
            case .add(let new, let role, let device, let newKey):
                guard me.role == .admin, parent.members[new] == nil, holder(newKey, parent.members) == nil else { return nil }
                next.members[new] = Member(role: role, active: true, keys: [device: newKey])
            case .revoke(let target):
                guard me.role == .admin, parent.members[target] != nil else { return nil }
                next.members[target]!.active = false
            case .removeKeys(let target):
                guard me.role == .admin, parent.members[target] != nil else { return nil }
                next.members[target]!.keys = [:]
            case .setRole(let target, let role):
                guard me.role == .admin, parent.members[target] != nil else { return nil }
                next.members[target]!.role = role
            case .leave:
                next.members[name] = Member(role: me.role, active: false, keys: [:])
            case .write(let kind, let id):
                guard me.role >= parent.writers(of: kind) else { return nil }
                next.records[id] = Record(kind: kind, by: name, live: true)
            case .setWriters(let role):
                guard me.role == .admin else { return nil }
                next.writers = role
            case .takeKey:
                return nil   // a key belongs to one member
            case .grantSelf(let role):
                guard me.role == .admin else { return nil }
                next.members[name]!.role = role
            }
            return next
        }

        /// Rule 3: a merge is judged by what merging its parents gives. Equal to it, its signer must
        /// be active there; an extra change is judged with the lowest role the signer holds there and
        /// in each parent (active in each), and never touches membership.
        private func judgeMerge(_ commit: Commit) -> State? {
            let (a, b) = (commit.parents[0], commit.parents[1])
            // A merge on the side that took this main line's commits as its own side, where that order
            // gives another state than the main line first, is refused: what reached main counts first.
            for id in ancestors[b]!.subtracting(ancestors[a]!) where commits[id]!.parents.count == 2 {
                let (first, second) = (commits[id]!.parents[0], commits[id]!.parents[1])
                let itsSide = ancestors[second]!.subtracting(ancestors[first]!)
                if !itsSide.isDisjoint(with: ancestors[a]!), merged(first, second) != merged(second, first) { return nil }
            }
            let expected = merged(a, b)
            guard let name = holder(commit.key, expected.members), let me = expected.members[name], me.active else { return nil }
            guard let op = commit.op else { return expected }
            guard !op.changesMembership else { return nil }
            var judged = me
            for parent in [a, b] {
                guard let there = states[parent]!.members[name], there.active else { return nil }
                judged.role = min(judged.role, there.role)
            }
            // A kind it writes must be writable by them under the merged kinds and each parent's.
            if case .write(let kind, _) = op, judged.role < [expected, states[a]!, states[b]!].map({ $0.writers(of: kind) }).max()! { return nil }
            var inParent = expected
            inParent.members[name] = judged
            guard var next = applying(op, by: commit.key, to: inParent) else { return nil }
            next.members = expected.members
            policyMerges[commit.id] = expected
            return next
        }

        /// What merging `a` (the first parent, the main line) and `b` gives: `a`'s membership with the
        /// side's decisions replayed onto it (`replay`), the records of both sides, less the side's
        /// writes whose key no active member holds where they land, or whose holder there may not
        /// write their kind. Where a side commit lands: the main line's membership with the side's
        /// decisions before it (in replay order) replayed. The main line's writes reached the remote
        /// before the side's decisions: they all stand.
        ///
        /// Who writes `vocabulary`: the kinds file merged three ways (against the merge base's; a
        /// change on both sides takes the stricter role). A side's kinds change whose signer is not an
        /// Admin where it lands falls, and then the main line's kinds hold, for every side write too;
        /// else each side write is judged under the main line's kinds with the side's kinds changes
        /// before it merged in, three ways, each against what it was made on.
        public func merged(_ a: String, _ b: String) -> State {
            let side = ancestors[b]!.subtracting(ancestors[a]!)
            let (replayed, landing, order) = replay(side: side, from: b, onto: states[a]!.members)
            func answering(_ id: String) -> (name: String, member: Member)? {
                let there = landing[id]!
                return there.filter { $0.value.active && $0.value.keys.values.contains(commits[id]!.key) }.min { $0.key < $1.key }
                    .map { ($0.key, $0.value) }
            }
            let kindsChanges = order.filter { if case .setWriters? = commits[$0]!.op { return true } else { return false } }
            let kindsFell = kindsChanges.contains { answering($0)?.member.role != .admin }
            var writers: Role
            var landingWriters = [String: Role]()
            if kindsFell {
                writers = states[a]!.writers
                for id in order { landingWriters[id] = writers }
            } else {
                writers = Self.mergeWriters(base: baseWriters(a, b), ours: states[a]!.writers, theirs: states[b]!.writers)
                var current = states[a]!.writers
                for id in order {
                    landingWriters[id] = current
                    guard case .setWriters? = commits[id]!.op else { continue }
                    let commit = commits[id]!
                    let before = commit.parents.count == 1 ? states[commit.parents[0]]!.writers : policyMerges[id]!.writers
                    current = Self.mergeWriters(base: before, ours: current, theirs: states[id]!.writers)
                }
            }
            var members = replayed
            for parent in [a, b] {
                for (name, member) in states[parent]!.members where members[name] == nil {
                    members[name] = Member(role: member.role, active: false, keys: [:])   // kept, admitting nobody
                }
            }
            var records = states[a]!.records
            for (id, record) in states[b]!.records where records[id]?.live != false { records[id] = record }
            for id in side {
                guard case .write(let kind, let record)? = commits[id]!.op else { continue }
                let needs = kind == "vocabulary" ? landingWriters[id]! : .admin
                if (answering(id)?.member.role ?? .viewer) < needs || answering(id) == nil { records[record]?.live = false }
            }
            return State(members: members, records: records, writers: writers)
        }

        /// The `writers` of the merge base of `a` and `b`: of their best common ancestors, which all
        /// give the same (nil when they do not: then which one git takes, or the virtual base it makes
        /// of them, decides, and that is git's choice, not the rule's; the tests make no such merge).
        public func baseWriters(_ a: String, _ b: String) -> Role? {
            let common = ancestors[a]!.intersection(ancestors[b]!)
            let best = common.filter { c in !common.contains { $0 != c && ancestors[$0]!.contains(c) } }
            let writers = Set(best.map { states[$0]!.writers.rawValue })
            return writers.count == 1 ? Role(rawValue: writers.first!) : nil
        }

        /// A kind's `writers` merged three ways: one side's change, or on both sides the stricter role.
        static func mergeWriters(base: Role?, ours: Role, theirs: Role) -> Role {
            if ours == theirs || theirs == base { return ours }
            if ours == base { return theirs }
            return max(ours, theirs)
        }

        /// The side's membership decisions (its non-merge commits that change membership), replayed
        /// onto the main line's membership in mainline order: a depth-first post-order from `tip`, first
        /// parent before second, a commit after its parents. No id, key or time orders anything. Each is
        /// judged against the running membership: an active Admin's stands unless it adds a name already
        /// taken or leaves no active Admin; another active member's stands iff it only has them leave
        /// (and leaves an active Admin); anyone else's falls. A standing addition replaces the file; any
        /// other standing change is merged three ways into the running file (base: its parent's).
        /// Also returns the membership each side commit lands on: the running one before it.
        func replay(side: Set<String>, from tip: String, onto main: [String: Member])
            -> (state: [String: Member], landing: [String: [String: Member]], order: [String]) {
            var order = [String](), seen = Set<String>()
            func visit(_ id: String) {
                guard side.contains(id), seen.insert(id).inserted else { return }
                for parent in commits[id]!.parents { visit(parent) }
                order.append(id)
            }
            visit(tip)
            var state = main
            var landing = [String: [String: Member]]()
            func hasAdmin(_ members: [String: Member]) -> Bool { members.values.contains { $0.active && $0.role == .admin } }
            for id in order {
                let commit = commits[id]!
                landing[id] = state
                guard commit.parents.count == 1, commit.op!.changesMembership else { continue }
                guard let signer = holder(commit.key, state), let me = state[signer], me.active,
                      me.role == .admin || commit.op == .leave else { continue }
                let before = states[commit.parents[0]]!.members, after = states[id]!.members
                var next = state
                var stands = true
                for name in Set(before.keys).union(after.keys).sorted() where before[name] != after[name] {
                    if before[name] == nil {
                        guard state[name] == nil else { stands = false; break }   // the name is taken on the main line
                        next[name] = after[name]!
                    } else if state[name] == nil {
                        stands = false   // a change to a file whose own addition did not count falls with it
                        break
                    } else {
                        next[name] = Self.mergeMember(base: before[name], ours: state[name], theirs: after[name]!)
                    }
                }
                // A key belongs to one member: a decision giving one another member holds there falls.
                for name in Set(before.keys).union(after.keys) where before[name] != after[name] {
                    for key in Array(next[name]?.keys.values ?? [:].values) where state[name]?.keys.values.contains(key) != true {
                        if next.contains(where: { $0.key != name && $0.value.keys.values.contains(key) }) { stands = false }
                    }
                }
                if stands, hasAdmin(next) { state = next }
            }
            return (state, landing, order)
        }

        /// A member file merged three ways: a revocation wins; two admissions of one name with
        /// different keys admit nobody; otherwise each field (and each device's key) as documents merge,
        /// a field changed differently on both sides taking the greater value.
        static func mergeMember(base: Member?, ours: Member?, theirs: Member) -> Member {
            guard let ours, ours != base else { return theirs }
            if ours == theirs || theirs == base { return ours }
            if ours.active != theirs.active { return ours.active ? theirs : ours }
            if ours.active, theirs.active, base?.active != true, Set(ours.keys.values) != Set(theirs.keys.values) {
                return base ?? Member(role: max(ours.role.name, theirs.role.name) == ours.role.name ? ours.role : theirs.role,
                                      active: false, keys: [:])
            }
            func field<T: Equatable>(_ base: T?, _ ours: T?, _ theirs: T?, greater: (T, T) -> T) -> T? {
                if ours == theirs || theirs == base { return ours }
                if ours == base { return theirs }
                guard let ours, let theirs else { return ours ?? theirs }
                return greater(ours, theirs)
            }
            let role = field(base?.role, ours.role, theirs.role) { max($0.name, $1.name) == $0.name ? $0 : $1 }!
            var keys = [String: String]()
            for device in Set(ours.keys.keys).union(theirs.keys.keys).union(base?.keys.keys ?? [:].keys) {
                keys[device] = field(base?.keys[device], ours.keys[device], theirs.keys[device]) { max($0, $1) }
            }
            return Member(role: role, active: ours.active, keys: keys)
        }

        /// The member holding `key` (the first by name, as the real code picks).
        public func holder(_ key: String, _ members: [String: Member]) -> String? {
            members.filter { $0.value.keys.values.contains(key) }.keys.min()
        }
    }
}
