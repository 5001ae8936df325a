/// How concurrent changes to records of one kind are merged.
public enum MergePolicy: String, Sendable, Codable, CaseIterable {
    /// Last writer wins, by HLC stamp; one `.json` file per record.
    case lww = "lww"
    /// Append-only JSON Lines logs (`.jsonl`, one file per UTC day); both sides' entries are kept.
    case append = "append"
    /// Like `lww`, but a deletion beats any concurrent edit.
    case deleteWins = "delete-wins"

    /// The extension of this policy's files: `json`, or `jsonl` for `append`.
    public var fileExtension: String { self == .append ? "jsonl" : "json" }
}
