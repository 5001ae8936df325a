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
        var message = "error \(result)"
        var errorClass: Int32 = 0
        if let last = git_error_last() {
            errorClass = last.pointee.klass
            if let text = last.pointee.message { message = String(cString: text).trimmingCharacters(in: .newlines) }
        }
        return GitError(function: function, code: Code(result), rawCode: result, message: message, errorClass: errorClass)
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
