import ConcordModel
import ConcordTrust
import Foundation

/// The kinds an app declares when it opens a store (`ConcordStore.open(at:identity:environment:kinds:)`):
/// those the profile lacks are registered by one Admin-signed commit; a kind the profile has
/// otherwise opens as the profile has it, never changed silently (`kindDifferences` says what differs).
extension ConcordStore {
    /// What the app declares about kind `name` that the profile has otherwise, one phrase per
    /// difference (`Kind.differences(from:)`: `policy is delete-wins in the profile, lww here`); empty
    /// when they agree, or when the app did not declare `name` or the profile lacks it.
    public func kindDifferences(_ name: String) -> [String] {
        guard let declared = declaredKinds.first(where: { $0.name == name }), let kind = kinds.kind(named: name) else { return [] }
        return declared.differences(from: kind)
    }

    /// Registers in `profile` the kinds of `declared` it lacks (`missing`), as one commit signed by
    /// `identity`; refuses, changing nothing, a missing kind when `identity` is not an Admin
    /// (`kindsNeedAdmin`). Kinds the profile has are left as they are, whatever the app declares of them.
    static func register(_ declared: [Kind], in profile: Profile, as identity: Identity) throws {
        let missing = try missing(declared, from: profile.kinds)
        guard !missing.isEmpty else { return }
        let member = try profile.members.active(identity)
        guard member.role == .admin else {
            throw ConcordError.kindsNeedAdmin(missing: missing.map(\.name), member: member.name, role: member.role)
        }
        try profile.records.addKinds(missing, as: identity)
    }

    /// The kinds of `declared` that `table` lacks, as the profile would store them; refuses a
    /// declaration that is invalid, given twice otherwise, or whose directory another kind holds.
    static func missing(_ declared: [Kind], from table: KindsTable) throws -> [RecordKind] {
        var seen = [String: Kind]()
        var missing = [RecordKind]()
        var merged = table
        for kind in declared {
            let recordKind = try KindChange.recordKind(kind)
            if let earlier = seen.updateValue(kind, forKey: kind.name) {
                let differences = earlier.differences(from: recordKind)
                guard differences.isEmpty else {
                    throw ConcordError.invalidInput(.kindDeclaration, "kind \"\(kind.name)\" is declared twice, differently: " + differences.joined(separator: "; "))
                }
                continue
            }
            if table.kind(named: kind.name) == nil {
                merged = try KindChange.adding(recordKind, to: merged, profile: "the profile")
                missing.append(recordKind)
            }
        }
        return missing
    }
}
