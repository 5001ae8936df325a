/// Which files a profile may hold, and what each must contain: the structural half of the rule
/// every commit fetched from a remote must pass before anything is merged or checked out.
///
/// Pure: paths are bytes as a tree names them, contents are bytes; no git, no I/O.
public enum ProfilePathRules {
    /// What a path in a profile is, when the format allows it.
    public enum File: Sendable, Equatable {
        /// `.concord/profile.json`: the profile's id, name and format.
        case profileInfo
        /// `.concord/kinds.json`: the record kinds.
        case kinds
        /// `.concord/members/<name>.json`: one member's role, status and keys.
        case member(name: String)
        /// An open invitation (`.concord/invitations/<id>.json`, format 4): joins up to its number of uses.
        case invitation(id: String)
        /// `.gitattributes`: which files git merges with Concord's driver.
        case gitattributes
        /// A copy of the other side of a file a merge could not resolve (`.concord/conflicts/…`).
        case conflictCopy
        /// A record file of a kind.
        case record(RecordKind, id: String)
        /// One day's file of a log kind (`<day>.jsonl`).
        case logDay(RecordKind, day: String)
    }

    /// The largest log day file accepted (a day of a busy chat is far below this).
    public static let maxLogFileBytes = 32 << 20
    /// The largest `.concord/…` document or `.gitattributes` accepted.
    public static let maxDocumentBytes = 1 << 20

    /// The most bytes any file named `name` may hold, from its name alone: a log day file
    /// (`.jsonl`, the only such files) `maxLogFileBytes`, any other `maxRecordBytes` or
    /// `maxDocumentBytes`. A fetch refuses a larger file from the size its object declares.
    public static func maxBytes(ofFileNamed name: ArraySlice<UInt8>) -> Int {
        name.count > 6 && name.suffix(6).elementsEqual(".jsonl".utf8) ? maxLogFileBytes : max(maxRecordBytes, maxDocumentBytes)
    }

    /// Classifies `path` (components separated by `/`) against `kinds`, or says why the format
    /// does not allow it. Every component must be id-like (`A–Z a–z 0–9 . _ -`, not `.` or `..`);
    /// git's own name rules (`.git` in all its spellings) are checked before this, by the git layer.
    public static func classify(_ path: [UInt8], kinds: KindsTable) -> Result<File, Refusal> {
        if let record = recordInItsBucket(path, kinds: kinds) { return .success(record) }
        return classifyInGeneral(path, kinds: kinds)
    }

    /// `classify` for any path, making strings of it; `recordInItsBucket` spares a clone's
    /// thousands of record paths that.
    static func classifyInGeneral(_ path: [UInt8], kinds: KindsTable) -> Result<File, Refusal> {
        let components = path.split(separator: 0x2F, omittingEmptySubsequences: false)
        guard !components.isEmpty, components.allSatisfy({ RecordID.isValid(bytes: $0) }) else {
            return .failure(.unsafeName)
        }
        let text = String(decoding: path, as: UTF8.self)
        switch text {
        case ".concord/profile.json": return .success(.profileInfo)
        case KindsTable.path: return .success(.kinds)
        case ".gitattributes": return .success(.gitattributes)
        default: break
        }
        if components.count == 3, text.hasPrefix(".concord/members/"), text.hasSuffix(".json") {
            let name = String(text.dropFirst(".concord/members/".count).dropLast(5))
            return RecordID.isValid(name) ? .success(.member(name: name)) : .failure(.notInFormat)
        }
        if components.count == 3, text.hasPrefix(".concord/invitations/"), text.hasSuffix(".json") {
            let id = String(text.dropFirst(".concord/invitations/".count).dropLast(5))
            return RecordID.isValid(id) ? .success(.invitation(id: id)) : .failure(.notInFormat)
        }
        if components.count > 2, text.hasPrefix(".concord/conflicts/") {
            return isConflictCopy(String(text.dropFirst(".concord/conflicts/".count)), kinds: kinds) ? .success(.conflictCopy) : .failure(.notInFormat)
        }
        guard let (kind, fileName) = kinds.kind(forPath: text) else { return .failure(.notInFormat) }
        if kind.policy == .append {
            guard fileName.hasSuffix(".jsonl") else { return .failure(.notInFormat) }
            let day = String(fileName.dropLast(6))
            return isDay(day) ? .success(.logDay(kind, day: day)) : .failure(.notInFormat)
        }
        guard fileName.hasSuffix(".json") else { return .failure(.notInFormat) }
        let id = String(fileName.dropLast(5))
        guard RecordID.isValid(id) else { return .failure(.notInFormat) }
        guard text == RecordPaths.file(directory: kind.directory, id: id) else { return .failure(.wrongBucket) }
        return .success(.record(kind, id: id))
    }

