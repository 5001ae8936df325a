import ConcordGit
import ConcordModel
import ConcordTrust
import Foundation

/// A profile's records and logs: reading them, writing them in signed commits (`write(as:)`
/// hands a `Transaction` to fill), and moving them in and out as a dump.
package struct Records {
    let profile: Profile
    let repository: Repository

    /// The live record `kind/id`; throws `recordNotFound` when it is missing or deleted, and names
    /// the file when it is not a valid record.
    public func get(_ kindName: String, _ rawID: String) throws -> Record {
        try get(try profile.kind(named: kindName), try Transaction.recordID(rawID))
    }

    /// `get` for a kind and id already parsed (`parseReference`).
    public func get(_ kind: RecordKind, _ id: RecordID) throws -> Record {
        guard kind.policy != .append else { throw ConcordError.logKindNeedsAppend(kind.name) }
        let path = Transaction.recordPath(kind, id)
        guard let record = try profile.workingTree.readRecord(path), !record.isDeleted else {
            throw ConcordError.recordNotFound("\(kind.name)/\(id)")
        }
        return record
    }

    /// The entries of log kind `kind`, oldest first.
    public func logEntries(_ kindName: String) throws -> [LogEntry] {
        let kind = try profile.kind(named: kindName)
        guard kind.policy == .append else { throw ConcordError.notALogKind(kind.name) }
        return try profile.workingTree.readLog(kind, strict: true).entries
    }

    /// The entries with id `id` of log kind `kind` (`kind/id`, as `list` names it): one per author,
    /// since an entry is its author's id (two members' entries may share an id), each with its author
    /// (`by`), in the order they reached main's first-parent chain (`LogArrival`), never by the `at`
    /// their authors wrote, so a member who reuses another's id never comes first. Throws
    /// `recordNotFound` when the log has none.
    public func logEntries(_ kind: RecordKind, id: RecordID) throws -> [LogEntry] {
        guard kind.policy == .append else { throw ConcordError.notALogKind(kind.name) }
        let entries = try profile.workingTree.readLog(kind, strict: true).entries.filter { $0.id == id }
        guard !entries.isEmpty else { throw ConcordError.recordNotFound("\(kind.name)/\(id)") }
        guard entries.count > 1 else { return entries }
        return try gitCall {
            try LogArrival.ordered(entries, kind: kind, head: try repository.resolveReference("HEAD"), in: repository)
        }
    }

    /// Every live record (and log entry) of `kind`, or of all kinds; unreadable files become warnings.
    public func list(kind kindName: String? = nil) throws -> Listing {
        let selected = try profile.kinds(selecting: kindName)
        var items = [ListedItem]()
        var warnings = [String]()
        for kind in selected {
            if kind.policy == .append {
                let log = try profile.workingTree.readLog(kind, strict: false)
                items += log.entries.map { ListedItem(kind: kind.name, id: $0.id.rawValue) }
                warnings += log.warnings
                continue
            }
            for path in profile.workingTree.recordFiles(of: kind) {
                listRecordFile(path, of: kind, into: &items, warnings: &warnings)
            }
        }
        return Listing(items: items, warnings: warnings)
    }

    /// One record file of the working tree as `list` gives it: its item when it holds a live
    /// record, a "skipped" warning when it does not read (`RecordIndex.list` reads changed files so too).
    func listRecordFile(_ path: String, of kind: RecordKind, into items: inout [ListedItem], warnings: inout [String]) {
        do {
            if let record = try profile.workingTree.readRecord(path), !record.isDeleted {
                items.append(ListedItem(kind: kind.name, id: record.id.rawValue))
            }
        } catch {
            warnings.append("skipped \(path): \(error.localizedDescription)")
        }
    }

    /// Runs `body` in a transaction and commits everything it wrote as ONE signed commit by
    /// `identity`. Nothing is committed (and nothing changes on disk) if `body` throws or writes
    /// nothing. The branch moves by compare-and-swap; if it moved meanwhile (a plain git commit,
    /// another process), the transaction is rebuilt on the new tip.
    /// Records are written by whoever acts on this device (`concord switch`), signed by its owner;
    /// `asOwner` writes as the owner all the same (the switch's own log entry).
    @discardableResult
    public func write<Value>(
        as identity: Identity, action: ChangeAction? = nil, asOwner: Bool = false, _ body: (Transaction) throws -> Value
    ) throws -> WriteResult<Value> {
        try profile.locked { try writeLocked(as: identity, action: action, asOwner: asOwner, body) }
    }

    /// `write` for a caller that holds the profile lock.
    private func writeLocked<Value>(
        as identity: Identity, action: ChangeAction?, asOwner: Bool, _ body: (Transaction) throws -> Value
    ) throws -> WriteResult<Value> {
        let identity = asOwner ? identity.acting(as: identity.owner) : try profile.members.acting(identity)
        var attempt = 0
        func once() throws -> WriteResult<Value> {
            let head = try gitCall { try repository.resolveReference("HEAD") }
            let baseTree = try head.map { id in try gitCall { try repository.commit(id).tree } }
            // Stamps follow everything the branch holds, commits a plain `git pull` brought included.
            let clock = try gitCall { try profile.clock.seeing(head) }
            let transaction = Transaction(profile: profile, repository: repository, identity: identity, baseTree: baseTree, lastStamp: clock)
            let value = try body(transaction)
            PerformanceTrace.step("changes staged")
            guard !transaction.isEmpty, let stamp = transaction.lastStamp else {
                return WriteResult(value: value, commit: nil, changes: [])
            }
            let message = Records.message(for: transaction.changes, action: action, identity: identity, stamp: stamp)
            let commit = try CommitWriter(profile: profile, repository: repository, identity: identity)
                .commit(files: transaction.files, message: message, expectedHead: head)
            // The new commit's parent is `head`, which the clock has looked at.
            try profile.clock.save(stamp, seen: commit)
            // The audit index (a cache) follows the branch where it exists; a failure here fails nothing.
            try? AuditIndex(repository: repository).catchUp(to: commit, onlyIfPresent: true)
            return WriteResult(value: value, commit: commit.hex, changes: transaction.changes)
        }
        while true {
            attempt += 1
            do {
                // Once the branch moved under an attempt, the next ones read it holding git's index.lock: a plain
                // `git commit` looping in the folder (which takes that lock) cannot move it again before the swap.
                return try attempt == 1 ? once() : repository.holdingGitIndexLock(once)
            } catch let error as GitError where (error.code == .modified || error.code == .exists || error.code == .locked)
                        && attempt < Records.maxWriteAttempts {
                usleep(useconds_t.random(in: 1_000...20_000))
                continue
            } catch let error as GitError {
                throw ConcordError.git(error)
            }
        }
    }
}


