import ConcordKit
import Foundation

/// What `concord serve` does with one connection sshd let in through its forced command, decided
/// here from the command the device sent (`SSH_ORIGINAL_COMMAND`) and the connecting key's
/// standing on this server (`ConcordServer.admit`). The executable only carries it out (an
/// `execvp`, a write), so the policy — what a revoked key may see, what is exec'd — is library
/// code, tested as such.
///
/// - `git-upload-pack` / `git-receive-pack`: git's own program on the profile's repository
///   (`Exec`), with `CONCORD_SERVE_KEY` set for the pre-receive hook. A revoked member's key sees
///   its view of main alone (`RevocationView`): `GIT_NAMESPACE` names the view, and
///   `GIT_PROTOCOL` is removed so git speaks protocol v0 (v2's upload-pack hands out any object
///   asked for by id, advertised or not). Everyone else runs with `transfer.hideRefs` set to the
///   views' root (through `GIT_CONFIG_COUNT`), so no member ever sees them.
/// - `concord-wait`: answered by `ConcordServer.answerWait` while the connection holds a place
///   (`WaitSlots`).
/// - `concord-notice`: the deleted profile's signed notice, written as it is.
/// - `concord-destroy`: `ConcordServer.destroy` with the notice the device sends on standard input.
/// - A command the request's grammar refuses (`ServeRequest.parse`), or a key the access rule
///   turns away (`ServerAccess`): one line, said to the device.
public enum ServePlan: Sendable, Equatable {
    /// Replace `concord serve` with git's program (`execvp`).
    case exec(Exec)
    /// Hold the connection until main moves, then answer (`ConcordServer.answerWait`).
    case wait(ServeRequest, ConcordServer.Admitted)
    /// Write these bytes, a deleted profile's signed notice, and end.
    case notice([UInt8])
    /// Delete `profile` with the notice read from standard input (`ConcordServer.destroy`).
    case destroy(profile: String)
    /// Turn the connection away with this line.
    case refuse(ServerRefusal)

    /// A program that replaces `concord serve`: git's, on a profile's repository.
    public struct Exec: Sendable, Equatable {
        /// The program, looked up in PATH.
        public let program: String
        /// Its whole argument vector, `program` first.
        public let arguments: [String]
        /// Variables set for it, over the environment it inherits.
        public let setting: [String: String]
        /// Variables removed from the environment it inherits.
        public let removing: [String]

        package init(program: String, arguments: [String], setting: [String: String], removing: [String]) {
            self.program = program
            self.arguments = arguments
            self.setting = setting
            self.removing = removing
        }

        /// What runs `request` (`git-upload-pack` or `git-receive-pack`) for the key `key`
        /// (`SHA256:…`) that `ConcordServer.admit` let in as `admitted`. No I/O: the decision
        /// alone, which the tests state case by case.
        package init(_ request: ServeRequest, key: String, admitted: ConcordServer.Admitted) {
            var setting = ["CONCORD_SERVE_KEY": key]
            var removing = [String]()
            if let namespace = admitted.namespace {
                // Protocol v0 only: git's v2 upload-pack hands out any object asked for by id.
                setting["GIT_NAMESPACE"] = namespace
                removing.append("GIT_PROTOCOL")
            } else {
                setting["GIT_CONFIG_COUNT"] = "1"
                setting["GIT_CONFIG_KEY_0"] = "transfer.hideRefs"
                setting["GIT_CONFIG_VALUE_0"] = RevocationView.hiddenRefs
            }
            self.init(program: request.verb.rawValue, arguments: [request.verb.rawValue, admitted.repository],
                      setting: setting, removing: removing)
        }
    }

    /// The plan for the connection of the key `key` (`SHA256:…`) that asked for `command` (sshd's
    /// `SSH_ORIGINAL_COMMAND`; nil when the client asked for a shell) at `now`. A refused command
    /// or key is a plan (`refuse`); this throws only when the server's own files cannot be read.
    /// As `ConcordServer.admit` does, the admin's first push of a new profile creates its repository.
    public static func connection(_ command: String?, key: String, server: ConcordServer, now: Int64) throws -> ServePlan {
        let request: ServeRequest
        let admitted: ConcordServer.Admitted
        do {
            request = try ServeRequest.parse(command)
            admitted = try server.admit(request, key: key, now: now)
        } catch let refusal as ServerRefusal {
            return .refuse(refusal)
        }
        switch request.verb {
        case .upload, .receive:
            return .exec(Exec(request, key: key, admitted: admitted))
        case .wait:
            return .wait(request, admitted)
        case .notice:
            // `admit` let in one of a deleted profile's members: the Admin's signed notice, which the device checks.
            guard let notice = try server.deletionNotice(of: request.profile) else {
                return .refuse(ServerRefusal("\"\(request.profile)\" has not been deleted"))
            }
            return .notice(notice)
        case .destroy:
            return .destroy(profile: request.profile)
        }
    }
}
