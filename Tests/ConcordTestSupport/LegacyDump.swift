/// A dump as an older concord exported it (issue 32, scenario E4): log entries by three authors at
/// distinct times from distinct devices, with no ids, two of them with the same data at different
/// times. Every entry must be imported, each keeping when, by whom and on which
/// device it was first written.
public enum LegacyDump {
    /// The entries' (at, by, device, data as canonical JSON), in the dump's order.
    public static let entries: [(at: String, by: String, device: String, data: String)] = [
        ("2025-03-01T09:00:00.000Z-0000", "therapist", "ipad", #"{"tapped":"more"}"#),
        ("2025-03-01T09:05:30.250Z-0001", "parent", "phone", #"{"tapped":"juice"}"#),
        ("2025-03-02T16:45:00.000Z-0000", "grandma", "tablet", #"{"note":"tired today"}"#),
        // The same data as the first entry, written again later: a second entry, not the first again.
        ("2025-03-03T08:00:00.000Z-0000", "therapist", "ipad", #"{"tapped":"more"}"#),
    ]

    /// The dump's text: the entries under `logs` (kind `logs`, no ids).
    public static let text: String = {
        let logs = entries.map { #"{"at":"\#($0.at)","by":"\#($0.by)","data":\#($0.data),"device":"\#($0.device)","kind":"logs"}"# }
        return #"{"logs":["# + logs.joined(separator: ",") + #"],"records":[]}"#
    }()
}
