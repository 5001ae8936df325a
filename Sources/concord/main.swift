// The `concord` binary: its commands (ConcordCommands) run with this process's environment and streams.
import ConcordCommands
import Foundation

// Everything concord writes is its owner's alone (files 0600, directories 0700, git's objects
// 0400): profiles hold people's records, CONCORD_HOME their keys. The server's commands (`serve`,
// `server`) keep the modes docs/server.md gives.
if !["serve", "server"].contains(CommandLine.arguments.dropFirst().first ?? "") { umask(0o077) }
exit(ConcordCommandLine.run(Array(CommandLine.arguments.dropFirst())))
