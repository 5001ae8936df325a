import ConcordGit
import ConcordKeyIndex
import ConcordKit
import ConcordModel
import ConcordTrust
import Foundation

/// A concord server: one directory (`--root`) an sshd account serves through `concord serve`.
///
/// - `concord-server.json`: the state file (`ServerConfiguration`): format version, the admin key,
///   the account's user, and the `concord` executable sshd and the hooks run;
/// - `repositories/<profile>.git`: one bare repository per profile, each with a `pre-receive` and a
///   `post-receive` hook calling `concord serve --pre-receive` / `--post-receive`;
/// - `keys.index`: which keys may log in (`KeyIndex`), kept current by every post-receive;
/// - optionally, concord's block of an `authorized_keys` file (`AuthorizedKeysFile`), rewritten with it.
public struct ConcordServer: Sendable {
    public let root: URL
    public let configuration: ServerConfiguration
    /// What this server's checks remember between steps (memberships, signatures, policy merges).
    let caches = EngineCaches()

    static let configurationFile = "concord-server.json"
    static let repositoriesDirectory = "repositories"

    /// Prepares `root` (created when missing) to serve profiles: writes the state file, installs
    /// the hooks in every repository already there, and rebuilds the key index from their mains.
    /// With `authorizedKeys`, concord also keeps a block of that authorized_keys file (for an sshd
    /// without AuthorizedKeysCommand). Running it again (say, after moving the concord binary)
    /// rewrites all of them.
    public static func initialize(root: URL, adminKey: SSHPublicKey, user: String, executable: String,
                                  authorizedKeys: String? = nil) throws -> ConcordServer {
        let root = root.standardizedFileURL
        var paths = [("the server directory", root.path), ("the concord executable", executable)]
        if let authorizedKeys { paths.append(("the authorized_keys file", authorizedKeys)) }
        for (what, path) in paths {
            guard path.hasPrefix("/"), !path.contains(where: { "'\"\\\n\r".contains($0) }) else {
                throw ConcordError.invalidInput(.badSetting, "\(what) \(path.debugDescription) must be an absolute path without quotes, backslashes or newlines "
                                                + "(sshd runs it from an authorized_keys line)")
            }
        }
        if let problem = ServerConfiguration.userProblem(user) { throw ConcordError.invalidInput(.badSetting, problem) }
        let configurationPath = root.appendingPathComponent(configurationFile).path
        if let existing = FileManager.default.contents(atPath: configurationPath) {
            _ = try ServerConfiguration.decode(Array(existing), path: configurationPath)   // a newer format is refused, not overwritten
        }
        do {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(repositoriesDirectory), withIntermediateDirectories: true)
        } catch {
            throw ConcordError.io(.create, path: root.path, "cannot create \(root.path): \(error.localizedDescription)")
        }
        let configuration = ServerConfiguration(formatVersion: ServerConfiguration.currentFormatVersion, adminKey: adminKey, user: user,
                                                executable: executable, authorizedKeys: authorizedKeys)
        do { try FileIO.write(configuration.json.canonicalBytes(), to: configurationPath, durable: true) } catch {
            throw ConcordError.io(.write, path: nil, error.description)
        }
        let server = ConcordServer(root: root, configuration: configuration)
        var memberships = [String: Membership]()
        for name in try server.profileNames() {
            // A deleted profile has no repository left, only its record (`ServerDeletion`).
            if FileManager.default.fileExists(atPath: server.repositoryPath(name)) { try server.installHooks(in: server.repositoryPath(name)) }
            memberships[name] = try server.membership(of: name) ?? Membership([])
        }
        try server.keyIndex.replaceAll(memberships)
        return server
    }

    /// The server prepared at `root` by `initialize`.
    public static func open(root: URL) throws -> ConcordServer {
        let root = root.standardizedFileURL
        let path = root.appendingPathComponent(configurationFile).path
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw ConcordError.io(.read, path: root.path, "\(root.path) is not a concord server directory (no \(configurationFile)): run 'concord server init --root \(root.path) --admin-key KEY'")
        }
        return ConcordServer(root: root, configuration: try ServerConfiguration.decode(Array(bytes), path: path))
    }

    var keyIndex: KeyIndex {
        let settings = KeyIndexSettings(user: configuration.user, executable: configuration.executable, root: root.path,
                                        adminFingerprint: configuration.adminKey.fingerprint, adminBase64: configuration.adminKey.base64)
        return KeyIndex(root: root, settings: settings, authorizedKeys: configuration.authorizedKeys.map {
            AuthorizedKeysFile(path: $0) { fingerprint, base64 in
                KeyIndexFormat.authorizedKeysLine(executable: settings.executable, root: settings.root,
                                                  fingerprint: Substring(fingerprint), base64: Substring(base64))
            }
        })
    }

    /// `<root>/repositories/<name>.git`.
    public func repositoryPath(_ name: String) -> String {
        root.appendingPathComponent(Self.repositoriesDirectory).appendingPathComponent(name + ".git").path
    }

    /// The names of the profiles this server holds, sorted.
    func profileNames() throws -> [String] {
        let directory = root.appendingPathComponent(Self.repositoriesDirectory).path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let repositories = entries.filter { $0.hasSuffix(".git") }.map { String($0.dropLast(4)) }
        let deleted = entries.filter { $0.hasSuffix(ServerDeletion.suffix) }.map { String($0.dropLast(ServerDeletion.suffix.count)) }
        return Set(repositories + deleted).filter { ServeRequest.nameProblem($0) == nil }.sorted()
    }

    /// The membership at profile `name`'s main, or nil when it has no repository or no main yet;
    /// for a deleted profile, its members at the deletion, all revoked (`ServerDeletion`).
    func membership(of name: String) throws -> Membership? {
        if let deletion = try deletion(of: name) { return deletion.membership }
        let path = repositoryPath(name)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try gitCall {
            let repository = try Repository.open(path)
            guard let main = try repository.resolveReference("refs/heads/main") else { return nil }
            return try CommitAuthorizer.membershipWithInvitations(in: repository, tree: try repository.commit(main).tree, caches: caches)
        }
    }

    /// Whether `key` (`SHA256:…`) is the server's admin key.
    func isAdminKey(_ key: String) -> Bool { configuration.adminKey.fingerprint == key }

    /// Where `concord serve` hands a connection it let in.
    public struct Admitted: Sendable, Equatable {
        /// The repository to hand to git.
        public let repository: String
        public let grant: ServerGrant
        /// A revoked member's git namespace (`GIT_NAMESPACE`), whose main is the one they may read; nil for everyone else.
        public let namespace: String?
        /// The ref whose moves `concord-wait` reports.
        public var mainRef: String { namespace.map(RevocationView.ref(namespace:)) ?? "refs/heads/main" }
        /// The member whose key this is, in the membership at the server's main; nil for a key that
        /// is no member's (the server admin's, the creator's first push).
        public var member: String? = nil
    }

    /// Decides `request` by the key `key` (`SHA256:…`) at `now`; for the admin's first push of a new
    /// profile, creates its repository. A revoked member is let in only when the post-receive has
    /// recorded the view of their revocation (`RevocationView`).
    public func admit(_ request: ServeRequest, key: String, now: Int64) throws -> Admitted {
        if let deletion = try deletion(of: request.profile) {
            // A deleted profile: its members' devices may read the notice (and an Admin finish the deletion); nothing else.
            guard deletion.knows(key) else {
                throw ServerRefusal("no profile \"\(request.profile)\" here that the key \(key) may read: ask the profile's admin to add this device")
            }
            guard request.verb == .notice || request.verb == .destroy else { throw deletion.refusal(profile: request.profile) }
            return Admitted(repository: deletionPath(request.profile), grant: .revoked, namespace: nil)
        }
        if request.verb == .notice {
            throw ServerRefusal("\"\(request.profile)\" has not been deleted: there is no deletion notice to give")
        }
        let membership = try membership(of: request.profile)
        switch ServerAccess.decide(request, key: key, isAdminKey: isAdminKey(key), profile: membership.map { .present($0) } ?? .absent, now: now) {
        case .failure(let refusal):
            throw refusal
        case .success(let admission):
            let path = repositoryPath(request.profile)
            if admission.grant == .creator { try createRepository(request.profile) }
            guard admission.grant == .revoked, let name = admission.member, let member = membership?.members[name] else {
                return Admitted(repository: path, grant: admission.grant, namespace: nil, member: admission.member)
            }
            guard case .some(.some) = try? Repository.localRemoteHead(at: path, ref: RevocationView.ref(member: name)) else {
                throw ServerAccess.removed(member, profile: request.profile)
            }
            return Admitted(repository: path, grant: .revoked, namespace: RevocationView.namespace(member: name), member: name)
        }
    }

    /// Creates profile `name`'s bare repository with its settings and hooks, unless it exists: made
    /// aside and renamed into place, so no process ever sees half of one.
    func createRepository(_ name: String) throws {
        let path = repositoryPath(name)
        guard !FileManager.default.fileExists(atPath: path) else { return }
        let staging = root.appendingPathComponent(Self.repositoriesDirectory).appendingPathComponent(".new-\(getpid())-\(name)").path
        try? FileManager.default.removeItem(atPath: staging)
        try Sync.createBareRemote(at: URL(fileURLWithPath: staging))
        try installHooks(in: staging)
        if rename(staging, path) != 0 {
            let failure = errno
            try? FileManager.default.removeItem(atPath: staging)
            // Another connection created it first: theirs is as good as ours.
            guard FileManager.default.fileExists(atPath: path) else {
                throw ConcordError.io(.create, path: path, "cannot create \(path): \(String(cString: strerror(failure)))")
            }
        }
    }

    /// Writes the `pre-receive` and `post-receive` hooks of the repository at `path`.
    ///
    /// The post-receive starts concord only when the push may have changed who can log in: when it
    /// moves main from or to nothing, or changes main's `.concord/members` or `.concord/invitations`
    /// (or git cannot tell). git answers that in about a millisecond, where starting concord takes
    /// ~20 ms on every push (`make bench` B8). It only filters: `PushCheck.refreshKeyIndex` decides
    /// again, on the same updates, whether and how the index changes.
    func installHooks(in path: String) throws {
        let command = "'\(configuration.executable)' serve --root '\(root.path)'"
        let hooks = [
            ("pre-receive", """
                #!/bin/sh
                # Written by 'concord server init': every pushed commit must pass Concord's validity rule.
                exec \(command) --pre-receive

                """),
            ("post-receive", """
                #!/bin/sh
                # Written by 'concord server init': keeps the server's key index current. Only a push that
                # changes main's members or invitations can change it, so concord runs only for those.
                zero=0000000000000000000000000000000000000000
                updates=$(cat)
                printf '%s\\n' "$updates" | while read -r old new ref; do
                    [ "$ref" = refs/heads/main ] || continue
                    if [ "$old" = "$zero" ] || [ "$new" = "$zero" ] \\
                        || ! git diff-tree --quiet "$old" "$new" -- .concord/members .concord/invitations; then
                        exit 1
                    fi
                done && exit 0
                printf '%s\\n' "$updates" | exec \(command) --post-receive

                """),
        ]
        for (hook, script) in hooks {
            do { try FileIO.write(Array(script.utf8), to: path + "/hooks/" + hook, mode: 0o755) } catch {
                throw ConcordError.io(.write, path: nil, error.description)
            }
        }
    }

    /// The `authorized_keys` line sshd's `AuthorizedKeysCommand` prints for `key` (a public key
    /// line, or its base64 blob alone, as sshd's `%k` gives it) logging in as `user`: a forced
    /// `concord serve` for a key that is the admin's, or an active or revoked member's, or a pending
    /// invitation's in any profile here; nil for any other key or user. The answer is
    /// `KeyIndexLookup`'s, from the key index alone, as `concord-lookup` gives it; throws when the
    /// index is missing, damaged or of another version.
    public func authorizedKeysLine(user: String, key text: String, now: Int64) throws -> String? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard words.count == 1 || (words.count >= 2 && words[0] == SSHPublicKey.keyType) else { return nil }
        do {
            return try KeyIndexLookup.answer(indexAt: keyIndex.path, user: user, key: String(words[words.count == 1 ? 0 : 1]), now: now)
        } catch {
            throw ConcordError.io(.write, path: nil, error.description)
        }
    }

    /// The authorized_keys line that lets `key` in to run only `concord serve` as itself.
    func forcedCommandLine(for key: SSHPublicKey) -> String {
        KeyIndexFormat.authorizedKeysLine(executable: configuration.executable, root: root.path,
                                          fingerprint: Substring(key.fingerprint), base64: Substring(key.base64))
    }
}