/// What `Records.importDump` wrote.
public struct DumpImport: Sendable, Equatable {
    /// How many records it wrote.
    public let records: Int
    /// How many log entries it added.
    public let logEntries: Int
    /// The data format the import's commit also moved the profile to (6, for entries that keep who
    /// first wrote them), or nil.
    public let formatUpgradedTo: Int?

    /// Records and log entries written.
    public var items: Int { records + logEntries }
}

extension Records {
    /// Writes every record and log entry of `dump` as ONE commit. Records already holding the same
    /// data and log entries already present are skipped, so importing a dump twice changes nothing.
    /// A log entry keeps who first wrote it, when and on which device, as its `origin` (`LogImport`).
    /// The result's value says how many of each were written, and whether the import moved the
    /// profile to data format 6 (`LogImport.prepareFormat`).
    @discardableResult
    public func importDump(_ dump: Dump, as identity: Identity) throws -> WriteResult<DumpImport> {
        // Check everything before writing anything.
        for (index, item) in dump.records.enumerated() {
            let kind = try profile.kind(named: item.kind)
            guard kind.policy != .append else {
                throw ConcordError.invalidInput(.badDump, "records[\(index)]: kind \"\(kind.name)\" is a log; put its entries under \"logs\"")
            }
            _ = try Transaction.recordID(item.id)
        }
        for (index, item) in dump.logs.enumerated() {
            guard try profile.kind(named: item.kind).policy == .append else {
                throw ConcordError.invalidInput(.badDump, "logs[\(index)]: kind \"\(item.kind)\" is not a log; put it under \"records\"")
            }
            _ = try Transaction.recordID(item.id)
        }
        return try write(as: identity, action: .imported) { transaction in
            for kind in Set(dump.records.map(\.kind)) {
                try transaction.prefetch(kind: try profile.kind(named: kind))
            }
            try transaction.put(canonical: dump.records.map { ($0.kind, $0.id, $0.canonicalData) })
            let records = transaction.changes.count
            let withOrigin = try transaction.importLogEntries(dump.logs, kinds: profile.kind(named:))
            let entries = transaction.changes.count - records
            // Only when an entry with an origin is written (nothing new: no commit at all).
            let upgraded = withOrigin ? try LogImport.prepareFormat(profile, as: transaction.identity, in: transaction) : false
            return DumpImport(records: records, logEntries: entries, formatUpgradedTo: upgraded ? LogImport.firstFormat : nil)
        }
    }

