// This file touches the libgit2 C API.
internal import CLibgit2

/// `GitError` from libgit2's return codes and `git_error_last()`.
extension GitError {
    /// True when the failure is about reaching the other side (network, ssh connection, socket,
    /// missing repository path), as opposed to a refusal or a local problem.
    public var isConnectivity: Bool {
        errorClass == Int32(GIT_ERROR_NET.rawValue) || errorClass == Int32(GIT_ERROR_OS.rawValue)
            || (errorClass == Int32(GIT_ERROR_SSH.rawValue) && code != .auth && code != .certificate)
    }

    /// Builds the error for `result` returned by `function`, reading `git_error_last()` now (it is per thread).
    static func last(_ function: String, _ result: Int32) -> GitError {
        var message = Self.words(for: result)
        var errorClass: Int32 = 0
        // libgit2 1.8 and later answer "no error" (class none) where older ones answer NULL.
        if let last = git_error_last(), last.pointee.klass != Int32(GIT_ERROR_NONE.rawValue) {
            errorClass = last.pointee.klass
            if let text = last.pointee.message { message = String(cString: text).trimmingCharacters(in: .newlines) }
        }
        return GitError(function: function, code: Code(result), rawCode: result, message: message, errorClass: errorClass)
    }
}

extension GitError {
    /// What libgit2's return code `result` means, for a failure that left no message: people read
    /// "authentication failed", never "error -16".
    static func words(for result: Int32) -> String {
        switch result {
        case GIT_ENOTFOUND.rawValue: "not found"
        case GIT_EEXISTS.rawValue: "already exists"
        case GIT_EAMBIGUOUS.rawValue: "ambiguous name"
        case GIT_EUSER.rawValue: "stopped by concord"
        case GIT_EBAREREPO.rawValue: "not possible in a bare repository"
        case GIT_EUNBORNBRANCH.rawValue: "the branch has no commits yet"
        case GIT_ENONFASTFORWARD.rawValue: "not a fast-forward"
        case GIT_EINVALIDSPEC.rawValue: "not a valid name or reference"
        case GIT_ECONFLICT.rawValue, GIT_EMERGECONFLICT.rawValue: "conflicting changes"
        case GIT_ELOCKED.rawValue: "locked by another process"
        case GIT_EMODIFIED.rawValue: "changed by another process meanwhile"
        case GIT_EAUTH.rawValue: "authentication failed: the server accepted none of this device's keys"
        case GIT_ECERTIFICATE.rawValue: "the server's host key was not accepted"
        case GIT_EEOF.rawValue: "the connection ended early"
        case GIT_EINVALID.rawValue: "invalid data"
        case GIT_EDIRECTORY.rawValue: "is a directory"
        default: "failed without saying why"
        }
    }
}

extension GitError.Code {
    init(_ result: Int32) {
        switch result {
        case GIT_ENOTFOUND.rawValue: self = .notFound
        case GIT_EEXISTS.rawValue: self = .exists
        case GIT_EMODIFIED.rawValue: self = .modified
        case GIT_ELOCKED.rawValue: self = .locked
        case GIT_ENONFASTFORWARD.rawValue: self = .nonFastForward
        case GIT_ECONFLICT.rawValue, GIT_EMERGECONFLICT.rawValue: self = .conflict
        case GIT_EUNBORNBRANCH.rawValue: self = .unbornBranch
        case GIT_EAUTH.rawValue: self = .auth
        case GIT_ECERTIFICATE.rawValue: self = .certificate
        default: self = .other(result)
        }
    }
}

/// Throws a `GitError` naming `function` when `result` is negative.
@inline(__always)
func check(_ function: String, _ result: Int32) throws {
    if result < 0 { throw GitError.last(function, result) }
}

private extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var s = Substring(self)
        while let last = s.last, set.contains(last) { s = s.dropLast() }
        return String(s)
    }
}

private extension Set where Element == Character {
    static var newlines: Set<Character> { ["\n", "\r"] }
}
