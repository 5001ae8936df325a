// This file touches the libgit2 C API.
internal import CLibgit2
import Foundation

extension Repository {
    /// The configured remotes, by name, with their URLs (`remote.<name>.url` in any config file).
    /// Read with a plain config iterator: `git_remote_list` uses a glob iterator, which leaks in
    /// libgit2 1.5 (see `remoteURL`).
    public func remotes() throws -> [(name: String, url: String)] {
        var config: OpaquePointer?
        try check("git_repository_config_snapshot", git_repository_config_snapshot(&config, handle))
        defer { git_config_free(config) }
        var iterator: OpaquePointer?
        try check("git_config_iterator_new", git_config_iterator_new(&iterator, config))
        defer { git_config_iterator_free(iterator) }
        var urls = [String: String]()
        var entry: UnsafeMutablePointer<git_config_entry>?
        while git_config_next(&entry, iterator) == 0, let entry {
            guard let rawName = entry.pointee.name, let rawValue = entry.pointee.value else { continue }
            let key = String(cString: rawName)
            // Section and variable names are lower-cased by libgit2; the remote's name keeps its case.
            guard key.hasPrefix("remote."), key.hasSuffix(".url"), key.count > 11 else { continue }
            urls[String(key.dropFirst(7).dropLast(4))] = String(cString: rawValue)
        }
        return urls.map { (name: $0.key, url: $0.value) }.sorted { $0.name < $1.name }
    }

    /// The URL of remote `name` (`remote.<name>.url`), or nil if there is no such remote.
    ///
    /// Read from a config snapshot, not with `git_remote_lookup`: libgit2 1.5's lookup rewrites the
    /// URL with `url.*.insteadOf`, found with a config glob iterator whose regex match leaks its
    /// PCRE2 match data (~20 KB) for every config entry that does not match (`git_regexp_match`
    /// returns early on PCRE2_ERROR_NOMATCH without `pcre2_match_data_free`), so each lookup leaked
    /// ~75 KB and `watch` made two per poll. Concord writes the URLs it uses itself; insteadOf
    /// rewriting is not applied (path remotes never went through libgit2's remotes anyway).
    public func remoteURL(_ name: String) throws -> String? {
        var valid: Int32 = 0
        try check("git_remote_name_is_valid", git_remote_name_is_valid(&valid, name))
        guard valid == 1 else { return nil }
        var config: OpaquePointer?
        try check("git_repository_config_snapshot", git_repository_config_snapshot(&config, handle))
        guard let config else { throw GitError(function: "git_repository_config_snapshot", code: .notFound, message: "no config") }
        defer { git_config_free(config) }
        var buffer = git_buf()
        defer { git_buf_dispose(&buffer) }
        let result = git_config_get_string_buf(&buffer, config, "remote.\(name).url")
        if result == GIT_ENOTFOUND.rawValue { return nil }
        try check("git_config_get_string_buf", result)
        return buffer.ptr.map { String(cString: $0) }
    }

    /// Adds remote `name` fetching `refs/heads/*` into `refs/remotes/<name>/*`. Written as the two
    /// config entries `git remote add` writes: `git_remote_create` looks the name up first with
    /// `git_remote_lookup`, which leaks in libgit2 1.5 (see `remoteURL`).
    public func addRemote(_ name: String, url: String) throws {
        var valid: Int32 = 0
        try check("git_remote_name_is_valid", git_remote_name_is_valid(&valid, name))
        guard valid == 1 else { throw GitError(function: "git_remote_name_is_valid", code: .other(-1), message: "invalid remote name \(name)") }
        guard try remoteURL(name) == nil else {
            throw GitError(function: "git_remote_create", code: .exists, message: "remote \(name) already exists")
        }
        try setConfig("remote.\(name).url", url)
        try setConfig("remote.\(name).fetch", "+refs/heads/*:refs/remotes/\(name)/*")
    }

    public func removeRemote(_ name: String) throws {
        try check("git_remote_delete", git_remote_delete(handle, name))
    }