    /// All live records and all log entries as a dump. A log entry is given as it was first written
    /// (`LogEntry.written`: an imported entry's origin), so an export imported into an empty profile
    /// exports the same bytes again.
    public func exportDump() throws -> Dump {
        var records = [Dump.RecordItem]()
        var logs = [Dump.LogItem]()
        for kind in profile.kinds.kinds {
            if kind.policy == .append {
                logs += Dump.LogItem.exported(try logEntries(kind.name), kind: kind.name)
            } else {
                for path in profile.workingTree.recordFiles(of: kind) {
                    if let record = try profile.workingTree.readRecord(path), let data = record.data {
                        records.append(Dump.RecordItem(kind: kind.name, id: record.id.rawValue, data: data))
                    }
                }
            }
        }
        return Dump(records: records, logs: logs)
    }

    /// The records and log entries this device's own commits changed that `remote` has not received
    /// (they are not in what was last fetched from it): what a revoked device saves before its copy
    /// goes, and nothing else. A record is saved as HEAD has it (tombstones are not); a log file
    /// gives only the entries the remote's version lacks. Merges bring others' work: not counted.
    public func exportUnsent(to remote: String) throws -> Dump {
        return try gitCall {
            guard let head = try repository.resolveReference("HEAD") else { return Dump(records: [], logs: []) }
            let tracking = try repository.resolveReference(Sync.trackingRef(remote))
            var paths = Set<String>()
            for commit in try repository.newCommits(from: head, excluding: tracking.map { [$0] } ?? []) where commit.parents.count <= 1 {
                let parentTree = try commit.parents.first.map { try repository.commit($0).tree }
                for change in try repository.treeChanges(from: parentTree, to: commit.tree) { paths.insert(String(decoding: change.path, as: UTF8.self)) }
            }
            let headTree = try repository.commit(head).tree
            let trackingTree = try tracking.map { try repository.commit($0).tree }
            func bytes(_ path: String, _ tree: ObjectID?) throws -> [UInt8]? {
                guard let tree, let entry = try repository.entry(at: path, inTree: tree), entry.kind == .blob else { return nil }
                return try repository.blob(entry.id)
            }
            var records = [Dump.RecordItem](), logs = [Dump.LogItem]()
            for path in paths.sorted() {
                switch ProfilePathRules.classify(Array(path.utf8), kinds: profile.kinds) {
                case .success(.record(let kind, _)):
                    if let bytes = try bytes(path, headTree), let record = try? Record.decode(bytes), let data = record.data {
                        records.append(Dump.RecordItem(kind: kind.name, id: record.id.rawValue, data: data))
                    }
                case .success(.logDay(let kind, _)):
                    let sent = Set(((try bytes(path, trackingTree)).flatMap { try? LogEntry.parseLogFile($0) } ?? []).map(\.identity))
                    for entry in (try bytes(path, headTree)).flatMap({ try? LogEntry.parseLogFile($0) }) ?? [] where !sent.contains(entry.identity) {
                        logs.append(Dump.LogItem(kind: kind.name, id: entry.id.rawValue, data: entry.data, written: entry.written))
                    }
                default: continue
                }
            }
            return Dump(records: records, logs: logs)
        }
    }
}
