import Foundation

/// The git config that makes plain `git merge` / `git pull` run Concord's policies. git never
/// reads driver config from the repository, so every clone gets it written into `.git/config`.
package enum MergeDriverConfig {
    /// The driver's name as `git config merge.concord.name` shows it.
    public static let name = "Concord record merge (per-kind policies)"

    /// `'<executable>' merge-driver %O %A %B %P`: git substitutes and quotes the placeholders
    /// itself, so only the executable path is quoted here.
    public static func command(executable: String) -> String {
        "'\(executable.replacingOccurrences(of: "'", with: "'\\''"))' merge-driver %O %A %B %P"
    }

    /// The executable named in a driver command written by `command(executable:)`.
    public static func executable(inCommand command: String) -> String? {
        guard command.hasPrefix("'"), let end = command.range(of: "' merge-driver") else {
            return command.split(separator: " ").first.map(String.init)
        }
        return String(command[command.index(after: command.startIndex)..<end.lowerBound])
            .replacingOccurrences(of: "'\\''", with: "'")
    }
}
