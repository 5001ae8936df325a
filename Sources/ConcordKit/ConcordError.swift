import Foundation

/// Everything the engine refuses or fails at, each with a one-line message that says what to do.
public enum ConcordError: Error, LocalizedError, Sendable, Equatable {
    case notAProfile(String)
    case profileExists(String)
    case newerFormat(found: Int, supported: Int)
    case unknownKind(String, known: [String])
    case notALogKind(String)
    case logKindNeedsAppend(String)
    case cannotRemoveLogEntries(String)
    case badReference(String)
    case recordNotFound(String)
    case corruptRecord(path: String, reason: String)
    case invalidInput(String)
    case invalidJSON(source: String, detail: String)
    case notAnObject(source: String)
    case recordTooLarge(String, size: Int)
    case io(String)
    case git(String)
    case busy(String)
    case unknownTemplate(String)

    public var errorDescription: String? {
        switch self {
        case .notAProfile(let path):
            return "\(path) is not a Concord profile (no .concord/profile.json): run 'concord init \(path) --name NAME' or pass -C <profile dir>"
        case .profileExists(let path):
            return "\(path) already holds a git repository or profile: choose an empty or new directory"
        case .newerFormat(let found, let supported):
            return "this profile uses data format \(found) but this concord understands up to \(supported): upgrade concord to open it"
        case .unknownKind(let kind, let known):
            let list = known.isEmpty ? "this profile has no kinds" : "known kinds: \(known.joined(separator: ", "))"
            return "unknown kind \"\(kind)\" (\(list))"
        case .notALogKind(let kind):
            return "kind \"\(kind)\" is not a log kind: use 'concord put \(kind)/<id>' instead of append"
        case .logKindNeedsAppend(let kind):
            return "kind \"\(kind)\" is an append-only log: use 'concord append \(kind) --json ...' instead"
        case .cannotRemoveLogEntries(let kind):
            return "kind \"\(kind)\" is an append-only log: its entries cannot be removed"
        case .badReference(let text):
            return "\"\(text)\" is not a record reference: write it as <kind>/<id>, e.g. vocabulary/puzzle"
        case .recordNotFound(let reference):
            return "no record \(reference): 'concord ls' lists the records"
        case .corruptRecord(let path, let reason):
            return "record file \(path) is not a valid record (\(reason)): fix or restore it, e.g. 'git checkout -- \(path)'"
        case .invalidInput(let message):
            return message
        case .invalidJSON(let source, let detail):
            return "invalid JSON in \(source) at \(detail)"
        case .notAnObject(let source):
            return "\(source) must be a JSON object ({...})"
        case .recordTooLarge(let reference, let size):
            return "record \(reference) is \(size) bytes, over the 1 MiB limit: store large content as separate records"
        case .io(let message):
            return message
        case .git(let message):
            return message
        case .busy(let path):
            return "profile \(path) is busy: another concord process has held its lock for too long; try again"
        case .unknownTemplate(let name):
            return "unknown template \"\(name)\": use blank, aac, screenplay, recipes, sessions or personal"
        }
    }
}
