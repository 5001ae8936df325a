// This file touches a C shim (renameat2).
internal import CShims

extension FileIO {
    /// Swaps two existing paths in one step (Linux `renameat2(RENAME_EXCHANGE)`); false, with
    /// nothing changed, where the system or the file system cannot (always on other systems, and
    /// built with `-DCONCORD_PORTABLE`: the caller then renames).
    package static func exchange(_ path: String, _ other: String) -> Bool {
        concord_rename_exchange(path, other) == 0
    }
}