/// `concord-server.json`, the server's state file.
///
/// Format history: 1 — the admin key, the account's user, the concord executable and, when concord
/// keeps a block of one, the authorized_keys file.
public struct ServerConfiguration: Sendable, Equatable {
    public static let currentFormatVersion = 1

    public let formatVersion: Int
    /// The key that may create profiles (its first push of a new profile name).
    public let adminKey: SSHPublicKey
    /// The account sshd serves concord through; `--lookup` answers for no other user.
    public let user: String
    /// The absolute path of the concord executable the authorized_keys lines and hooks run.
    public let executable: String
    /// The authorized_keys file concord keeps its block of (absolute), or nil (AuthorizedKeysCommand mode).
    public let authorizedKeys: String?

    var json: JSONValue {
        var fields: [String: JSONValue] = ["formatVersion": .number(String(formatVersion)), "adminKey": .string(adminKey.line(comment: nil)),
                                           "user": .string(user), "executable": .string(executable)]
        if let authorizedKeys { fields["authorizedKeys"] = .string(authorizedKeys) }
        return .object(fields)
    }

    static func decode(_ bytes: [UInt8], path: String) throws -> ServerConfiguration {
        guard let value = try? JSONValue.parse(bytes), let version = value["formatVersion"]?.intValue else {
            throw ConcordError.corruptRecord(path: path, reason: "not a concord server state file")
        }
        guard version <= currentFormatVersion else {
            throw ConcordError.newerFormat(found: version, supported: currentFormatVersion)
        }
        guard let line = value["adminKey"]?.stringValue, let adminKey = try? SSHPublicKey(line: line),
              let user = value["user"]?.stringValue, let executable = value["executable"]?.stringValue else {
            throw ConcordError.corruptRecord(path: path, reason: "missing or damaged adminKey, user or executable")
        }
        return ServerConfiguration(formatVersion: version, adminKey: adminKey, user: user, executable: executable,
                                   authorizedKeys: value["authorizedKeys"]?.stringValue)
    }

    /// Why `user` cannot be the served account's name, or nil.
    static func userProblem(_ user: String) -> String? {
        guard !user.isEmpty, user.utf8.count <= 32,
              user.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E }) else {
            return "\(user.debugDescription) is not a user name sshd serves (lower-case letters, digits, '.', '-', '_')"
        }
        return nil
    }
}
