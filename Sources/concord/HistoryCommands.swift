import ArgumentParser
import ConcordKit
import Foundation

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import a dump ({\"records\":[...],\"logs\":[...]}) as one commit; importing it again changes nothing.")

    @OptionGroup var profile: ProfileOption
    @Option(help: "The dump file.") var file: String
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        PerformanceTrace.start()
        let profile = try profile.open()
        PerformanceTrace.step("profile opened")
        guard let bytes = FileManager.default.contents(atPath: file) else {
            throw ConcordError.io("cannot read \(file): no such file or not readable")
        }
        PerformanceTrace.step("dump read")
        let dump = try Dump.parse(Array(bytes), source: file)
        PerformanceTrace.step("dump parsed")
        let result = try profile.records.importDump(dump, as: try loadIdentity())
        if json {
            printJSON(.object([
                "commit": result.commit.map { .string($0) } ?? .null,
                "records": .number(String(result.changes.filter { $0.action != .appended }.count)),
                "logEntries": .number(String(result.changes.filter { $0.action == .appended }.count)),
            ]))
        } else if let commit = result.commit {
            print("imported \(result.changes.count) of \(dump.records.count + dump.logs.count) items in commit \(commit.prefix(7))")
        } else {
            print("nothing to import: all \(dump.records.count + dump.logs.count) items are already present")
        }
    }
}

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print all live records and log entries as a dump.")

    @OptionGroup var profile: ProfileOption

    func run() throws {
        FileHandle.standardOutput.write(Data(try profile.open().records.exportDump().canonicalBytes()))
    }
}

struct Log: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the history: who, when, on which device, what, to which records, and whether the signature checks out.")

    @OptionGroup var profile: ProfileOption
    @Option(help: ArgumentHelp("Only commits that changed this record.", valueName: "kind/id")) var record: String?
    @Option(help: "Show at most this many commits.") var limit: Int?
    @Flag(help: "Print the result as JSON.") var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be 1 or more") }
    }

    func run() throws {
        let entries = try profile.open().history.entries(record: record, limit: limit)
        if json {
            printJSON(.array(entries.map { entry in
                .object([
                    "commit": .string(entry.commit), "summary": .string(entry.summary), "member": .string(entry.member),
                    "device": .string(entry.device), "action": .string(entry.action), "time": .string(entry.time),
                    "clock": entry.clock.map { .string($0) } ?? .null,
                    "records": .array(entry.records.map { .string($0) }), "recordCount": .number(String(entry.recordCount)),
                    "parents": .array(entry.parents.map { .string($0) }), "signature": .string(entry.signature.rawValue),
                ])
            }))
            return
        }
        for entry in entries {
            let records = entry.records.isEmpty ? (entry.recordCount > 0 ? "\(entry.recordCount) records" : "") : entry.records.joined(separator: ", ")
            print("\(entry.commit.prefix(7))  \(entry.time)  \(entry.member)@\(entry.device)  \(entry.action)  \(records)  [signature: \(entry.signature.rawValue)]")
        }
    }
}

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show every version of one record: who changed it, when, on which device (the same as log --record).")

    @OptionGroup var profile: ProfileOption
    @Argument(help: "The record, as <kind>/<id>.") var reference: String
    @Flag(help: "Print the result as JSON.") var json = false
    @Flag(help: "Also print each version's content.") var content = false

    func run() throws {
        let profile = try profile.open()
        let entries = try profile.history.entries(record: reference)
        if json {
            printJSON(.array(try entries.map { entry in
                var fields: [String: JSONValue] = [
                    "commit": .string(entry.commit), "member": .string(entry.member), "device": .string(entry.device),
                    "action": .string(entry.action), "time": .string(entry.time), "signature": .string(entry.signature.rawValue),
                ]
                if let bytes = try profile.history.recordVersion(reference, atCommit: entry.commit) {
                    fields["content"] = (try? JSONValue.parse(bytes)) ?? .string(String(decoding: bytes, as: UTF8.self))
                }
                return .object(fields)
            }))
            return
        }
        for entry in entries {
            print("\(entry.commit.prefix(7))  \(entry.time)  \(entry.member)@\(entry.device)  \(entry.action)  [signature: \(entry.signature.rawValue)]")
            if content, let bytes = try profile.history.recordVersion(reference, atCommit: entry.commit) {
                print(String(decoding: bytes, as: UTF8.self).split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            }
        }
    }
}

struct Verify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every commit of the history: signed by an active member, changing only what their role may write.",
        discussion: "Exit 5, naming the first invalid commit, its signer and the rule it breaks, when one fails.")

    @OptionGroup var profile: ProfileOption
    @Flag(help: "Print the result as JSON.") var json = false

    func run() throws {
        let report: VerificationReport
        do {
            report = try profile.open().verification.run()
        } catch let error as ConcordError where json {
            printJSON(.object(["error": .string(describe(error)), "exitCode": .number(String(ExitStatus.code(for: error)))]))
            throw error
        }
        if json {
            printJSON(.object(["verified": .number(String(report.commits)), "head": report.head.map { .string($0) } ?? .null]))
        } else {
            print("\(report.commits) commits verified")
        }
    }
}
