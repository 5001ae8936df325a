/// A member's role; each role can do everything the ones below it can.
///
/// Ordered `viewer < user < editor < admin`.
public enum Role: String, Sendable, Comparable, CaseIterable, Codable {
    /// May read, and write kinds whose writers are `viewer`.
    case viewer
    /// May write everyday data such as logs and messages.
    case user
    /// May edit content.
    case editor
    /// May change settings, kinds and membership.
    case admin

    /// Parses a role name case-insensitively (`"Admin"` → `.admin`).
    public init?(parsing text: String) {
        self.init(rawValue: text.lowercased())
    }

    var rank: Int {
        switch self {
        case .viewer: 0
        case .user: 1
        case .editor: 2
        case .admin: 3
        }
    }

    /// Ordered `viewer < user < editor < admin`.
    public static func < (lhs: Role, rhs: Role) -> Bool { lhs.rank < rhs.rank }
}
