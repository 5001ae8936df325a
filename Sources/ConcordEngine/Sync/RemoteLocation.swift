import Foundation

/// Where a remote lives: a bare repository on a path, or one reached over ssh.
package enum RemoteLocation: Sendable, Equatable {
    /// A bare repository in a directory of this machine.
    case path(String)
    /// A bare repository reached over ssh (`ssh://user@host:port/path`).
    case ssh(user: String?, host: String, port: Int, path: String)

    /// Parses a remote URL: an absolute or relative directory, `file://`, `ssh://user@host[:port]/path`
    /// or scp-like `user@host:path`. Relative paths are made absolute from `base`.
    public init(url: String, relativeTo base: String = FileManager.default.currentDirectoryPath) throws {
        if url.hasPrefix("ssh://") {
            guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty,
                  !components.path.isEmpty else {
                throw ConcordError.unsupportedURL(url)
            }
            self = .ssh(user: components.user, host: host, port: components.port ?? 22, path: components.path)
        } else if url.hasPrefix("file://") {
            self = .path(String(url.dropFirst("file://".count)))
        } else if url.contains("://") {
            throw ConcordError.unsupportedURL(url)
        } else if let colon = url.firstIndex(of: ":"), !url[..<colon].contains("/") {
            let hostPart = url[..<colon]
            let user = hostPart.contains("@") ? String(hostPart.split(separator: "@")[0]) : nil
            let host = String(hostPart.split(separator: "@").last ?? "")
            self = .ssh(user: user, host: host, port: 22, path: String(url[url.index(after: colon)...]))
        } else {
            let absolute = url.hasPrefix("/") ? url : (base as NSString).appendingPathComponent(url)
            self = .path((absolute as NSString).standardizingPath)
        }
    }

    /// How OpenSSH names this host in known_hosts: `host`, or `[host]:port` off port 22.
    public var knownHostsName: String? {
        guard case .ssh(_, let host, let port, _) = self else { return nil }
        return port == 22 ? host : "[\(host)]:\(port)"
    }

    /// The URL to hand libgit2 (absolute path for directories).
    public var transportURL: String {
        switch self {
        case .path(let path): return path
        case .ssh(let user, let host, let port, let path):
            return "ssh://" + (user.map { "\($0)@" } ?? "") + host + (port == 22 ? "" : ":\(port)") + path
        }
    }
}
