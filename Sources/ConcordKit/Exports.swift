// Apps embed ConcordKit alone: the engine's public values (errors, transactions, history entries,
// reports) and the model and identity types it speaks in come with it.
@_exported import ConcordEngine
@_exported import ConcordModel
@_exported import ConcordRules
@_exported import ConcordTrust
