import ConcordModel
import ConcordTrust
import Foundation

extension ConcordStore {
    /// The kinds of an app's record and log-entry types, in the order given.
    public static func kinds(of types: [any ConcordRecord.Type], logs: [any ConcordLogEntry.Type] = []) -> [Kind] {
        types.map { $0.kind } + logs.map { $0.kind }
    }

    /// Opens the profile in `directory` as `identity` with the kinds of the app's types
    /// (`open(at:identity:environment:kinds:)`: an Admin's open adds those the profile lacks).
    public static func open(at directory: URL, identity: Identity, environment: ConcordEnvironment? = nil,
                            records: [any ConcordRecord.Type], logs: [any ConcordLogEntry.Type] = []) throws -> ConcordStore {
        try open(at: directory, identity: identity, environment: environment, kinds: kinds(of: records, logs: logs))
    }

    /// Creates a profile whose first member, an admin, is `identity`, with the kinds of the app's
    /// types added to the template's (`create(at:name:template:identity:environment:kinds:)`).
    public static func create(at directory: URL, name: String, template: Template = .blank, identity: Identity,
                              environment: ConcordEnvironment? = nil, records: [any ConcordRecord.Type],
                              logs: [any ConcordLogEntry.Type] = []) throws -> ConcordStore {
        try create(at: directory, name: name, template: template, identity: identity, environment: environment,
                   kinds: kinds(of: records, logs: logs))
    }
}
