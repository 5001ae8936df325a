// This file touches the libgit2 C API.
internal import CLibgit2
import Foundation

extension Repository {
    /// The configured remotes, by name, with their URLs.
    public func remotes() throws -> [(name: String, url: String)] {
        var names = git_strarray()
        try check("git_remote_list", git_remote_list(&names, handle))
        defer { git_strarray_dispose(&names) }
        var out = [(name: String, url: String)]()
        for index in 0..<names.count {
            guard let name = names.strings[index].map({ String(cString: $0) }) else { continue }
            out.append((name, try remoteURL(name) ?? ""))
        }
        return out.sorted { $0.name < $1.name }
    }

    /// The URL of remote `name`, or nil if there is no such remote.
    public func remoteURL(_ name: String) throws -> String? {
        var remote: OpaquePointer?
        let result = git_remote_lookup(&remote, handle, name)
        if result == GIT_ENOTFOUND.rawValue || result == GIT_EINVALIDSPEC.rawValue { return nil }
        try check("git_remote_lookup", result)
        defer { git_remote_free(remote) }
        return git_remote_url(remote).map { String(cString: $0) }
    }

    /// Adds remote `name` fetching `refs/heads/*` into `refs/remotes/<name>/*`.
    public func addRemote(_ name: String, url: String) throws {
        var remote: OpaquePointer?
        try check("git_remote_create", git_remote_create(&remote, handle, name, url))
        git_remote_free(remote)
    }

    public func removeRemote(_ name: String) throws {
        try check("git_remote_delete", git_remote_delete(handle, name))
    }

    private func withRemote<T>(_ name: String, _ body: (OpaquePointer) throws -> T) throws -> T {
        var remote: OpaquePointer?
        try check("git_remote_lookup", git_remote_lookup(&remote, handle, name))
        guard let remote else { throw GitError(function: "git_remote_lookup", code: .notFound, message: "no remote \(name)") }
        defer { git_remote_free(remote) }
        return try body(remote)
    }

    /// Fetches `refspecs` from `url` (objects and the listed refs only; nothing is merged). The
    /// remote is anonymous, so no configured refspec moves a remote-tracking ref on the side
    /// (libgit2 updates those "opportunistically" for a named remote): only `refspecs`' refs move.
    public func fetch(url: String, refspecs: [String], options: TransportOptions) throws {
        var remote: OpaquePointer?
        try check("git_remote_create_anonymous", git_remote_create_anonymous(&remote, handle, url))
        defer { git_remote_free(remote) }
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

    /// The remote's branch heads, read without downloading any objects: a cheap "did it move?".
    public func remoteHeads(remote name: String, options: TransportOptions) throws -> [String: ObjectID] {
        try withRemote(name) { remote in
            let session = TransportSession(options: options, url: git_remote_url(remote).map { String(cString: $0) })
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
    public func push(remote name: String, refspec: String, options: TransportOptions) throws -> PushOutcome {
        precondition(!refspec.hasPrefix("+"), "Concord never force-pushes")
        return try withRemote(name) { remote in
            let session = TransportSession(options: options, url: git_remote_url(remote).map { String(cString: $0) })
            var pushOptions = git_push_options()
            try check("git_push_options_init", git_push_options_init(&pushOptions, UInt32(GIT_PUSH_OPTIONS_VERSION)))
            session.install(in: &pushOptions.callbacks)
            let specs = StringArray([refspec])
            let result = withExtendedLifetime(session) {
                specs.withRaw { git_remote_push(remote, $0, &pushOptions) }
            }
            if result < 0 { throw session.failure(GitError.last("git_remote_push", result)) }
            return PushOutcome(statuses: session.pushStatuses, serverMessages: session.serverMessages)
        }
    }

    /// Pushes to a bare repository on a local path WITH compare-and-swap: copies the objects
    /// `tip` needs and the target lacks as one pack (`ObjectTransfer`), then moves `ref` in the target
    /// only if it still points at `expected` (libgit2's own local transport would force it).
    /// Throws `GitError` with code `.modified`/`.exists` when another device pushed first.
    public func pushToLocalRepository(at path: String, ref: String, tip: ObjectID, expected: ObjectID?) throws {
        let target = try Repository.open(path)
        if !target.contains(tip) { _ = try ObjectTransfer.copy(tip, from: self, to: target) }
        try target.updateReference(ref, to: tip, expected: expected, message: "concord: push")
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
