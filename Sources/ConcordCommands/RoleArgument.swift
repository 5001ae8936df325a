import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

/// Roles are parsed where they are given: `--role editor`, `concord role bob viewer`.
extension Role: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}