    /// Runs `body` with an in-memory (anonymous) remote for remote `name`'s URL, freed afterwards.
    /// Anonymous and without insteadOf, so libgit2 runs no config glob (see `remoteURL`); the
    /// refspecs are always passed explicitly, and after a push the caller moves the tracking ref.
    /// For an ssh URL, also sets what libgit2 reads as ~/.ssh/known_hosts (`SSHKnownHostsFile`).
    private func withRemote<T>(_ name: String, options: TransportOptions, _ body: (OpaquePointer, String) throws -> T) throws -> T {
        guard let url = try remoteURL(name) else {
            throw GitError(function: "git_remote_lookup", code: .notFound, message: "no remote \(name)")
        }
        return try withRemote(url: url, options: options) { try body($0, url) }
    }

    /// `withRemote` for a URL that is no configured remote (a fetch into a quarantine).
    private func withRemote<T>(url: String, options: TransportOptions, _ body: (OpaquePointer) throws -> T) throws -> T {
        var create = git_remote_create_options()
        try check("git_remote_create_options_init",
                  git_remote_create_options_init(&create, UInt32(GIT_REMOTE_CREATE_OPTIONS_VERSION)))
        create.repository = handle
        create.flags = GIT_REMOTE_CREATE_SKIP_INSTEADOF.rawValue | GIT_REMOTE_CREATE_SKIP_DEFAULT_FETCHSPEC.rawValue
        var remote: OpaquePointer?
        try check("git_remote_create_with_opts", git_remote_create_with_opts(&remote, url, &create))
        guard let remote else { throw GitError(function: "git_remote_create_with_opts", code: .notFound, message: "no remote for \(url)") }
        defer { git_remote_free(remote) }
        guard url.hasPrefix("ssh://") else { return try body(remote) }
        return try SSHKnownHostsFile.with(options.knownHostLines) { try body(remote) }
    }

    /// Fetches `refspecs` from `url` (objects and the listed refs only; nothing is merged). The
    /// remote is anonymous, so no configured refspec moves a remote-tracking ref on the side
    /// (libgit2 updates those "opportunistically" for a named remote): only `refspecs`' refs move.
    /// The pack the server sends is checked for deltas libgit2 must not rebuild before it
    /// rebuilds any (`PackWriteBounds`).
    public func fetch(url: String, refspecs: [String], options: TransportOptions) throws {
        try PackWriteBounds.install(in: self)
        try withRemote(url: url, options: options) { remote in
            let session = TransportSession(options: options, url: url)
            var fetchOptions = git_fetch_options()
            try check("git_fetch_options_init", git_fetch_options_init(&fetchOptions, UInt32(GIT_FETCH_OPTIONS_VERSION)))
            session.install(in: &fetchOptions.callbacks)
            fetchOptions.prune = GIT_FETCH_NO_PRUNE
            fetchOptions.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE
            fetchOptions.update_fetchhead = 0
            let specs = StringArray(refspecs)
            let result = withExtendedLifetime(session) {
                specs.withRaw { git_remote_fetch(remote, $0, &fetchOptions, "concord: fetch") }
            }
            if result < 0 { throw session.failure(GitError.last("git_remote_fetch", result)) }
        }
    }

    /// The remote's branch heads, read without downloading any objects: a cheap "did it move?".
    ///
    /// An ssh remote is read by `SSHRefAdvertisement`, not by libgit2's transport, which loses
    /// what it loads as ~/.ssh/known_hosts on every connection (upstream issue 6598): `watch`
    /// asks this thousands of times a day. Other URLs go through libgit2.
    public func remoteHeads(remote name: String, options: TransportOptions) throws -> [String: ObjectID] {
        guard let url = try remoteURL(name) else {
            throw GitError(function: "git_remote_lookup", code: .notFound, message: "no remote \(name)")
        }
        if url.hasPrefix("ssh://") { return try SSHRefAdvertisement.heads(url: url, options: options) }
        return try withRemote(url: url, options: options) { remote in
            let session = TransportSession(options: options, url: url)
            var callbacks = git_remote_callbacks()
            try check("git_remote_init_callbacks", git_remote_init_callbacks(&callbacks, UInt32(GIT_REMOTE_CALLBACKS_VERSION)))
            session.install(in: &callbacks)
            let connected = withExtendedLifetime(session) {
                git_remote_connect(remote, GIT_DIRECTION_FETCH, &callbacks, nil, nil)
            }
            if connected < 0 { throw session.failure(GitError.last("git_remote_connect", connected)) }
            defer { git_remote_disconnect(remote) }
            var heads: UnsafeMutablePointer<UnsafePointer<git_remote_head>?>?
            var count = 0
            try check("git_remote_ls", git_remote_ls(&heads, &count, remote))
            var out = [String: ObjectID]()
            for index in 0..<count {
                guard let head = heads?[index], let name = head.pointee.name else { continue }
                out[String(cString: name)] = ObjectID(head.pointee.oid)
            }
            return out
        }
    }

