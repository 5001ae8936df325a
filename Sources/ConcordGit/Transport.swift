// This file touches the libgit2 C API.
internal import CLibgit2
import Foundation

/// An SSH server's host key, as presented during a connection.
public struct HostKey: Sendable, Hashable {
    /// The host as the URL names it, with `:port` when not 22, e.g. `[127.0.0.1]:2222` style is built by callers.
    public let host: String
    /// The key's wire blob (`string type ‖ key data`), or empty when libssh2 did not give it.
    public let blob: [UInt8]
    /// SHA-256 of the wire blob.
    public let sha256: [UInt8]

    /// `SHA256:` + unpadded base64, exactly as OpenSSH prints fingerprints.
    public var fingerprint: String {
        "SHA256:" + Data(sha256).base64EncodedString().replacingOccurrences(of: "=", with: "")
    }

    /// The key type named inside the blob, e.g. `ssh-ed25519`.
    public var keyType: String {
        guard blob.count >= 4 else { return "unknown" }
        let length = Int(blob[0]) << 24 | Int(blob[1]) << 16 | Int(blob[2]) << 8 | Int(blob[3])
        guard blob.count >= 4 + length else { return "unknown" }
        return String(decoding: blob[4..<(4 + length)], as: UTF8.self)
    }
}

/// How to authenticate and whom to trust for one fetch or push.
public struct TransportOptions {
    /// The OpenSSH private key file for ssh remotes (Concord's identity key).
    public var sshPrivateKey: String?
    /// A second private key, offered when the server refuses the first (while accepting an
    /// invitation, concord offers the invitation's one-time key first and the device key second).
    public var sshSecondKey: String?
    /// The user name when the URL has none.
    public var sshUser: String?
    /// Decides whether to trust an SSH host key; without it every host key is refused.
    public var trustHostKey: ((HostKey) -> Bool)?
    /// Seconds without a byte in either direction after which the connection is cut and the
    /// transfer fails (`TransportFailure.timedOut`); nil waits as long as the server does.
    public var stallTimeout: TimeInterval?
    /// The known_hosts lines (OpenSSH format) of the host being contacted that libgit2 reads in
    /// place of ~/.ssh/known_hosts (see `SSHKnownHostsFile`): they pick the host key type to ask for.
    public var knownHostLines: [String]
    /// Ends the connection from another thread (`TransferCancellation`): the connections Concord
    /// opens itself (`SSHRefAdvertisement`: checks, waits) at once, libgit2's transfers at their next
    /// progress callback. By default the one current on the thread that made these options.
    public var cancellation: TransferCancellation? = TransferCancellation.current

    public init(sshPrivateKey: String? = nil, sshUser: String? = nil, trustHostKey: ((HostKey) -> Bool)? = nil,
                stallTimeout: TimeInterval? = 30, knownHostLines: [String] = []) {
        self.sshPrivateKey = sshPrivateKey
        self.sshUser = sshUser
        self.trustHostKey = trustHostKey
        self.stallTimeout = stallTimeout
        self.knownHostLines = knownHostLines
    }
}

/// Why a transfer failed in a way the caller must explain precisely.
public enum TransportFailure: Error, Sendable {
    /// The server's host key was not trusted.
    case untrustedHostKey(HostKey)
    /// The server refused our key.
    case authenticationFailed(String)
    /// The server accepted the connection and our key, then turned us away before any git
    /// exchange with a message of its own (gitolite's "W … DENIED", a forced command's refusal).
    case refused(String)
    /// Nothing came from the server for this many seconds: the connection was cut.
    case timedOut(seconds: Int)
}

/// What one push did to each ref: nil status means accepted, otherwise the server's reason.
public struct PushOutcome: Sendable {
    public let statuses: [String: String?]
    /// What the server printed for us (hooks' stderr arrives on the sideband), one entry per line.
    public let serverMessages: [String]

    public var rejections: [(ref: String, reason: String)] {
        statuses.compactMap { ref, status in status.map { (ref, $0) } }.sorted { $0.ref < $1.ref }
    }
}

/// State shared with libgit2's C callbacks for the duration of one transfer.
final class TransportSession {
    let options: TransportOptions
    /// Cuts a connection that stalls (`TransportOptions.stallTimeout`); nil for local paths.
    var watchdog: NetworkWatchdog?
    var credentialAttempts = 0
    var rejectedHostKey: HostKey?
    var pushStatuses: [String: String?] = [:]
    var serverText = ""
    /// For a compare-and-swap push (`Repository.PushCondition.remoteAt`): where the remote's ref
    /// must be (`.some(nil)`: absent), and whether it was elsewhere.
    var expectedRemoteTip: ObjectID??
    var remoteTipMoved = false

