#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the index cannot answer (missing, unreadable, damaged, newer): one line, for sshd's log.
public struct KeyIndexError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// sshd's question, "may this key log in as this user, and with which authorized_keys line?",
/// answered from `keys.index` alone: what `concord-lookup` and `concord serve --lookup` both run.
public enum KeyIndexLookup {
    /// `<root>/keys.index`.
    public static func path(root: String) -> String { root.hasSuffix("/") ? root + "keys.index" : root + "/keys.index" }

    /// The authorized_keys line for the key whose base64 blob is `key` (sshd's `%k`) logging in as
    /// `user` at `now` (Unix milliseconds), or nil when this index lets in no such key or user.
    ///
    /// The key is found by its base64, the last field of its lines, so the lookup needs no SHA-256:
    /// each line carries the fingerprint the forced command names. The search is the C library's
    /// `strstr`, not a loop over every byte in Swift: a 10,000-key index is ~1.4 MB, and sshd waits
    /// for this on every connection.
    public static func answer(indexAt path: String, user: String, key: String, now: Int64) throws(KeyIndexError) -> String? {
        var text = try contents(path)
        let (settings, bodyStart) = try header(of: text, path: path)
        guard user == settings.user, isBase64Blob(key) else { return nil }
        if key == settings.adminBase64 {
            return KeyIndexFormat.authorizedKeysLine(executable: settings.executable, root: settings.root,
                                                     fingerprint: Substring(settings.adminFingerprint), base64: Substring(key))
        }
        text.append(0)
        let needle = " " + key + "\n"
        return try text.withUnsafeBufferPointer { buffer throws(KeyIndexError) -> String? in
            guard let base = buffer.baseAddress else { return nil }
            var from = base + bodyStart
            while let found = strstr(from, needle) {
                var start = UnsafePointer(found)
                while start > base + bodyStart, (start - 1).pointee != 0x0A { start -= 1 }
                let end = UnsafePointer(found) + needle.utf8.count - 1
                let raw = UnsafeRawBufferPointer(start: start, count: start.distance(to: end))
                let lineText = String(decoding: raw, as: UTF8.self)
                guard let line = KeyIndexLine(Substring(lineText)) else {
                    throw KeyIndexError("\(path) is damaged: a line for this key does not have five fields (\(lineText.prefix(80))); "
                                        + "run 'concord server init' again to rewrite it")
                }
                if line.admits(now: now) {
                    return KeyIndexFormat.authorizedKeysLine(executable: settings.executable, root: settings.root,
                                                             fingerprint: line.fingerprint, base64: line.base64)
                }
                from = end
            }
            return nil
        }
    }

    /// The settings in the header of `text` and where the lines after it start; throws for an
    /// index that is not one, is damaged, or has another version.
    public static func header(of text: [CChar], path: String) throws(KeyIndexError) -> (KeyIndexSettings, Int) {
        var lines = [Substring]()
        var start = 0
        while start < text.count, text[start] == 0x23 {   // '#'
            guard let newline = text[start...].firstIndex(of: 0x0A) else { break }
            lines.append(Substring(String(decoding: text[start..<newline].map { UInt8(bitPattern: $0) }, as: UTF8.self)))
            start = newline + 1
        }
        let rerun = "run 'concord server init' again to rewrite it"
        guard let first = lines.first, let version = KeyIndexFormat.version(ofFirstLine: first) else {
            throw KeyIndexError("\(path) is not a concord key index (it does not start with '\(KeyIndexFormat.prefix)N:'): \(rerun)")
        }
        guard version <= KeyIndexFormat.currentVersion else {
            throw KeyIndexError("\(path) is key index version \(version), newer than this concord understands "
                                + "(\(KeyIndexFormat.currentVersion)): upgrade concord and concord-lookup")
        }
        guard version == KeyIndexFormat.currentVersion else {
            throw KeyIndexError("\(path) is key index version \(version), written by an older concord: \(rerun)")
        }
        guard let settings = KeyIndexSettings(headerLines: Array(lines.dropFirst())) else {
            throw KeyIndexError("\(path) is damaged: its header lacks the user, executable, root or admin line: \(rerun)")
        }
        // Written aside and renamed into place, a whole index always ends with a newline.
        guard text.last == 0x0A else { throw KeyIndexError("\(path) is damaged: its last line is cut short: \(rerun)") }
        return (settings, start)
    }

    /// Whether `key` can be a key's base64 blob (and so can be searched for as is).
    static func isBase64Blob(_ key: String) -> Bool {
        !key.isEmpty && key.utf8.count <= 1024 && key.utf8.allSatisfy {
            ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2B || $0 == 0x2F || $0 == 0x3D
        }
    }

    /// The whole file at `path`.
    public static func contents(_ path: String) throws(KeyIndexError) -> [CChar] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw KeyIndexError("cannot read \(path): \(String(cString: strerror(errno))) (is this a concord server directory? "
                                + "'concord server init' writes it)")
        }
        defer { close(descriptor) }
        var info = stat()
        var capacity = (fstat(descriptor, &info) == 0 ? Int(info.st_size) : 0) + 4096
        while true {
            // Read straight into the array's storage, no copy; a file that grew since fstat (not
            // concord's: it renames a whole new index into place) fills the buffer and is read again, larger.
            var failure: Int32 = 0
            let text = [CChar](unsafeUninitializedCapacity: capacity) { buffer, count in
                count = 0
                while count < buffer.count {
                    let got = read(descriptor, buffer.baseAddress! + count, buffer.count - count)
                    if got > 0 { count += got } else if got == 0 || errno != EINTR { failure = got < 0 ? errno : 0; return }
                }
            }
            if failure != 0 { throw KeyIndexError("cannot read \(path): \(String(cString: strerror(failure)))") }
            if text.count < capacity { return text }
            capacity *= 2
            guard lseek(descriptor, 0, SEEK_SET) == 0 else {
                throw KeyIndexError("cannot read \(path): \(String(cString: strerror(errno)))")
            }
        }
    }
}