    /// Pushes `refspec` (never forced: a leading `+` is refused) over a network transport and
    /// returns each ref's status. libgit2 reports a server-side rejection only through the
    /// per-ref status, so callers must check `rejections`.
    ///
    /// With `onlyIf` `.remoteAt(tip)`, the push is a compare-and-swap: once the server has said
    /// where its ref is, and before any object is sent, the push ends unless the ref is at `tip`
    /// (nil: absent), throwing `GitError` with code `.modified`. git's receive-pack then also refuses
    /// the update if the ref moved meanwhile (its old value is the one advertised).
    public func push(remote name: String, refspec: String, options: TransportOptions,
                     onlyIf condition: PushCondition = .always) throws -> PushOutcome {
        precondition(!refspec.hasPrefix("+"), "Concord never force-pushes")
        return try withRemote(name, options: options) { remote, url in
            let session = TransportSession(options: options, url: url)
            var pushOptions = git_push_options()
            try check("git_push_options_init", git_push_options_init(&pushOptions, UInt32(GIT_PUSH_OPTIONS_VERSION)))
            session.install(in: &pushOptions.callbacks)
            if case .remoteAt(let expected) = condition {
                session.expectedRemoteTip = .some(expected)
                pushOptions.callbacks.push_negotiation = { updates, count, payload in
                    guard let payload else { return -1 }
                    let session = Unmanaged<TransportSession>.fromOpaque(payload).takeUnretainedValue()
                    for index in 0..<count {
                        guard let update = updates?[index] else { continue }
                        let current = ObjectID(update.pointee.src)
                        let remoteTip = current.bytes.allSatisfy { $0 == 0 } ? nil : current
                        if remoteTip != session.expectedRemoteTip ?? nil {
                            session.remoteTipMoved = true
                            return -1
                        }
                    }
                    return 0
                }
            }
            let specs = StringArray([refspec])
            let result = withExtendedLifetime(session) {
                specs.withRaw { git_remote_push(remote, $0, &pushOptions) }
            }
            if session.remoteTipMoved {
                throw GitError(function: "git_remote_push", code: .modified, message: "the remote's ref is no longer where this device last saw it")
            }
            if result < 0 { throw session.failure(GitError.last("git_remote_push", result)) }
            return PushOutcome(statuses: session.pushStatuses, serverMessages: session.serverMessages)
        }
    }

    /// When `push` sends anything.
    public enum PushCondition: Sendable {
        case always
        /// Only if the remote's ref is at this commit (nil: the remote has no such ref).
        case remoteAt(ObjectID?)
    }

    /// Pushes to a bare repository on a local path WITH compare-and-swap: copies the objects
    /// `tip` needs and the target lacks as one pack (`ObjectTransfer`), then moves `ref` in the target
    /// only if it still points at `expected` (libgit2's own local transport would force it).
    /// Throws `GitError` with code `.modified`/`.exists` when another device pushed first.
    public func pushToLocalRepository(at path: String, ref: String, tip: ObjectID, expected: ObjectID?) throws {
        try SourceObjects.refuseIrregularFiles(inRepositoryAt: path)
        let target = try Repository.open(path)
        if !target.contains(tip) { _ = try ObjectTransfer.copy(tip, from: self, to: target) }
        try target.updateReference(ref, to: tip, expected: expected, message: "concord: push")
    }

    /// Waits on a concord server (ssh `url`) until its main is no longer `known`, or `seconds` pass
    /// (`concord-wait`); returns its main then. A server that does not offer the wait fails, as a
    /// connection to it that runs an unknown command would.
    public static func waitForRemoteMain(url: String, known: ObjectID?, seconds: Int, options: TransportOptions) throws -> ObjectID? {
        try SSHRefAdvertisement.heads(url: url, options: waiting(options, seconds: seconds), waitingFor: (known, seconds))["refs/heads/main"]
    }

