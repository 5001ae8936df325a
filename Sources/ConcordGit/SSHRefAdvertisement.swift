// This file touches the libssh2 C API (and names libgit2's error classes).
internal import CLibgit2
internal import CLibssh2
import Crypto
import Foundation

/// The refs an ssh remote advertises, read over a libssh2 connection that Concord opens, checks
/// and frees itself: `watch`'s cheap "did the remote move?", made every few seconds for weeks.
///
/// Not through libgit2's ssh transport: libgit2 1.5.1 loads `~/.ssh/known_hosts` into a libssh2
/// list on every connection and, when the connection succeeds, never frees it (upstream issue
/// 6598, fixed in 1.7). `SSHKnownHostsFile` cut the list down to Concord's own line for the host,
/// but that line still costs ~230 bytes in four allocations (`libssh2_knownhost_readline`) plus
/// the list itself: heaptrack on a watch polling a local sshd showed them as the only allocations
/// left per poll, and resident memory grew ~0.4 MB per 1,000 polls. Here the host key types
/// Concord trusts for the host are asked for with `libssh2_session_method_pref` (what libgit2
/// read known_hosts for), so nothing is loaded, and every handle is freed when the read ends.
///
/// The same checks and outcomes as a libgit2 transfer (`TransportSession`): the host key goes to
/// `TransportOptions.trustHostKey` before anything is sent (refused: `TransportFailure.untrustedHostKey`),
/// the device key is the only credential (`.authenticationFailed`), a server that speaks but runs
/// no git gives `.refused`, silence past `stallTimeout` gives `.timedOut`, and an unreachable
/// server or missing repository a connectivity `GitError`. The protocol is git's v0 ref
/// advertisement from `git-upload-pack '<path>'`, ended by our flush packet: we want nothing.
enum SSHRefAdvertisement {
    /// The most advertisement bytes read (a profile's remote has a handful of refs).
    static let byteLimit = 1 << 20

    /// The refs (name → id) advertised by the repository at ssh `url`. With `waitingFor`, asks a
    /// concord server's `concord-wait` instead of `git-upload-pack`: it answers once main is no
    /// longer `known` (or after `seconds`), with the same advertisement.
    static func heads(url: String, options: TransportOptions, waitingFor: (known: ObjectID?, seconds: Int)? = nil) throws -> [String: ObjectID] {
        let (connection, path) = try connect(url: url, options: options)
        if let waitingFor {
            let known = waitingFor.known?.hex ?? String(repeating: "0", count: 40)
            return try connection.advertisedRefs(command: "concord-wait '\(path)' \(known) \(waitingFor.seconds)")
        }
        return try connection.advertisedRefs(command: "git-upload-pack '\(path)'")
    }

    /// `concord-wait '<path>' <known> <seconds> pack`: as `heads(waitingFor:)`, and when main moved
    /// from `known`, what the server sent after the advertisement: a pack of the commits and objects
    /// from `known` to main (thin: bases may be objects `known` reaches), empty when it sent none
    /// or more than `packLimit` bytes. Nothing in it is trusted: the caller indexes it (hashing
    /// every object) and checks every commit, as for a fetch.
    static func headsAndPack(url: String, options: TransportOptions, known: ObjectID, seconds: Int,
                             packLimit: Int) throws -> (heads: [String: ObjectID], pack: [UInt8]) {
        let (connection, path) = try connect(url: url, options: options)
        return try connection.advertisedRefsAndPack(command: "concord-wait '\(path)' \(known.hex) \(seconds) pack", packLimit: packLimit)
    }

    /// Runs `<verb> '<path>'` (a concord server's own verb, such as `concord-notice`) on the server
    /// of ssh `url`, writes `input` to it, and returns what it printed, at most `limit` bytes. A
    /// command that exits non-zero throws `.refused` with what it said on stderr.
    static func run(verb: String, url: String, input: [UInt8], limit: Int, options: TransportOptions) throws -> [UInt8] {
        let (connection, path) = try connect(url: url, options: options)
        return try connection.output(command: "\(verb) '\(path)'", input: input, limit: limit)
    }

