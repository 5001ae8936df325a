import ConcordModel
import Foundation

/// What a `ConcordStore.read` closure reads through: records, logs, members, the history and the
/// sync status, all as of one moment (no write of the store runs meanwhile). Valid only inside
/// the closure: it is not `Sendable`, so it cannot leave a `@Sendable` closure nor be its result.
public struct StoreReader {
    let profile: Profile

    /// How long `sql` lets one statement run when not told (`sqlStopped` after it).
    public static let sqlTimeLimit: Duration = ReadOnlySQLRule.timeLimit

    /// The profile's id, name and format version.
    public var info: ProfileInfo { profile.info }
    /// The profile's record kinds.
    public var kinds: KindsTable { profile.kinds }

    /// The live record `kind/id` (`Records.get`).
    public func get(_ kind: String, _ id: String) throws -> Record { try profile.records.get(kind, id) }

    /// `get` for a kind and id already parsed.
    public func get(_ kind: RecordKind, _ id: RecordID) throws -> Record { try profile.records.get(kind, id) }

    /// Every live record and log entry of `kind`, or of all kinds (`Records.list`).
    public func list(kind: String? = nil) throws -> Listing { try profile.records.list(kind: kind) }

    /// The live records of a kind that `query` selects, in its order (`IndexQuery`), read from
    /// this device's record index (brought up to date first; `RecordIndex`). `Records.scan` gives
    /// the same by reading every file.
    public func query(_ query: IndexQuery) throws -> [Record] { try profile.index.query(query) }

    /// How many live records of a kind `query` selects (its limit and offset apply), from the index.
    public func count(_ query: IndexQuery) throws -> Int { try profile.index.count(query) }

    /// Runs one SQL statement that reads the record index (schema and rule: docs/index.md),
    /// `arguments` bound to its `?`s; rows as column name → value. Safe for SQL taken from a user:
    /// only one SELECT over the index's tables calling the listed functions runs, on a read-only
    /// connection of its own (anything else is `sqlRefused`), and it is stopped after `timeLimit`
    /// (`sqlStopped`; `RecordIndex.sql`).
    public func sql(_ sql: String, arguments: [JSONValue] = [], timeLimit: Duration = StoreReader.sqlTimeLimit) throws -> [[String: JSONValue]] {
        try profile.index.sql(sql, arguments: arguments, timeLimit: timeLimit)
    }

    /// The entries of the log kind `kind`, oldest first.
    public func logEntries(_ kind: String) throws -> [LogEntry] { try profile.records.logEntries(kind) }

    /// All live records and log entries as a dump.
    public func exportDump() throws -> Dump { try profile.records.exportDump() }

    /// The profile's members (`Members.list`).
    public func members() throws -> [Member] { try profile.members.list() }

    /// The commits `filter` lets through, newest first (`History.entries`).
    public func history(_ filter: HistoryFilter = HistoryFilter()) throws -> [HistoryEntry] {
        try profile.history.entries(filter)
    }

    /// The writes merges left out (`History.lostEdits`).
    public func lostEdits(_ filter: LostEditFilter = LostEditFilter()) throws -> [LostEdit] {
        try profile.history.lostEdits(filter)
    }

    /// Every version of the record `kind/id` the history holds (`History.versions`).
    public func versions(of reference: String) throws -> [RecordVersion] { try profile.history.versions(of: reference) }

    /// Ahead/behind against what was last fetched from `remote`, and when it last synced.
    public func syncStatus(remote: String = "origin") throws -> SyncStatus { try profile.sync.status(remote: remote) }

    /// The remotes, by name and URL.
    public func remotes() throws -> [(name: String, url: String)] { try profile.sync.remotes() }
}
