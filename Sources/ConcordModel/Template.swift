/// A starter set of kinds for `concord init --template`.
public enum Template: String, CaseIterable, Sendable {
    /// No kinds.
    case blank
    /// Augmentative communication: vocabulary, settings, usage logs.
    case aac
    /// Screenwriting: scenes, characters, comments.
    case screenplay
    /// A recipe book: recipes and categories.
    case recipes
    /// Chat sessions: sessions, participants, messages.
    case sessions
    /// A single personal profile.
    case personal

    /// The template's kinds; each kind's directory is its name.
    public var kinds: KindsTable {
        let specs: [(String, MergePolicy, Role)]
        switch self {
        case .blank:
            specs = []
        case .aac:
            specs = [("vocabulary", .lww, .editor), ("settings", .lww, .admin), ("logs", .append, .user)]
        case .screenplay:
            specs = [("scenes", .deleteWins, .editor), ("characters", .lww, .editor), ("comments", .append, .viewer)]
        case .recipes:
            specs = [("recipes", .lww, .editor), ("categories", .lww, .editor)]
        case .sessions:
            specs = [("sessions", .lww, .admin), ("participants", .lww, .user), ("messages", .append, .user)]
        case .personal:
            specs = [("profile", .lww, .admin)]
        }
        return KindsTable(unchecked: specs.map { RecordKind(unchecked: $0.0, directory: $0.0, policy: $0.1, writers: $0.2) })
    }
}
