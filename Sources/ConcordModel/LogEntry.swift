/// One entry of an append-only JSON Lines log (`<kind directory>/yyyy-mm-dd.jsonl`).
///
/// Encoded as the canonical line of `{"at", "by", "data", "device", "id"}`, plus `"origin": {"at",
/// "by", "device"}` for an entry imported from a dump (data format 6). Entries order by (`at`, `id`);
/// two entries with the same `at` and `id` but different data are unordered yet unequal.
public struct LogEntry: Sendable, Equatable, Comparable {
    /// The entry's id, unique within its kind.
    public var id: RecordID
    /// When the entry was written.
    public var at: HLC
    /// The member who wrote it.
    public var by: String
    /// The device it was written on.
    public var device: String
    /// The entry's data.
    public var data: [String: JSONValue]
    /// For an entry imported from a dump: when, by whom and on which device it was first written, as
    /// the dump said. `at`, `by` and `device` are then the import's (the member who imported it signed
    /// it, and `by` is always the signer's); nil for an entry written here.
    public var origin: WriteStamp?

    /// Creates a log entry.
    public init(id: RecordID, at: HLC, by: String, device: String, data: [String: JSONValue], origin: WriteStamp? = nil) {
        self.id = id
        self.at = at
        self.by = by
        self.device = device
        self.data = data
        self.origin = origin
    }

    /// When, by whom and on which device the entry was first written: its `origin` when it was
    /// imported, else its own `at`, `by` and `device`. What `export` writes and `log` shows.
    public var written: WriteStamp { origin ?? WriteStamp(at: at, member: by, device: device) }

    /// By stamp, then id, then author (two members' entries may share a stamp and an id).
    public static func < (lhs: LogEntry, rhs: LogEntry) -> Bool {
        lhs.at != rhs.at ? lhs.at < rhs.at : lhs.id != rhs.id ? lhs.id < rhs.id : utf8Precedes(lhs.by, rhs.by)
    }

    /// The entry's JSON.
    public var jsonValue: JSONValue {
        var fields: [String: JSONValue] = [
            "at": .string(at.description), "by": .string(by), "data": .object(data),
            "device": .string(device), "id": .string(id.rawValue),
        ]
        if let origin { fields["origin"] = origin.jsonValue }
        return .object(fields)
    }

    /// What identifies an entry: its author and its id, and for an imported entry also where it came
    /// from. `by` is always the signer, so nobody can make an entry of another member's; an importer's
    /// entries of one id from two original authors (or times) are two entries.
    public struct Identity: Hashable, Sendable {
        /// The member who signed the entry.
        public let by: String
        /// The entry's id.
        public let id: RecordID
        /// Where an imported entry was first written; nil for one written here.
        public let origin: WriteStamp?
    }

    /// This entry's author, id and origin.
    public var identity: Identity { Identity(by: by, id: id, origin: origin) }

    /// The canonical line, without a newline.
    public func encodedLine() -> [UInt8] {
        jsonValue.canonicalLine()
    }

    static let fields: Set<String> = ["at", "by", "data", "device", "id", "origin"]

    /// Reads one line (without its newline) strictly.
    public static func decode(line: some Collection<UInt8>) throws(ModelError) -> LogEntry {
        try decode(line: line, context: "")
    }

    static func decode(line: some Collection<UInt8>, context: String) throws(ModelError) -> LogEntry {
        let fields = RecordFields(fields: try RecordFields.parseObject(line, what: "\(context)log entry"), context: context)
        try fields.requireOnly(Self.fields, shape: "a log entry")
        let origin = try fields.fields["origin"].map { value throws(ModelError) in
            try WriteStamp.decode(value, what: "\(context)field \"origin\"")
        }
        return LogEntry(
            id: try fields.id("id"), at: try fields.stamp("at"), by: try fields.string("by"),
            device: try fields.string("device"), data: try fields.object("data"), origin: origin)
    }

    /// Reads a whole log file; blank lines are skipped, and errors name the 1-based line number.
    public static func parseLogFile(_ bytes: some Collection<UInt8>) throws(ModelError) -> [LogEntry] {
        let buffer = Array(bytes)
        var entries: [LogEntry] = []
        var lineNumber = 0
        for line in buffer.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            guard line.contains(where: { !isJSONWhitespace($0) }) else { continue }
            let context = "log line \(lineNumber): "
            do {
                entries.append(try decode(line: line, context: context))
            } catch {
                switch error {
                case .invalidJSON(let e):
                    throw .malformedRecord(what: "log line \(lineNumber)", why: "is not valid JSON (column \(e.column): \(e.message))")
                case .recordTooLarge(let size):
                    throw .malformedRecord(what: "log line \(lineNumber)", why: "is too large (\(size) bytes, limit \(maxRecordBytes))")
                default:
                    throw error
                }
            }
        }
        return entries
    }

    /// Writes a log file: entries sorted by (`at`, `id`), one per author and id (`by`, `id`: the
    /// earliest, ties broken by encoded bytes, so the result does not depend on input order), each line
    /// ending in `\n`. An entry is identified by its author AND its id, so two members' entries with the
    /// same id both stay: nobody can shadow another member's entry by reusing its id.
    public static func encodeLogFile(_ entries: [LogEntry]) -> [UInt8] {
        let lines = entries.map { ($0, $0.encodedLine()) }.sorted { a, b in
            a.0 < b.0 || (!(b.0 < a.0) && a.1.lexicographicallyPrecedes(b.1))
        }
        var seen = Set<Identity>()
        var out: [UInt8] = []
        out.reserveCapacity(lines.reduce(0) { $0 + $1.1.count + 1 })
        for (entry, line) in lines where seen.insert(entry.identity).inserted {
            out += line
            out.append(0x0A)
        }
        return out
    }

    /// The log file an entry stamped `at` belongs in: `yyyy-mm-dd.jsonl` of its UTC day.
    public static func dayFileName(for at: HLC) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        CivilTime.appendDay(at.wallMillis, to: &out)
        out += Array(".jsonl".utf8)
        return String(decoding: out, as: UTF8.self)
    }
}

@inline(__always)
func isJSONWhitespace(_ b: UInt8) -> Bool {
    b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09
}
