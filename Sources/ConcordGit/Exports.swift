/// Object ids, tree entries, `GitError`, `ObjectPack` and `FileIO` are the vocabulary of this
/// layer's API: a module that imports ConcordGit sees them without importing the formats too.
@_exported import ConcordGitFormats
