/// A failed git operation: which libgit2 function (or which step of a git format this package reads
/// or writes) failed, its return code and the message. Built from libgit2's last error in ConcordGit
/// (`GitError.last`); the formats here build it themselves.
public struct GitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of failure this was, for callers that need to react (retry, report, ...).
    public enum Code: Sendable, Equatable {
        case notFound, exists, modified, locked, nonFastForward, conflict, unbornBranch, auth, certificate, other(Int32)
    }

    /// The libgit2 function that failed, e.g. `git_reference_create_matching`.
    public let function: String
    public let code: Code
    /// The raw libgit2 return value.
    public let rawCode: Int32
    /// libgit2's `git_error_last()` message at the failing call.
    public let message: String
    /// libgit2's error class (`git_error_t`): where the failure came from (network, ssh, os...).
    public let errorClass: Int32

    public init(function: String, code: Code, rawCode: Int32 = -1, message: String, errorClass: Int32 = 0) {
        self.function = function
        self.code = code
        self.rawCode = rawCode
        self.message = message
        self.errorClass = errorClass
    }

    public var description: String { "\(function) failed: \(message)" }
}
