// concord-lookup ROOT USER KEY: sshd's AuthorizedKeysCommand for a concord server
// (`AuthorizedKeysCommand /usr/local/bin/concord-lookup /srv/concord %u %k`). sshd starts it once
// per connection, so it links only the Swift standard library and ConcordKeyIndex (no Foundation,
// no libgit2): ~2 ms to start, where the concord binary takes ~25. It prints the same line as
// `concord serve --lookup` (the same KeyIndexLookup), nothing for a key or user not let in, and one
// line on stderr with exit status 1 when the index cannot answer.
import ConcordKeyIndex
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes `text` whole to file descriptor `descriptor` (stdio's streams are shared mutable state to Swift 6).
func put(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        if written < 0, errno == EINTR { continue }
        guard written > 0 else { return }
        bytes = bytes.dropFirst(written)
    }
}

func fail(_ message: String, status: Int32) -> Never {
    put("concord-lookup: \(message)\n", to: 2)
    exit(status)
}

let arguments = CommandLine.arguments
guard arguments.count == 4 else { fail("usage: concord-lookup ROOT USER KEY (in sshd_config: AuthorizedKeysCommand ... ROOT %u %k)", status: 2) }

/// Now, in Unix milliseconds: `CONCORD_CLOCK` when set (as for every concord command), else the system clock.
func now() -> Int64 {
    if let fixed = getenv("CONCORD_CLOCK").map({ String(cString: $0) }), !fixed.isEmpty {
        guard let millis = IndexInstant.parse(fixed) else {
            fail("CONCORD_CLOCK=\(fixed) is not an instant such as 2026-01-01T10:00:00.001Z: unset it", status: 1)
        }
        return millis
    }
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
}

do {
    if let line = try KeyIndexLookup.answer(indexAt: KeyIndexLookup.path(root: arguments[1]), user: arguments[2], key: arguments[3], now: now()) {
        put(line + "\n", to: 1)
    }
} catch {
    fail(error.description, status: 1)
}
