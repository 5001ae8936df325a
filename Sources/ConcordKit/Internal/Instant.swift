import ConcordModel
import Foundation

extension Date {
    /// The instant an engine's ISO-8601 UTC text names (`2026-12-07T14:30:00.123Z`, as
    /// `HLClock.formatInstant` writes it); nil for nil or text that is not one.
    init?(instant text: String?) {
        guard let text, let milliseconds = HLClock.parseInstant(text) else { return nil }
        self.init(timeIntervalSince1970: TimeInterval(milliseconds) / 1000)
    }
}