    /// True when `copy` (a path under `.concord/conflicts/`) is where a merge keeps the other side
    /// of a file it could not resolve: the file's path with `.<commit>` (7 hex digits) before its
    /// extension (`MergePlanner.conflictCopyPath`), the file being one the format allows (a record,
    /// a log day, a `.concord/` document). Anything else there — another `.gitattributes` git would
    /// honour, a `.gitmodules`, files of any name — is not in the format.
    static func isConflictCopy(_ copy: String, kinds: KindsTable) -> Bool {
        let slash = copy.lastIndex(of: "/")
        let directory = slash.map { String(copy[...$0]) } ?? ""
        let parts = (slash.map { copy[copy.index(after: $0)...] } ?? copy[...]).split(separator: ".", omittingEmptySubsequences: false)
        for hasExtension in [true, false] {
            let commitPart = parts.count - (hasExtension ? 2 : 1)
            guard commitPart >= 1 else { continue }
            let commit = parts[commitPart]
            guard commit.count == 7, commit.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { continue }
            let original = directory + (parts[..<commitPart] + (hasExtension ? [parts[parts.count - 1]] : [])).joined(separator: ".")
            switch classifyInGeneral(Array(original.utf8), kinds: kinds) {
            case .success(.conflictCopy), .success(.gitattributes), .failure: continue
            case .success: return true
            }
        }
        return false
    }

    /// What `classifyInGeneral` finds for a record file in its bucket (`<directory>/<bucket>/<id>.json`
    /// of a record kind), found on the path's bytes with one string made (the id); nil for any
    /// other path and for anything unusual about this one, which `classifyInGeneral` then judges.
    /// (A clone classifies every record path: for bench row B5's 10,000 the check's step that
    /// classifies them took ~6 ms before, ~2 ms after, on both cores.) Compared with
    /// `classifyInGeneral` by a test over generated paths.
    static func recordInItsBucket(_ path: [UInt8], kinds: KindsTable) -> File? {
        path.withUnsafeBufferPointer { bytes -> File? in
            let slash = UInt8(ascii: "/")
            // Not a `.concord/…` document or `.gitattributes`: a kind's directory never starts with a dot.
            guard let nameSlash = bytes.lastIndex(of: slash), nameSlash >= 4, bytes[0] != UInt8(ascii: ".") else { return nil }
            let bucketSlash = nameSlash - 3
            let idEnd = bytes.count - 5
            guard bytes[bucketSlash] == slash, idEnd > nameSlash + 1, bytes[idEnd...].elementsEqual(".json".utf8) else { return nil }
            // Every component id-like, as `classifyInGeneral` requires, and the id too.
            var start = 0
            for end in 0...bytes.count where end == bytes.count || bytes[end] == slash {
                guard RecordID.isValid(bytes: bytes[start..<end]) else { return nil }
                start = end + 1
            }
            let id = bytes[(nameSlash + 1)..<idEnd]
            guard RecordID.isValid(bytes: id) else { return nil }
            // A log kind's directory named like this record's bucket directory is the general case's to judge.
            let parent = bytes[..<nameSlash], directory = bytes[..<bucketSlash]
            guard !kinds.kinds.contains(where: { $0.policy == .append && $0.directory.utf8.elementsEqual(parent) }),
                  let kind = kinds.kinds.first(where: { $0.policy != .append && $0.directory.utf8.elementsEqual(directory) }) else {
                return nil
            }
            guard RecordPaths.bucket(ofBytes: id).utf8.elementsEqual(bytes[(nameSlash - 2)..<nameSlash]) else { return nil }
            return .record(kind, id: String(decoding: id, as: UTF8.self))
        }
    }

