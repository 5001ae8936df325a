// Apps embed ConcordKit alone: the model and identity types it speaks in come with it.
@_exported import ConcordModel
@_exported import ConcordRules
@_exported import ConcordTrust
