import Foundation

/// The file libgit2's ssh transport reads as `~/.ssh/known_hosts`.
///
/// libgit2 1.5.1 loads `$HOME/.ssh/known_hosts` on every ssh connection (to choose which host key
/// type to ask the server for, and to tell the certificate callback whether the key is known) and,
/// on success, never frees what it loaded (upstream issue 6598, fixed in 1.7): the whole parsed
/// file leaked per connection, ~126 KB per `watch` poll with a 200-line ~/.ssh/known_hosts. It has
/// no option for that path (1.5 has no GIT_OPT_SET_HOMEDIR) and reads HOME when it connects, so
/// for the length of each ssh transfer HOME points at a private directory whose
/// `.ssh/known_hosts` holds only the lines of Concord's own known_hosts for the host contacted.
/// The leak shrinks to those lines (none for a host not trusted yet: 32 bytes per connection),
/// and the key type libgit2 asks for is the one Concord trusts. Used for fetch and push; `watch`'s
/// poll does not go through libgit2 at all (`SSHRefAdvertisement`), as a line still costs ~0.3 KB
/// per connection. libgit2's global config path was
/// fixed at initialisation, so `~/.gitconfig` is still read from the real home.
///
/// Caveat for apps embedding ConcordKit: another thread reading HOME during an ssh transfer sees
/// the private directory.
enum SSHKnownHostsFile {
    /// `<tmp>/concord-ssh-XXXXXX`, made on the first ssh transfer of the process and removed at exit.
    private static let directory: String? = {
        var template = Array((FileManager.default.temporaryDirectory.path + "/concord-ssh-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else { return nil }
        let path = String(cString: made)
        guard mkdir(path + "/.ssh", 0o700) == 0 else {
            rmdir(path + "/.ssh")
            rmdir(path)
            return nil
        }
        atexit { SSHKnownHostsFile.removeDirectory() }
        return path
    }()

    /// Runs `body` (one ssh transfer) with `lines` (OpenSSH known_hosts lines) as what libgit2
    /// reads for ~/.ssh/known_hosts. Without the private directory (temporary directory not
    /// writable) libgit2 reads the real file.
    static func with<T>(_ lines: [String], _ body: () throws -> T) rethrows -> T {
        guard let directory else { return try body() }
        let text = lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
        try? Data(text.utf8).write(to: URL(fileURLWithPath: directory + "/.ssh/known_hosts"), options: .atomic)
        let home = getenv("HOME").map { String(cString: $0) }
        setenv("HOME", directory, 1)
        defer { if let home { setenv("HOME", home, 1) } else { unsetenv("HOME") } }
        return try body()
    }

    /// At exit: `directory` was made (this is registered only once it was), so reading it is a load.
    private static func removeDirectory() {
        guard let path = directory else { return }
        unlink(path + "/.ssh/known_hosts")
        rmdir(path + "/.ssh")
        rmdir(path)
    }
}
