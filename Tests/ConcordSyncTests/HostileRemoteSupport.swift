import ConcordTestSupport
import Foundation
import XCTest

/// Plain git as the attacker: forges commits in a bare repository with exact tree bytes (any
/// name, any mode), as anyone who can push or write the shared folder could.
struct Forger {
    let test: ConcordTestCase
    let bare: URL
    /// The OpenSSH private key its commits are signed with (git's `commit-tree -S`), or nil for
    /// unsigned commits. A member's key gets a forged commit past the signature check to the
    /// rules after it; an unknown key or none is refused by that check.
    var signingKey: URL?

    /// One tree entry as git stores it.
    struct Entry {
        var mode: String
        var name: [UInt8]
        var id: String
        var isTree: Bool { mode == "40000" }
    }

    /// Writes `data` as a blob; returns its id.
    func blob(_ data: Data) throws -> String {
        try run(["hash-object", "-w", "--stdin"], input: data)
    }

    /// The entries of tree `id`.
    func entries(_ id: String) throws -> [Entry] {
        let raw = try runData(["cat-file", "tree", id])
        var out = [Entry]()
        var index = raw.startIndex
        while index < raw.endIndex {
            let space = raw[index...].firstIndex(of: 0x20)!
            let nul = raw[space...].firstIndex(of: 0)!
            let mode = String(decoding: raw[index..<space], as: UTF8.self)
            let name = Array(raw[(space + 1)..<nul])
            let id = raw[(nul + 1)..<(nul + 21)].map { String(format: "%02x", $0) }.joined()
            out.append(Entry(mode: mode, name: name, id: id))
            index = nul + 21
        }
        return out
    }

    /// Writes a tree of exactly `entries` (sorted in git's order unless `sorted` is false).
    func tree(_ entries: [Entry], sorted: Bool = true) throws -> String {
        let key: (Entry) -> [UInt8] = { $0.isTree ? $0.name + [0x2F] : $0.name }
        let ordered = sorted ? entries.sorted { key($0).lexicographicallyPrecedes(key($1)) } : entries
        var raw = Data()
        for entry in ordered {
            raw += Data(entry.mode.utf8) + Data([0x20]) + Data(entry.name) + Data([0])
            var hex = Substring(entry.id)
            while !hex.isEmpty { raw.append(UInt8(hex.prefix(2), radix: 16)!); hex = hex.dropFirst(2) }
        }
        return try run(["hash-object", "-t", "tree", "--literally", "-w", "--stdin"], input: raw)
    }

    /// Tree `base` with `leaf` put at `path` (components; directories on the way are made or
    /// edited), or removed when `leaf` is nil.
    func tree(_ base: String?, putting leaf: Entry?, at path: [[UInt8]]) throws -> String {
        var current = try base.map(entries) ?? []
        let name = path[0]
        let existing = current.firstIndex { $0.name == name }
        if path.count == 1 {
            if let existing { current.remove(at: existing) }
            if var leaf { leaf.name = name; current.append(leaf) }
        } else {
            let sub = existing.flatMap { current[$0].isTree ? current[$0].id : nil }
            if let existing { current.remove(at: existing) }
            current.append(Entry(mode: "40000", name: name, id: try tree(sub, putting: leaf, at: Array(path.dropFirst()))))
        }
        return try tree(current)
    }

    /// A commit on top of the remote's main whose tree is main's with `leaf` at `path` (a
    /// "/"-separated path of raw names), and the remote's main moved to it; returns its id.
    @discardableResult
    func push(_ leaf: Entry?, at path: String, message: String = "forged") throws -> String {
        try push(leaf, atComponents: path.split(separator: "/", omittingEmptySubsequences: false).map { Array($0.utf8) }, message: message)
    }

    @discardableResult
    func push(_ leaf: Entry?, atComponents path: [[UInt8]], message: String = "forged") throws -> String {
        let parent = try run(["rev-parse", "refs/heads/main"])
        let base = try run(["rev-parse", "refs/heads/main^{tree}"])
        return try pushTree(try tree(base, putting: leaf, at: path), parents: [parent], message: message)
    }

    /// A commit of `tree` with `parents`, made the remote's main.
    @discardableResult
    func pushTree(_ tree: String, parents: [String], message: String = "forged") throws -> String {
        let signing = signingKey.map { GitSigning.options(keyFile: $0.path) } ?? []
        let commit = try run(signing + ["commit-tree", tree] + parents.flatMap { ["-p", $0] } + ["-m", message] + (signingKey == nil ? [] : ["-S"]))
        try run(["update-ref", "refs/heads/main", commit])
        return commit
    }

    /// A file entry (mode 100644 unless given) holding `text`.
    func file(_ text: String, mode: String = "100644") throws -> Entry {
        Entry(mode: mode, name: [], id: try blob(Data(text.utf8)))
    }

    @discardableResult
    func run(_ arguments: [String], input: Data? = nil) throws -> String {
        String(decoding: try runData(arguments, input: input), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func runData(_ arguments: [String], input: Data? = nil) throws -> Data {
        let result = try ProcessRunner.run(gitPath, arguments, environment: test.environment(), in: bare, input: input ?? Data())
        guard result.status == 0 else {
            throw CommandFailure(command: "git " + arguments.joined(separator: " "), status: result.status, stderr: result.stderr)
        }
        return result.stdoutData
    }
}

extension ConcordTestCase {
    /// Every path under `directory` (recursively, `.git` included), for "nothing was written here".
    func allPaths(under directory: URL) -> Set<String> {
        var out = Set<String>()
        let enumerator = FileManager.default.enumerator(atPath: directory.path)
        while let relative = enumerator?.nextObject() as? String { out.insert(relative) }
        return out
    }

    /// `git fsck --full` passes in `repository` (a bare remote or a device's profile).
    func assertFsck(_ repository: URL, file: StaticString = #filePath, line: UInt = #line) throws {
        let result = try git(["fsck", "--full", "--no-progress"], in: repository)
        XCTAssertEqual(result.status, 0, "git fsck --full in \(repository.lastPathComponent): \(result.stdout)\(result.stderr)",
                       file: file, line: line)
    }
}
