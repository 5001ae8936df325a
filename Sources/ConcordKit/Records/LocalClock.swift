import ConcordModel
import Foundation

/// The local clock: the last hybrid logical clock value this device issued or saw for a profile,
/// kept in `.git/concord/clock` so every write is stamped after everything it has seen.
extension Profile {
    private var clockPath: String { repository.gitDirectory + "concord/clock" }

    /// The last HLC this device issued or saw for this profile.
    func lastClock() -> HLC? {
        guard let text = try? String(contentsOfFile: clockPath, encoding: .utf8) else { return nil }
        return HLC(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// How far ahead of this device's wall clock a stamp may be and still move the saved clock.
    /// A stamp further ahead (a device whose clock is wrong, or a forged year-9999 record) would
    /// pin every later local write at that time; instead the clock stays, and the record keeps
    /// its stamp: it wins merges by that stamp, and a local edit of it is stamped just after it
    /// (so the edit wins) without moving the clock for anything else.
    static let maxClockLead: Int64 = 24 * 3_600_000

    /// False for a stamp more than `maxClockLead` ahead of this device's wall clock.
    func clockMayReach(_ stamp: HLC) -> Bool {
        stamp.wallMillis <= environment.wallClock() + Self.maxClockLead
    }

    func saveClock(_ stamp: HLC) throws {
        if let last = lastClock(), last >= stamp { return }
        guard clockMayReach(stamp) else { return }
        try Data((stamp.description + "\n").utf8).write(to: URL(fileURLWithPath: clockPath), options: .atomic)
    }
}
