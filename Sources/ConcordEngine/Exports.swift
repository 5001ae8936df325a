// The engine speaks in the model, rule and identity types: its users get them with it.
@_exported import ConcordModel
@_exported import ConcordRules
@_exported import ConcordTrust
