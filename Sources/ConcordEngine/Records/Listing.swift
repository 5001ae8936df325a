import ConcordModel
import Foundation

/// One line of `concord ls`: a live record, or one entry of a log kind.
public struct ListedItem: Sendable, Equatable {
    /// The record's or entry's kind.
    public let kind: String
    /// Its id.
    public let id: String
    /// `kind/id`.
    public var reference: String { "\(kind)/\(id)" }
}

/// A listing and the files that could not be read while making it.
public struct Listing: Sendable {
    /// The records and entries listed, by kind then id.
    public let items: [ListedItem]
    /// One message per unreadable file: the listing skips it and goes on.
    public let warnings: [String]
}

extension Records {
    /// Parses `kind/id` into a kind of this profile and a valid id.
    public func parseReference(_ text: String) throws -> (RecordKind, RecordID) {
        guard let slash = text.firstIndex(of: "/") else { throw ConcordError.badReference(text) }
        let kind = try profile.kind(named: String(text[..<slash]))
        let id = try Transaction.recordID(String(text[text.index(after: slash)...]))
        return (kind, id)
    }
}