    /// An authenticated connection to the server of ssh `url`, and the path it names.
    private static func connect(url: String, options: TransportOptions) throws -> (Connection, String) {
        guard let components = URLComponents(string: url), components.scheme == "ssh",
              let host = components.host, !host.isEmpty, !components.path.isEmpty else {
            throw GitError(function: "URLComponents", code: .other(-1), message: "malformed ssh URL \(url)",
                           errorClass: Int32(GIT_ERROR_NET.rawValue))
        }
        // As libgit2 (`gen_proto`): `ssh://host/~user/x` names `~user/x`.
        let path = components.path.hasPrefix("/~") ? String(components.path.dropFirst()) : components.path
        guard !path.contains("'") else {
            throw GitError(function: "git-upload-pack", code: .other(-1), message: "a quote in the remote path \(path)",
                           errorClass: Int32(GIT_ERROR_INVALID.rawValue))
        }
        let user = components.user ?? options.sshUser ?? ProcessInfo.processInfo.userName
        let connection = try Connection(host: host, port: components.port ?? 22, options: options)
        try connection.verifyHostKey(host: host)
        try connection.authenticate(user: user)
        return (connection, path)
    }

    /// The host key types of `lines` (OpenSSH known_hosts lines `host type key`), in order,
    /// without repeats; comments and marked lines (`@revoked`, `@cert-authority`) name none.
    static func hostKeyTypes(_ lines: [String]) -> [String] {
        var types = [String]()
        for line in lines where !line.hasPrefix("@") && !line.hasPrefix("#") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 3 else { continue }
            let type = String(fields[1])
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    /// One TCP socket and the libssh2 session on it; both closed when the connection is released.
    private final class Connection {
        let socket: Int32
        let session: OpaquePointer
        let options: TransportOptions
        /// `stallTimeout` in milliseconds, 0 for none.
        let timeoutMilliseconds: Int
        /// Whether the handshake succeeded (only then is there a session to end politely).
        private var established = false

        init(host: String, port: Int, options: TransportOptions) throws {
            self.options = options
            timeoutMilliseconds = options.stallTimeout.map { max(1, Int($0 * 1000)) } ?? 0
            Libgit2.ensure()  // git_libgit2_init runs libssh2_init
            let socket = concord_tcp_connect(host, Int32(port), Int32(clamping: timeoutMilliseconds), options.cancellation?.wakeDescriptor ?? -1)
            guard socket >= 0 else {
                let code = errno
                if code == ETIMEDOUT, let seconds = options.stallTimeout { throw TransportFailure.timedOut(seconds: Int(seconds.rounded())) }
                throw GitError(function: "connect", code: .other(-1),
                               message: "failed to connect to \(host): \(String(cString: strerror(code)))",
                               errorClass: Int32(GIT_ERROR_OS.rawValue))
            }
            guard let session = libssh2_session_init_ex(nil, nil, nil, nil) else {
                close(socket)
                throw GitError(function: "libssh2_session_init_ex", code: .other(-1), message: "failed to initialize SSH session",
                               errorClass: Int32(GIT_ERROR_NET.rawValue))
            }
            self.socket = socket
            self.session = session
            options.cancellation?.register(socket)
            libssh2_session_set_blocking(session, 1)
            if timeoutMilliseconds > 0 { libssh2_session_set_timeout(session, timeoutMilliseconds) }
            // The key types Concord trusts for this host: the server must show one of them.
            let types = SSHRefAdvertisement.hostKeyTypes(options.knownHostLines)
            if !types.isEmpty {
                let preferred = libssh2_session_method_pref(session, LIBSSH2_METHOD_HOSTKEY, types.joined(separator: ","))
                if preferred != 0 { throw failure("libssh2_session_method_pref", "failed to set hostkey preference", preferred) }
            }
            let shaken = libssh2_session_handshake(session, socket)
            if shaken != 0 { throw failure("libssh2_session_handshake", "failed to start SSH session", shaken) }
            established = true
        }

        deinit {
            if established { _ = libssh2_session_disconnect_ex(session, SSH_DISCONNECT_BY_APPLICATION, "closing transport", "") }
            libssh2_session_free(session)
            options.cancellation?.unregister(socket)
            close(socket)
        }

        /// Passes the server's host key to `trustHostKey`; throws unless it says yes.
        func verifyHostKey(host: String) throws {
            var length = 0
            var type: Int32 = 0
            guard let raw = libssh2_session_hostkey(session, &length, &type), length > 0 else {
                throw failure("libssh2_session_hostkey", "failed to retrieve hostkey", -1)
            }
            let blob = Array(UnsafeRawBufferPointer(start: raw, count: length))
            let key = HostKey(host: host, blob: blob, sha256: Array(SHA256.hash(data: blob)))
            guard options.trustHostKey?(key) == true else { throw TransportFailure.untrustedHostKey(key) }
        }

        /// Logs in as `user` with the device key, the only credential Concord offers.
        func authenticate(user: String) throws {
            let methods = libssh2_userauth_list(session, user, UInt32(user.utf8.count))
            if methods == nil, libssh2_userauth_authenticated(session) != 0 { return }
            if let timedOut = timeout(lastCode) { throw timedOut }
            guard let methods, String(cString: methods).split(separator: ",").contains("publickey") else {
                throw TransportFailure.authenticationFailed("the server offers no public-key authentication")
            }
            guard let key = options.sshPrivateKey else {
                throw TransportFailure.authenticationFailed("no private key to authenticate with")
            }
            let result = libssh2_userauth_publickey_fromfile_ex(session, user, UInt32(user.utf8.count), nil, key, nil)
            guard result != 0 else { return }
            if let timedOut = timeout(result) { throw timedOut }
            throw TransportFailure.authenticationFailed("Failed to authenticate SSH session: \(lastMessage)")
        }

        /// Runs `command` on a new channel and hands the channel to `body`, which sets `answered`
        /// once the server said what it had to; the channel is closed and freed after.
        private func execute<T>(_ command: String, _ body: (_ channel: OpaquePointer, _ answered: inout Bool) throws -> T) throws -> T {
            guard let channel = libssh2_channel_open_ex(session, "session", 7, 2 << 20, 32_768, nil, 0) else {
                throw failure("libssh2_channel_open_ex", "Failed to open SSH channel", lastCode)
            }
            var answered = false
            defer {
                // After a failure (a silent or misbehaving server) nothing more is waited for: a
                // blocking close and disconnect would each wait out the stall timeout again.
                if !answered { libssh2_session_set_blocking(session, 0) }
                _ = libssh2_channel_close(channel)
                _ = libssh2_channel_free(channel)
            }
            let started = libssh2_channel_process_startup(channel, "exec", 4, command, UInt32(command.utf8.count))
            if started != 0 { throw failure("libssh2_channel_process_startup", "SSH could not execute request", started) }
            return try body(channel, &answered)
        }

        /// Runs `command` on one channel and reads git's v0 ref advertisement up to its flush packet.
        func advertisedRefs(command: String) throws -> [String: ObjectID] {
            try execute(command) { channel, answered in
                var reader = PacketReader()
                var buffer = [UInt8](repeating: 0, count: 16_384)
                while true {
                    if let refs = try reader.refs() {
                        // A flush packet: we want nothing, and upload-pack exits.
                        _ = libssh2_channel_write_ex(channel, 0, "0000", 4)
                        _ = libssh2_channel_send_eof(channel)
                        answered = true
                        return refs
                    }
                    let count = buffer.withUnsafeMutableBytes {
                        libssh2_channel_read_ex(channel, 0, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count)
                    }
                    if count < 0 { throw failure("libssh2_channel_read_ex", "SSH could not read data", Int32(count)) }
                    if count == 0 { throw try endedEarly(channel, spoke: !reader.isEmpty) }
                    try reader.append(buffer[0..<count])
                }
            }
        }

        /// Runs `command` (a `concord-wait … pack`) on one channel and reads the ref advertisement,
        /// then everything after its flush packet to the end of the output: the pack (empty when
        /// there is none, or when more than `packLimit` bytes came).
        func advertisedRefsAndPack(command: String, packLimit: Int) throws -> (heads: [String: ObjectID], pack: [UInt8]) {
            try execute(command) { channel, answered in
                var reader = PacketReader()
                var heads: [String: ObjectID]?
                var pack = [UInt8]()
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    if heads == nil, let refs = try reader.refs() {
                        heads = refs
                        pack = Array(reader.afterFlush)
                    }
                    if pack.count > packLimit {
                        // Too much to take this way: the device fetches instead.
                        return (heads ?? [:], [])
                    }
                    let count = buffer.withUnsafeMutableBytes {
                        libssh2_channel_read_ex(channel, 0, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count)
                    }
                    if count < 0 {
                        // The answer came and the pack did not: the device fetches instead.
                        if let heads { return (heads, []) }
                        throw failure("libssh2_channel_read_ex", "SSH could not read data", Int32(count))
                    }
                    if count == 0 {
                        guard let heads else { throw try endedEarly(channel, spoke: !reader.isEmpty) }
                        answered = true
                        return (heads, pack)
                    }
                    if heads == nil { try reader.append(buffer[0..<count]) } else { pack += buffer[0..<count] }
                }
            }
        }

        /// Runs `command` on one channel, sends `input` and end-of-file, and reads its output to the
        /// end (at most `limit` bytes). Exit status 0: the output; otherwise `.refused` with its stderr.
        func output(command: String, input: [UInt8], limit: Int) throws -> [UInt8] {
            guard let channel = libssh2_channel_open_ex(session, "session", 7, 2 << 20, 32_768, nil, 0) else {
                throw failure("libssh2_channel_open_ex", "Failed to open SSH channel", lastCode)
            }
            defer {
                _ = libssh2_channel_close(channel)
                _ = libssh2_channel_free(channel)
            }
            let started = libssh2_channel_process_startup(channel, "exec", 4, command, UInt32(command.utf8.count))
            if started != 0 { throw failure("libssh2_channel_process_startup", "SSH could not execute request", started) }
            var sent = 0
            while sent < input.count {
                let count = input[sent...].withUnsafeBytes {
                    libssh2_channel_write_ex(channel, 0, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count)
                }
                if count < 0 { throw failure("libssh2_channel_write_ex", "SSH could not write data", Int32(count)) }
                sent += count
            }
            _ = libssh2_channel_send_eof(channel)
            func readAll(_ stream: Int32) throws -> [UInt8] {
                var data = [UInt8]()
                var buffer = [UInt8](repeating: 0, count: 16_384)
                while true {
                    let count = buffer.withUnsafeMutableBytes {
                        libssh2_channel_read_ex(channel, stream, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count)
                    }
                    if count < 0 { throw failure("libssh2_channel_read_ex", "SSH could not read data", Int32(count)) }
                    if count == 0 { return data }
                    data += buffer[0..<count]
                    guard data.count <= limit else {
                        throw GitError(function: "libssh2_channel_read_ex", code: .other(-1), message: "the server's answer is over \(limit) bytes",
                                       errorClass: Int32(GIT_ERROR_SSH.rawValue))
                    }
                }
            }
            let output = try readAll(0)
            let errors = try readAll(Int32(SSH_EXTENDED_DATA_STDERR))
            _ = libssh2_channel_close(channel)
            _ = libssh2_channel_wait_closed(channel)
            guard libssh2_channel_get_exit_status(channel) == 0 else {
                let message = String(decoding: errors, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                throw TransportFailure.refused(message.isEmpty ? "'\(command)' failed on the server" : message)
            }
            return output
        }

        /// The error for a server whose output ended before the advertisement did: what it said on
        /// stderr, as libgit2 reports it (a missing repository is an unreachable remote).
        private func endedEarly(_ channel: OpaquePointer, spoke: Bool) throws -> Error {
            var buffer = [UInt8](repeating: 0, count: 4_096)
            let count = spoke ? 0 : buffer.withUnsafeMutableBytes {
                libssh2_channel_read_ex(channel, Int32(SSH_EXTENDED_DATA_STDERR), $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count)
            }
            guard count > 0 else {
                return GitError(function: "libssh2_channel_read_ex", code: .other(-1), message: "early EOF",
                                errorClass: Int32(GIT_ERROR_NET.rawValue))
            }
            let message = String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if message.isEmpty || message.contains("does not appear to be a git repository") {
                return GitError(function: "libssh2_channel_read_ex", code: .other(GIT_EEOF.rawValue), rawCode: GIT_EEOF.rawValue,
                                message: message, errorClass: Int32(GIT_ERROR_SSH.rawValue))
            }
            return TransportFailure.refused(message)
        }

        private var lastCode: Int32 { libssh2_session_last_errno(session) }

        private var lastMessage: String {
            var text: UnsafeMutablePointer<CChar>?
            var length: Int32 = 0
            _ = libssh2_session_last_error(session, &text, &length, 0)
            return text.map { String(cString: $0) } ?? "unknown error"
        }

        private func timeout(_ code: Int32) -> TransportFailure? {
            guard code == LIBSSH2_ERROR_TIMEOUT, let seconds = options.stallTimeout else { return nil }
            return .timedOut(seconds: Int(seconds.rounded()))
        }

        /// A libssh2 failure: a timeout, or an ssh error as libgit2 words it (`ssh_error`).
        private func failure(_ function: String, _ what: String, _ code: Int32) -> Error {
            if let timedOut = timeout(code) { return timedOut }
            return GitError(function: function, code: .other(code), rawCode: code, message: "\(what): \(lastMessage)",
                            errorClass: Int32(GIT_ERROR_SSH.rawValue))
        }
    }

    /// git pkt-lines as they arrive: `XXXX` (hex length including itself) then the payload;
    /// `0000` (flush) ends the advertisement.
    struct PacketReader {
        private var data = [UInt8]()
        private var offset = 0
        private var heads = [String: ObjectID]()

        var isEmpty: Bool { data.isEmpty }

        /// What came after the flush packet, once `refs()` has returned the refs.
        var afterFlush: ArraySlice<UInt8> { data[min(data.count, offset + 4)...] }

        mutating func append(_ bytes: ArraySlice<UInt8>) throws {
            data += bytes
            guard data.count <= SSHRefAdvertisement.byteLimit else { throw malformed("ref advertisement over 1 MiB") }
        }

        /// The refs once the flush packet has arrived; nil while more is to come.
        mutating func refs() throws -> [String: ObjectID]? {
            while data.count - offset >= 4 {
                guard let length = Int(String(decoding: data[offset..<(offset + 4)], as: UTF8.self), radix: 16) else {
                    throw malformed("invalid pkt-line length")
                }
                if length == 0 { return heads }
                guard length > 4 else { throw malformed("unexpected pkt-line \(length)") }
                guard data.count - offset >= length else { return nil }
                try line(data[(offset + 4)..<(offset + length)])
                offset += length
            }
            return nil
        }

        /// `<hex id> SP <ref name>` (the first line adds NUL and the capabilities), or `ERR <message>`.
        private mutating func line(_ payload: ArraySlice<UInt8>) throws {
            var text = String(decoding: payload, as: UTF8.self)
            if text.hasSuffix("\n") { text.removeLast() }
            if text.hasPrefix("ERR ") {
                throw GitError(function: "git-upload-pack", code: .other(-1), message: "remote error: \(text.dropFirst(4))",
                               errorClass: Int32(GIT_ERROR_NET.rawValue))
            }
            if let nul = text.firstIndex(of: "\0") { text = String(text[..<nul]) }
            guard !text.hasPrefix("version "), !text.hasPrefix("shallow ") else { return }
            let parts = text.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let id = ObjectID(hex: String(parts[0])) else { throw malformed("invalid ref line \(text.prefix(100))") }
            let name = String(parts[1])
            // An empty repository advertises its capabilities under the zero id.
            guard name != "capabilities^{}" else { return }
            heads[name] = id
        }

        private func malformed(_ what: String) -> GitError {
            GitError(function: "git-upload-pack", code: .other(-1), message: "invalid ref advertisement: \(what)",
                     errorClass: Int32(GIT_ERROR_NET.rawValue))
        }
    }
}
