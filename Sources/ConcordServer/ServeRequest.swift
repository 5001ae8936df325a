import ConcordGit
import ConcordKit
/// What a device asks a concord server for, read from sshd's `SSH_ORIGINAL_COMMAND`: git's own
/// `git-upload-pack '<profile>'` (fetch, clone) or `git-receive-pack '<profile>'` (push), or
/// `concord-wait '<profile>' <main> <seconds> [pack]` (wait for main to move), `concord-notice '<profile>'`
/// (a deleted profile's notice) or `concord-destroy '<profile>'` (delete it), nothing else. The
/// command is read strictly, as gitolite reads it: one line of at most 256 bytes, one of the verbs, one space, the profile in single quotes (`'/kid.git'`, `'kid.git'`, `'kid'`: a
/// leading `/`, a trailing `.git` and `/` are dropped), and a profile name of lower-case letters,
/// digits, `-` and `_` (at most 64, starting with a letter or digit). Anything else — a newline,
/// `;`, `..`, another verb, a long or odd name — is refused before any file is touched.
public struct ServeRequest: Sendable, Equatable {
    /// The verbs: git-upload-pack, git-receive-pack, concord-wait, concord-notice, concord-destroy (the
    /// access rule's, `ServerAccess` in ConcordRules, which says what each may do).
    public typealias Verb = ServerAccess.Verb

    public let verb: Verb
    /// The profile's name on the server (its repository is `<root>/repositories/<name>.git`).
    public let profile: String
    /// `concord-wait`: the main the device has (nil: none), and the longest wait in seconds.
    public let known: ObjectID?
    public let seconds: Int
    /// `concord-wait … pack`: send the new commits and objects with the answer.
    public let withPack: Bool

    public static let maxCommandBytes = 256
    public static let maxNameLength = 64
    /// The longest a `concord-wait` holds its connection.
    public static let maxWaitSeconds = 60

    public init(verb: Verb, profile: String, known: ObjectID? = nil, seconds: Int = 0, withPack: Bool = false) {
        self.verb = verb
        self.profile = profile
        self.known = known
        self.seconds = seconds
        self.withPack = withPack
    }

    /// Parses `SSH_ORIGINAL_COMMAND` (nil when the client asked for a shell).
    public static func parse(_ command: String?) throws(ServerRefusal) -> ServeRequest {
        guard let command, !command.isEmpty else {
            throw ServerRefusal("this account serves Concord profiles over git only (no shell): use an ssh:// URL with concord or git")
        }
        let bytes = Array(command.utf8)
        guard bytes.count <= maxCommandBytes else {
            throw ServerRefusal("refused a command of \(bytes.count) bytes: at most \(maxCommandBytes) are read")
        }
        if bytes.contains(where: { $0 == 0x0A || $0 == 0x0D }) { throw ServerRefusal("refused a command with a newline in it") }
        if let control = bytes.first(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw ServerRefusal("refused a command with a control character (0x\(String(control, radix: 16))) in it")
        }
        if command.contains(";") { throw ServerRefusal("refused a command with ';' in it: one git command per connection") }
        if command.contains("..") { throw ServerRefusal("refused a command with '..' in it: profiles are named, not reached by path") }
        guard let space = command.firstIndex(of: " ") else {
            throw ServerRefusal("refused '\(command)': only git-upload-pack, git-receive-pack, concord-wait, concord-notice and concord-destroy are served")
        }
        guard let verb = Verb(rawValue: String(command[..<space])) else {
            throw ServerRefusal("refused '\(command[..<space])': only git-upload-pack, git-receive-pack, concord-wait, concord-notice and concord-destroy are served")
        }
        var argument = command[command.index(after: space)...]
        var known: ObjectID?
        var seconds = 0
        var withPack = false
        if verb == .wait {
            // concord-wait '<profile>' <40 hex digits of the main the device has, or 40 zeros> <seconds> [pack]
            let fields = argument.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 3 || (fields.count == 4 && fields[3] == "pack"), fields[1].utf8.count == 40,
                  let tip = ObjectID(hex: String(fields[1])), let wait = Int(fields[2]), (1...maxWaitSeconds).contains(wait) else {
                throw ServerRefusal("refused concord-wait \(argument): it takes '<profile>', the 40-digit id of the main the device has, "
                                    + "1 to \(maxWaitSeconds) seconds, and optionally 'pack'")
            }
            (argument, known, seconds, withPack) = (fields[0], fields[1].allSatisfy { $0 == "0" } ? nil : tip, wait, fields.count == 4)
        }
        guard argument.count >= 2, argument.first == "'", argument.last == "'" else {
            throw ServerRefusal("refused \(verb.rawValue) \(argument): the profile must be one name in single quotes, as git sends it")
        }
        var name = Substring(argument.dropFirst().dropLast())
        if name.hasPrefix("/") { name = name.dropFirst() }
        if name.hasSuffix("/") { name = name.dropLast() }
        if name.hasSuffix(".git") { name = name.dropLast(4) }
        let profile = String(name)
        if let problem = nameProblem(profile) { throw ServerRefusal("refused \(verb.rawValue) \(argument): \(problem)") }
        return ServeRequest(verb: verb, profile: profile, known: known, seconds: seconds, withPack: withPack)
    }

    /// Why `name` cannot name a profile on a concord server, or nil when it can.
    public static func nameProblem(_ name: String) -> String? {
        guard !name.isEmpty else { return "no profile named" }
        guard name.utf8.count <= maxNameLength else { return "a profile name has at most \(maxNameLength) characters" }
        let allowed = name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }
        guard allowed, let first = name.utf8.first, first != 0x2D, first != 0x5F else {
            return "a profile name is lower-case letters, digits, '-' and '_', starting with a letter or digit"
        }
        return nil
    }
}

/// Why a concord server turned a connection or a push away: one line, said to the device.
public struct ServerRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
