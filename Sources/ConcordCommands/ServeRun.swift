import ArgumentParser
import ConcordKit
import ConcordServer
import Foundation

/// What `concord serve` does once its arguments are read (by `Serve`, or by `ServeRun.direct` for
/// the fixed forms sshd and git run, once per connection or push).
struct ServeRun {
    enum Mode {
        /// sshd's forced command for the connecting key.
        case forcedCommand(key: String)
        /// sshd's AuthorizedKeysCommand.
        case lookup(user: String, key: String)
        case preReceive
        case postReceive
    }

    let root: String
    let mode: Mode

    /// The forms Concord itself writes, read without ArgumentParser: the forced command of the key
    /// index and authorized_keys lines (`serve --root DIR --key SHA256:…`) and the hooks
    /// (`serve --root DIR --pre-receive` / `--post-receive`). Building ArgumentParser's model of a
    /// command costs a tenth of a connection's `concord serve` (perf: Swift type lookups). Nil for
    /// anything else, which `Serve` parses and reports on as always.
    static func direct(_ arguments: [String]) -> ServeRun? {
        guard arguments.count >= 4, arguments[0] == "serve", arguments[1] == "--root", !arguments[2].hasPrefix("-") else { return nil }
        let root = arguments[2]
        switch Array(arguments.dropFirst(3)) {
        case ["--pre-receive"]: return ServeRun(root: root, mode: .preReceive)
        case ["--post-receive"]: return ServeRun(root: root, mode: .postReceive)
        case let rest where rest.count == 2 && rest[0] == "--key" && Serve.isFingerprint(rest[1]):
            return ServeRun(root: root, mode: .forcedCommand(key: rest[1]))
        default: return nil
        }
    }

    func run() throws {
        let environment = CommandContext.current.environment
        let clock = (try? runEnvironment())?.wallClock ?? ConcordEnvironment.systemClock
        let now = clock()
        let server: ConcordServer
        do { server = try ConcordServer.open(root: URL(fileURLWithPath: root)) } catch {
            refuse(describe(error))
        }
        switch mode {
        case .lookup(let user, let key):
            do {
                if let line = try server.authorizedKeysLine(user: user, key: key, now: now) { print(line) }
            } catch {
                refuse(describe(error))
            }
        case .preReceive, .postReceive:
            let check = PushCheck(server: server, repositoryPath: environment["GIT_DIR"] ?? FileManager.default.currentDirectoryPath)
            let input = String(decoding: readInput(), as: UTF8.self)
            do {
                let updates = try PushCheck.Update.parse(input)
                if case .preReceive = mode {
                    try check.check(updates, key: environment["CONCORD_SERVE_KEY"], quarantine: environment["GIT_QUARANTINE_PATH"], now: now)
                } else {
                    try check.refreshKeyIndex(updates)
                }
            } catch let refusal as ServerRefusal {
                refuse(refusal.message)
            }
        case .forcedCommand(let key):
            do {
                // What to do is the library's decision (`ServePlan`); this carries it out.
                switch try ServePlan.connection(environment["SSH_ORIGINAL_COMMAND"], key: key, server: server, now: now) {
                case .refuse(let refusal):
                    refuse(refusal.message)
                case .notice(let notice):
                    writeOutput(Data(notice))
                case .destroy(let profile):
                    let notice = FileHandle.standardInput.readData(ofLength: DeletionNotice.maxBytes + 1)
                    try server.destroy(profile, key: key, noticeBytes: Array(notice))
                    print("deleted \"\(profile)\"")
                case .wait(let request, let admitted):
                    // Held while this process waits; the kernel lets go if it is killed.
                    let places = try WaitSlots(root: server.root, key: key, member: admitted.member, profile: request.profile)
                    let answer = try server.answerWait(request, key: key, admitted: admitted, clock: clock)
                    writeOutput(Data(answer))
                    withExtendedLifetime(places) {}
                case .exec(let exec):
                    refuse("cannot run \(exec.program): \(execute(exec))")
                }
            } catch let refusal as ServerRefusal {
                refuse(refusal.message)
            } catch {
                refuse(describe(error))
            }
        }
    }

    /// One line on stderr, exit 1: what sshd logs, or what git shows the device.
    private func refuse(_ message: String) -> Never {
        writeError("concord serve: \(message.replacingOccurrences(of: "\n", with: " "))\n")
        Foundation.exit(ExitStatus.failure)
    }

    /// Replaces this process with `exec.program` found in PATH, in the environment it set; returns
    /// only on failure, with why.
    private func execute(_ exec: ServePlan.Exec) -> String {
        for (name, value) in exec.setting { setenv(name, value, 1) }
        for name in exec.removing { unsetenv(name) }
        let pointers = exec.arguments.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        execvp(exec.program, pointers)
        return String(cString: strerror(errno))
    }
}