    /// `options` for a wait of `seconds`: the server is silent while it waits, so the stall timer must outlast the wait.
    private static func waiting(_ options: TransportOptions, seconds: Int) -> TransportOptions {
        var options = options
        options.stallTimeout = options.stallTimeout.map { max($0, TimeInterval(seconds) + 10) }
        return options
    }

    /// The most pack bytes a `concord-wait … pack` answer carries: the server sends none past it
    /// (`ServerWait.pack`) and the device reads none past it; the device then fetches as usual.
    public static let concordWaitPackLimit = 32 << 20

    /// As `waitForRemoteMain`, asking a concord server to send with its answer a pack of what
    /// main has beyond `known` (`concord-wait … pack`), so the device need not connect again to
    /// fetch it. The pack is empty when the server sent none (or over `packLimit` bytes); it is
    /// not trusted: see `indexPack`.
    public static func waitForRemoteMainWithPack(url: String, known: ObjectID, seconds: Int, packLimit: Int,
                                                 options: TransportOptions) throws -> (main: ObjectID?, pack: [UInt8]) {
        let answer = try SSHRefAdvertisement.headsAndPack(url: url, options: waiting(options, seconds: seconds), known: known,
                                                          seconds: seconds, packLimit: packLimit)
        return (answer.heads["refs/heads/main"], answer.pack)
    }

    /// Indexes `pack` (git's pack format, possibly thin) into this repository's object database
    /// with libgit2's indexer, as a fetch does: every object is inflated and hashed, a thin pack's
    /// bases are taken from the objects this repository sees, and the pack and its index are
    /// written only if all of it reads. Throws otherwise, leaving nothing behind.
    public func indexPack(_ pack: [UInt8]) throws {
        try PackWriteBounds.install(in: self)   // the pack is checked before any delta is rebuilt
        var odb: OpaquePointer?
        try check("git_repository_odb", git_repository_odb(&odb, handle))
        defer { git_odb_free(odb) }
        var writer: UnsafeMutablePointer<git_odb_writepack>?
        try check("git_odb_write_pack", git_odb_write_pack(&writer, odb, nil, nil))
        guard let writer else { throw GitError(function: "git_odb_write_pack", code: .other(-1), message: "no pack writer") }
        defer { writer.pointee.free(writer) }
        var stats = git_indexer_progress()
        try pack.withUnsafeBytes { bytes in
            try check("git_odb_writepack.append", writer.pointee.append(writer, bytes.baseAddress, bytes.count, &stats))
        }
        try check("git_odb_writepack.commit", writer.pointee.commit(writer, &stats))
    }

    /// Runs a concord server's verb `verb` for the repository at ssh `url` (`concord-notice`,
    /// `concord-destroy`), sending `input`; returns what it printed (at most `limit` bytes). A
    /// server that says no (or runs no concord) throws `TransportFailure.refused` with its message.
    public static func runServerVerb(_ verb: String, url: String, input: [UInt8] = [], limit: Int = 64 * 1024,
                                     options: TransportOptions) throws -> [UInt8] {
        try SSHRefAdvertisement.run(verb: verb, url: url, input: input, limit: limit, options: options)
    }

    /// Branch `ref` of the repository at `path` on this machine, read from its ref files without
    /// opening it with libgit2 (a path remote is not trusted; see `SourceObjects`). nil when it
    /// has no such branch.
    public static func localRemoteHead(at path: String, ref: String) throws -> ObjectID? {
        try SourceObjects.reference(ref, gitDirectory: SourceObjects.gitDirectory(of: path))
    }

    /// How many commits `local` has that `upstream` lacks, and the reverse.
    public func aheadBehind(local: ObjectID, upstream: ObjectID) throws -> (ahead: Int, behind: Int) {
        var ahead = 0
        var behind = 0
        var a = local.raw
        var b = upstream.raw
        try check("git_graph_ahead_behind", git_graph_ahead_behind(&ahead, &behind, handle, &a, &b))
        return (ahead, behind)
    }

    /// Sets `HEAD` to point at branch `ref` (e.g. `refs/heads/main`) without touching files.
    public func setHead(_ ref: String) throws {
        try check("git_repository_set_head", git_repository_set_head(handle, ref))
    }
}