    /// The server's sideband text as lines, without git's "remote: " noise or progress meters.
    var serverMessages: [String] {
        serverText.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// A session for a transfer with the server at `url` (an ssh URL; others are not watched).
    init(options: TransportOptions, url: String? = nil) {
        self.options = options
        if let url, let components = URLComponents(string: url), components.scheme == "ssh", let host = components.host {
            watchdog = NetworkWatchdog(host: host, port: UInt16(components.port ?? 22), limit: options.stallTimeout)
        }
    }

    /// Fills libgit2 callbacks pointing back at this session; valid while the session lives.
    func install(in callbacks: inout git_remote_callbacks) {
        callbacks.payload = Unmanaged.passUnretained(self).toOpaque()
        callbacks.credentials = { out, _, usernameFromURL, allowedTypes, payload in
            guard let payload else { return -1 }
            let session = Unmanaged<TransportSession>.fromOpaque(payload).takeUnretainedValue()
            return session.credentials(out, usernameFromURL, allowedTypes)
        }
        callbacks.certificate_check = { cert, _, host, payload in
            guard let payload else { return -1 }
            let session = Unmanaged<TransportSession>.fromOpaque(payload).takeUnretainedValue()
            return session.checkCertificate(cert, host)
        }
        callbacks.transfer_progress = { _, payload in
            guard let payload else { return 0 }
            return Unmanaged<TransportSession>.fromOpaque(payload).takeUnretainedValue().progressed()
        }
        callbacks.push_transfer_progress = { _, _, _, payload in
            guard let payload else { return 0 }
            return Unmanaged<TransportSession>.fromOpaque(payload).takeUnretainedValue().progressed()
        }
        callbacks.sideband_progress = { text, length, payload in
            guard let payload, let text, length > 0 else { return 0 }
            let session = Unmanaged<TransportSession>.fromOpaque(payload).takeUnretainedValue()
            let bytes = UnsafeRawBufferPointer(start: text, count: Int(length))
            if session.serverText.utf8.count < 16_384 { session.serverText += String(decoding: bytes, as: UTF8.self) }
            return session.progressed()
        }
        callbacks.push_update_reference = { refname, status, payload in
            guard let payload, let refname else { return 0 }
            let session = Unmanaged<TransportSession>.fromOpaque(payload).takeUnretainedValue()
            session.pushStatuses[String(cString: refname)] = status.map { String(cString: $0) }
            return 0
        }
    }

    /// Something arrived: the watchdog waits again; a cancelled transfer ends here (GIT_EUSER).
    private func progressed() -> Int32 {
        watchdog?.touch()
        return options.cancellation?.isCancelled == true ? GIT_EUSER.rawValue : 0
    }

    private func credentials(_ out: UnsafeMutablePointer<UnsafeMutablePointer<git_credential>?>?,
                             _ usernameFromURL: UnsafePointer<CChar>?, _ allowedTypes: UInt32) -> Int32 {
        watchdog?.touch()
        let user = usernameFromURL.map { String(cString: $0) } ?? options.sshUser ?? ProcessInfo.processInfo.userName
        if allowedTypes & GIT_CREDENTIAL_USERNAME.rawValue != 0 {
            return git_credential_username_new(out, user)
        }
        // libgit2 asks again after every refusal: one attempt per key, then give up.
        let keys = [options.sshPrivateKey, options.sshSecondKey].compactMap { $0 }
        guard allowedTypes & GIT_CREDENTIAL_SSH_KEY.rawValue != 0, credentialAttempts < keys.count else {
            return GIT_EAUTH.rawValue
        }
        let key = keys[credentialAttempts]
        credentialAttempts += 1
        return git_credential_ssh_key_new(out, user, nil, key, nil)
    }

    private func checkCertificate(_ cert: UnsafeMutablePointer<git_cert>?, _ host: UnsafePointer<CChar>?) -> Int32 {
        watchdog?.touch()
        guard let cert, cert.pointee.cert_type == GIT_CERT_HOSTKEY_LIBSSH2 else {
            return GIT_PASSTHROUGH.rawValue  // not ssh (local paths never call this)
        }
        let hostkey = UnsafeRawPointer(cert).assumingMemoryBound(to: git_cert_hostkey.self).pointee
        var blob = [UInt8]()
        if hostkey.type.rawValue & GIT_CERT_SSH_RAW.rawValue != 0, let raw = hostkey.hostkey {
            blob = Array(UnsafeRawBufferPointer(start: raw, count: hostkey.hostkey_len))
        }
        var digest = hostkey.hash_sha256
        let sha256 = withUnsafeBytes(of: &digest) { Array($0) }
        let key = HostKey(host: host.map { String(cString: $0) } ?? "", blob: blob, sha256: sha256)
        if options.trustHostKey?(key) == true { return 0 }
        rejectedHostKey = key
        return GIT_ECERTIFICATE.rawValue
    }

    /// Turns a failed transfer into the most precise error available.
    func failure(_ error: GitError) -> Error {
        if options.cancellation?.isCancelled == true { return TransferCancelled() }
        if let key = rejectedHostKey { return TransportFailure.untrustedHostKey(key) }
        if let watchdog, watchdog.timedOut { return TransportFailure.timedOut(seconds: watchdog.seconds) }
        if error.code == .auth || (credentialAttempts > 0 && error.errorClass == Int32(GIT_ERROR_SSH.rawValue)
                                    && error.message.lowercased().contains("auth")) {
            return TransportFailure.authenticationFailed(error.message)
        }
        // libgit2 reads the server's stderr when its stdout ended before any git data and reports
        // it as an ssh error with GIT_EEOF: the server spoke, so it was reached and said no.
        // A repository missing on the server is reported like a missing path remote (offline).
        if credentialAttempts > 0, error.errorClass == Int32(GIT_ERROR_SSH.rawValue), error.rawCode == GIT_EEOF.rawValue,
           !error.message.isEmpty, !error.message.contains("does not appear to be a git repository") {
            return TransportFailure.refused(error.message)
        }
        return error
    }
}

/// A C array of C strings for libgit2, freed by its owner.
final class StringArray {
    private var pointers: [UnsafeMutablePointer<CChar>?]
    var raw: git_strarray

    init(_ strings: [String]) {
        pointers = strings.map { strdup($0) }
        raw = git_strarray(strings: nil, count: strings.count)
    }

    func withRaw<T>(_ body: (UnsafeMutablePointer<git_strarray>) throws -> T) rethrows -> T {
        try pointers.withUnsafeMutableBufferPointer { buffer in
            raw.strings = buffer.baseAddress
            return try body(&raw)
        }
    }

    deinit {
        pointers.forEach { free($0) }
    }
}