    /// Checks the contents of a record or log file; nil when they are acceptable. (Profile
    /// documents are checked by their own decoders.) `logOrigins`: whether the profile's data format
    /// lets a log entry carry an `origin` (format 6 on).
    public static func contentProblem(of file: File, bytes: [UInt8], logOrigins: Bool = true) -> String? {
        switch file {
        case .record(let kind, let id):
            guard bytes.count <= maxRecordBytes else { return "record is \(bytes.count) bytes, over the \(maxRecordBytes)-byte limit" }
            if PlainRecordScan.accepts(bytes, id: id, kind: kind.name) { return nil }   // what concord writes, most often
            let record: Record
            do { record = try Record.decode(bytes) } catch { return "unreadable record: \(error.localizedDescription)" }
            if record.id.rawValue != id || record.kind != kind.name {
                return "the record says it is \(record.kind)/\(record.id) but its path says \(kind.name)/\(id)"
            }
            return nil
        case .logDay(_, let day):
            guard bytes.count <= maxLogFileBytes else { return "log file is \(bytes.count) bytes, over the \(maxLogFileBytes)-byte limit" }
            let entries: [LogEntry]
            do { entries = try LogEntry.parseLogFile(bytes) } catch { return "unreadable log file: \(error.localizedDescription)" }
            if let stray = entries.first(where: { LogEntry.dayFileName(for: $0.at) != day + ".jsonl" }) {
                return "log entry \(stray.id) is stamped \(stray.at), not on \(day)"
            }
            if !logOrigins, let imported = entries.first(where: { $0.origin != nil }) {
                return "log entry \(imported.id) by \(imported.by) has an origin, which needs data format 6 (this profile's is older)"
            }
            var seen = Set<LogEntry.Identity>()
            if let twice = entries.first(where: { !seen.insert($0.identity).inserted }) {
                return "log entry \(twice.id) by \(twice.by) appears twice (an entry is its author's id, once)"
            }
            return nil
        default:
            return bytes.count <= maxDocumentBytes ? nil : "file is \(bytes.count) bytes, over the \(maxDocumentBytes)-byte limit"
        }
    }

    /// Whether `text` is a `yyyy-mm-dd` date.
    static func isDay(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == 0x2D, bytes[7] == 0x2D else { return false }
        let digits = bytes.enumerated().filter { $0.offset != 4 && $0.offset != 7 }.map(\.element)
        guard digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return false }
        let month = Int(bytes[5] - 0x30) * 10 + Int(bytes[6] - 0x30), day = Int(bytes[8] - 0x30) * 10 + Int(bytes[9] - 0x30)
        return (1...12).contains(month) && (1...31).contains(day)
    }

    /// Why a path is not allowed.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// A component git itself would refuse, or that could escape the profile or reach `.git`.
        case unsafeName
        /// Not a file the data format has.
        case notInFormat
        /// A record file in a bucket other than its id's.
        case wrongBucket

        /// The problem in words, for an error message.
        public var description: String {
            switch self {
            case .unsafeName: return "a name git refuses or that could leave the profile (., .., .git, /, control characters)"
            case .notInFormat: return "not a file a Concord profile can hold"
            case .wrongBucket: return "a record in the wrong bucket directory"
            }
        }
    }
}

/// What the structural rule asks of each kind of file, beyond its name.
extension ProfilePathRules.File {
    /// The most bytes such a file may hold.
    public var limit: Int {
        switch self {
        case .record: return maxRecordBytes
        case .logDay: return ProfilePathRules.maxLogFileBytes
        default: return ProfilePathRules.maxDocumentBytes
        }
    }

    /// Files a commit may never remove: deletions are tombstones, and profile documents stay.
    public var mustStay: Bool {
        switch self {
        case .conflictCopy: return false   // a merge keeps the other side there until someone resolves it
        case .gitattributes: return true   // what kinds.json generates: removed, plain git would merge records as text
        default: return true
        }
    }
}
