import Foundation

/// The largest record file (or JSON Lines entry) Concord reads or writes, in bytes (1 MiB).
public let maxRecordBytes = 1 << 20

/// Everything that can be wrong with ids, kinds and record files.
///
/// Each description is one line that names the offending thing and says what to do next.
public enum ModelError: Error, Sendable, Equatable, LocalizedError {
    /// A record id that breaks the id rules; carries the id as given.
    case invalidRecordID(String)
    /// A kind name that breaks the id rules; carries the name as given.
    case invalidKindName(String)
    /// A kind directory that is not a safe relative path; carries the directory as given.
    case invalidDirectory(String)
    /// A record or log entry whose structure is wrong: `what` names the part (`field "id"`, `log line 3`),
    /// `why` says what is wrong with it.
    case malformedRecord(what: String, why: String)
    /// `.concord/kinds.json` could not be understood; carries the reason.
    case malformedKindsFile(String)
    /// The bytes are not valid JSON.
    case invalidJSON(JSONParseError)
    /// The JSON is valid but its top level is not an object; `what` names the document.
    case notAnObject(what: String)
    /// The record is bigger than ``maxRecordBytes``; carries its size in bytes.
    case recordTooLarge(size: Int)

    static let idRules = #"use 1–128 characters from A–Z a–z 0–9 . _ - (not "." or "..")"#

    /// One line: what is wrong and what to do about it. Names that break a rule and files that cannot
    /// be read each read alike (`invalid`, `malformed`).
    public var errorDescription: String? {
        switch self {
        case .invalidRecordID(let id):
            return Self.invalid("record id", id, Self.idRules)
        case .invalidKindName(let name):
            return Self.invalid("kind name", name, Self.idRules)
        case .invalidDirectory(let dir):
            return Self.invalid("kind directory", dir, "use a relative path of names made of "
                                    + #"A–Z a–z 0–9 . _ - separated by "/", none starting with ".""#)
        case .malformedRecord(let what, let why):
            return Self.malformed("record: \(what) \(why)")
        case .malformedKindsFile(let why):
            return Self.malformed(".concord/kinds.json: \(why)")
        case .invalidJSON(let error):
            return "invalid JSON at \(error.description); fix the syntax"
        case .notAnObject(let what):
            return "\(what) is not a JSON object; its top level must be { ... }"
        case .recordTooLarge(let size):
            return "record is too large (\(size) bytes, limit \(maxRecordBytes)); split the data across records"
        }
    }

    /// "invalid `what` `value` (quoted): `rule`".
    private static func invalid(_ what: String, _ value: String, _ rule: String) -> String {
        "invalid \(what) \(quoted(value)): \(rule)"
    }

    /// "malformed `what`; fix the file or restore it from history": a file Concord cannot read as it is.
    private static func malformed(_ what: String) -> String {
        "malformed \(what); fix the file or restore it from history"
    }
}

/// Quotes a user-supplied string for an error message, escaping it the way canonical JSON does.
func quoted(_ s: String) -> String {
    String(decoding: JSONValue.string(s).canonicalLine(), as: UTF8.self)
}
