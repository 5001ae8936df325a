import ArgumentParser
import ConcordEngine
import ConcordKit
import enum ConcordGit.PerformanceTrace
import Foundation

/// Prints what a write did: one line per change and the commit, or `unchanged`.
func report<Value>(_ result: WriteResult<Value>, unchanged: String) {
    guard let commit = result.commit else {
        if !unchanged.isEmpty { print(unchanged) }
        return
    }
    for change in result.changes.prefix(20) { print("\(change.reference): \(change.action.rawValue)") }
    if result.changes.count > 20 { print("... and \(result.changes.count - 20) more") }
    print("commit \(commit.prefix(7))")
}
