/// Issues HLC timestamps from a wall clock.
public struct HLClock: Sendable {
    /// Returns the current Unix time in milliseconds.
    public let wallClock: @Sendable () -> Int64

    /// A clock reading `wallClock` (Unix milliseconds, UTC) for each timestamp.
    public init(wallClock: @escaping @Sendable () -> Int64) {
        self.wallClock = wallClock
    }

    /// A clock that always reads `millis`, for tests and `CONCORD_CLOCK`.
    public static func fixed(_ millis: Int64) -> HLClock {
        HLClock { millis }
    }

    /// The timestamp for a new local event after `last` (the newest stamp seen, local or remote):
    /// `max(last.wallMillis, now)`, with the counter bumped on a tie. If the counter would pass 9999,
    /// the wall time advances by 1 ms instead.
    public func next(after last: HLC?) -> HLC {
        let now = HLC(wallMillis: wallClock()).wallMillis
        guard let last else { return HLC(wallMillis: now, counter: 0) }
        guard last.wallMillis >= now else { return HLC(wallMillis: now, counter: 0) }
        if last.counter >= HLC.maxCounter {
            return HLC(wallMillis: last.wallMillis + 1, counter: 0)
        }
        return HLC(wallMillis: last.wallMillis, counter: last.counter + 1)
    }

    /// Parses an ISO-8601 UTC instant, `2026-01-01T10:00:00Z` or with 1–3 fractional digits
    /// (`2026-01-01T10:00:00.001Z`), to Unix milliseconds; `nil` if it is anything else.
    public static func parseInstant(_ iso: String) -> Int64? {
        var iso = iso
        return iso.withUTF8 { bytes in
            guard let (ms, length) = CivilTime.parseInstant(bytes, exactFraction: false), length == bytes.count
            else { return nil }
            return ms
        }
    }

    /// Formats Unix milliseconds as `2026-01-01T10:00:00.001Z` (clamped to years 0000–9999).
    public static func formatInstant(_ ms: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        CivilTime.appendInstant(HLC(wallMillis: ms).wallMillis, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
