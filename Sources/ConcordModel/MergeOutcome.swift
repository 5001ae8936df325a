/// Who wrote one side of a conflict, when, and whether they edited or deleted the record.
public struct MergeSide: Sendable, Equatable, Hashable {
    /// What one side did to the record.
    public enum Change: String, Sendable, Hashable {
        /// The side holds a live record.
        case edit
        /// The side holds a tombstone.
        case delete
    }

    /// The member who made the change (`updatedBy` / `deletedBy`).
    public let member: String
    /// The device the change was made on.
    public let device: String
    /// When the change was made (`updatedAt` / `deletedAt`).
    public let stamp: HLC
    /// Edit or delete.
    public let change: Change

    /// Creates a side.
    public init(member: String, device: String, stamp: HLC, change: Change) {
        self.member = member
        self.device = device
        self.stamp = stamp
        self.change = change
    }

    /// The side that wrote `record`.
    public init(_ record: Record) {
        self.init(member: record.member, device: record.device, stamp: record.stamp, change: record.isDeleted ? .delete : .edit)
    }
}

/// A conflict a merge policy resolved: both sides changed the same record differently, and one lost.
///
/// Recorded in the merge commit as a `Concord-Resolved: <trailerValue>` trailer; the losing record's
/// bytes are what lets a user restore the losing side.
public struct ResolvedConflict: Sendable, Equatable {
    /// The record's kind name.
    public let kind: String
    /// The record's id.
    public let id: String
    /// The policy that resolved it.
    public let policy: MergePolicy
    /// The side whose change was kept.
    public let winner: MergeSide
    /// The side whose change was overridden.
    public let loser: MergeSide
    /// The loser's full record bytes (canonical JSON); empty when read back from a trailer.
    public let losingContent: [UInt8]
}

extension ResolvedConflict {
    /// The trailer value:
    /// `<kind>/<id> <policy> winner=<member>@<device> loser=<member>@<device> winner-change=<edit|delete>
    /// loser-change=<edit|delete> winner-at=<HLC> loser-at=<HLC>` (one line, fields separated by one space).
    ///
    /// `<policy>` is the raw value (`lww`, `delete-wins`, `append`). Member and device names never contain
    /// spaces, `@` or control characters in Concord; if a record from elsewhere does, each space or control
    /// character (U+0000–U+0020, U+007F) is written as `?` so the trailer stays one line of eight fields.
    public var trailerValue: String {
        func name(_ s: String) -> String {
            String(String.UnicodeScalarView(s.unicodeScalars.map { $0.value <= 0x20 || $0.value == 0x7F ? "?" : $0 }))
        }
        return "\(kind)/\(id) \(policy.rawValue)"
            + " winner=\(name(winner.member))@\(name(winner.device)) loser=\(name(loser.member))@\(name(loser.device))"
            + " winner-change=\(winner.change.rawValue) loser-change=\(loser.change.rawValue)"
            + " winner-at=\(winner.stamp) loser-at=\(loser.stamp)"
    }

    /// Parses a ``trailerValue`` back; `nil` if it does not have exactly that shape.
    ///
    /// Fields split at each U+0020 space; `<kind>/<id>` splits at the first `/`, `<member>@<device>` at
    /// the first `@` (all by Unicode scalars). The losing content is not part of a trailer, so
    /// ``losingContent`` is empty.
    public init?(trailerValue: String) {
        let fields = trailerValue.unicodeScalars.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 8, let (kind, id) = Self.split(fields[0], at: "/"),
            let policy = MergePolicy(rawValue: String(fields[1])),
            let winner = Self.side("winner", name: fields[2], change: fields[4], at: fields[6]),
            let loser = Self.side("loser", name: fields[3], change: fields[5], at: fields[7])
        else { return nil }
        self.init(kind: kind, id: id, policy: policy, winner: winner, loser: loser, losingContent: [])
    }

    private typealias Scalars = String.UnicodeScalarView.SubSequence

    /// Reads `<role>=<member>@<device>`, `<role>-change=…` and `<role>-at=…` into a side.
    private static func side(_ role: String, name: Scalars, change: Scalars, at: Scalars) -> MergeSide? {
        func value(_ field: Scalars, _ key: String) -> String? {
            let prefix = (key + "=").unicodeScalars
            return field.starts(with: prefix) ? String(field.dropFirst(prefix.count)) : nil
        }
        guard let name = value(name, role), let (member, device) = split(name.unicodeScalars[...], at: "@"),
            let change = value(change, role + "-change").flatMap(MergeSide.Change.init(rawValue:)),
            let stamp = value(at, role + "-at").flatMap(HLC.init(parsing:))
        else { return nil }
        return MergeSide(member: member, device: device, stamp: stamp, change: change)
    }

    /// `text` split at the first `separator`, or `nil` if it has none.
    private static func split(_ text: Scalars, at separator: Unicode.Scalar) -> (String, String)? {
        guard let index = text.firstIndex(of: separator) else { return nil }
        return (String(text[..<index]), String(text[text.index(after: index)...]))
    }
}

/// The result of merging one file three ways.
public enum FileMergeOutcome: Sendable, Equatable {
    /// The merged file's bytes, and the conflicts resolved on the way (empty if there were none).
    case merged(bytes: [UInt8], conflicts: [ResolvedConflict])
    /// A side is not a valid record / log file: do not guess. `reason` names the side ("ours"/"theirs")
    /// and the parse error (or, rarely, why valid sides cannot be combined: different records, a merged
    /// record over ``maxRecordBytes``, merged kinds sharing a directory).
    case unresolved(reason: String)
}
