import ConcordRules

/// `decode`'s document, with one that does not read (`CorruptDocument`, from ConcordRules' decoders of
/// `profile.json`, member files and open invitations) reported as `ConcordError.corruptRecord`, as
/// every file of a profile that does not read is.
package func readDocument<T>(_ decode: () throws -> T) throws -> T {
    do { return try decode() } catch let error as CorruptDocument {
        throw ConcordError.corruptRecord(path: error.path, reason: error.reason)
    }
}
