import ConcordGit
import Crypto
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Alice's profile published to a bare repository, Bob's clone of it (synced in-process), and
/// the attacker's model of the remote's current tree.
struct FuzzScene {
    enum Outcome { case accepted, refused(String), hung }

    let test: KitTestCase
    let bareURL: URL
    let bobURL: URL
    let bob: Profile
    let bobIdentity: Identity
    /// Alice's profile, which published the remote.
    let aliceURL: URL
    /// Alice, the profile's Admin: the attacker signs with her device key (a stolen device), so
    /// forged commits get past the signature check to the structural rule.
    let alice: Identity
    /// The remote's main before the case, and its tree as path → (mode, id).
    var base: String
    var files: [[UInt8]: (mode: String, id: String)] = [:]
    /// Loose object files the current case wrote into the remote, and the one it damaged.
    var written: [String] = []
    var damaged: String?
    /// A record file that is valid in this profile, to copy and vary.
    var sampleRecord: [UInt8] = []
    var outsideBaseline: [String: Data] = [:]

    /// The check of the remote's new commits, run twice in one quarantine: with what a path
    /// fetch keeps for it (the changes found while copying, the signatures verified ahead), then
    /// with nothing kept. Nil when the fetch itself refused the remote.
    func checkVerdicts() throws -> (kept: String, unkept: String)? {
        let repository = bob.repository
        let known = try [repository.resolveReference("HEAD"), repository.resolveReference("refs/remotes/origin/main")].compactMap { $0 }
        let quarantine = try Quarantine(for: repository, tips: known)
        let prefetch = SignaturePrefetch(memo: SignatureMemo())
        defer { prefetch.cancel() }
        guard let fetch = try? quarantine.repository.fetchObjectsFromLocalRepository(
            at: bareURL.path, ref: "refs/heads/main", into: "refs/concord/incoming", durable: false, commitCopied: prefetch.add(rawCommit:))
        else { return nil }
        var kept = IncomingCheck(repository: quarantine.repository, profileID: bob.info.id, caches: EngineCaches())
        kept.prefetchedSignatures = prefetch
        kept.fetched = fetch.objects
        let first = IncomingAccessTests.verdict { try kept.verify(tip: fetch.tip, known: known) }
        quarantine.repository.releaseCaches()
        let second = IncomingAccessTests.verdict {
            try IncomingCheck(repository: quarantine.repository, profileID: bob.info.id, caches: EngineCaches()).verify(tip: fetch.tip, known: known)
        }
        return (first, second)
    }

    init(test: KitTestCase) throws {
        self.test = test
        alice = try test.makeIdentity("alice", device: "laptop")
        bobIdentity = try test.makeIdentity("bob", device: "tablet")
        let aliceProfile = try test.makeProfile("alice", identity: alice)
        aliceURL = aliceProfile.root
        try aliceProfile.records.write(as: alice) { try $0.put("vocabulary", "puzzle", data: ["label": .string("puzzle")]) }
        try aliceProfile.records.write(as: alice) { _ = try $0.append("logs", data: ["tapped": .string("puzzle")]) }
        bareURL = test.sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: bareURL)
        try aliceProfile.sync.addRemote("origin", url: bareURL.path)
        _ = try aliceProfile.sync.run(as: alice)
        bobURL = test.sandbox.appendingPathComponent("bob")
        bob = try Sync.clone(url: bareURL.path, into: bobURL, identity: bobIdentity, environment: test.makeEnvironment(bobIdentity))
        base = try test.gitOK(["rev-parse", "refs/heads/main"], in: bareURL)
        try loadFiles()
        let sample = files.keys.first { String(decoding: $0, as: UTF8.self).hasSuffix("/puzzle.json") }!
        sampleRecord = try object(files[sample]!.id)
        outsideBaseline = outsideState()
    }

    // MARK: The attacker

    /// Reads the remote's tree at `base` into `files`.
    mutating func loadFiles() throws {
        files = [:]
        let listing = try test.gitOK(["ls-tree", "-r", "-z", "--full-tree", base], in: bareURL)
        for line in listing.split(separator: "\0") {
            let parts = line.split(separator: "\t", maxSplits: 1)
            let fields = parts[0].split(separator: " ")
            files[Array(parts[1].utf8)] = (String(fields[0]), String(fields[2]))
        }
    }

    /// Forges one commit (1–3 mutations of the remote's tree, or a history or object attack),
    /// moves the remote's main to it, and says what it did.
    mutating func forge(_ random: inout SeededGenerator) throws -> String {
        written = []
        damaged = nil
        var tree = files
        var notes = [String]()
        var parents = [base]
        var damageObject = false
        var disorder = false
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<40:
                let path = randomPath(&random)
                let mode = ["100644", "100644", "100644", "100755", "120000", "160000", "40000", "100664", "644"]
                    .randomElement(using: &random)!
                let id = mode == "160000" ? base : try writeObject("blob", randomContent(for: path, &random))
                tree[path] = (mode, id)
                notes.append("add \(mode) \(String(decoding: path, as: UTF8.self).debugDescription)")
            case 40..<55:
                // Sorted: a dictionary's order changes from run to run, and the cases must replay.
                if let path = tree.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }).randomElement(using: &random) {
                    tree[path] = nil
                    notes.append("remove \(String(decoding: path, as: UTF8.self))")
                }
            case 55..<80:
                if let path = tree.keys.filter({ String(decoding: $0, as: UTF8.self).hasSuffix(".json") || String(decoding: $0, as: UTF8.self).hasSuffix(".jsonl") })
                    .sorted(by: { $0.lexicographicallyPrecedes($1) }).randomElement(using: &random) {
                    tree[path] = ("100644", try writeObject("blob", randomContent(for: path, &random)))
                    notes.append("rewrite \(String(decoding: path, as: UTF8.self))")
                }
            case 80..<87:
                disorder = true
                notes.append("entries out of order")
            case 87..<92:
                parents = Int.random(in: 0..<2, using: &random) == 0 ? [] : [String(repeating: "ab", count: 20)]
                notes.append(parents.isEmpty ? "a second root" : "a missing parent")
            default:
                damageObject = true
                notes.append("damaged object file")
            }
        }
        let root = try writeTree(tree, prefix: [], disorder: disorder, &random)
        let unsigned = Array(("tree \(root)\n" + parents.map { "parent \($0)\n" }.joined()
            + "author mallory <m@x> 1767261600 +0000\ncommitter mallory <m@x> 1767261600 +0000\n\nforged\n").utf8)
        let commit = try writeObject("commit", GitSigning.inserting(signature: SSHSignature.sign(unsigned, with: alice.key), into: unsigned))
        if damageObject, let victim = written.randomElement(using: &random) {
            try damage(victim, &random)
            damaged = victim
        }
        try setMain(commit)
        return notes.joined(separator: ", ")
    }

    func randomPath(_ random: inout SeededGenerator) -> [UInt8] {
        let newID = "new\(random.next() % 50)"
        let shapes: [[String]] = [
            ["vocabulary", RecordPaths.bucket(newID), newID + ".json"],
            ["vocabulary", RecordPaths.buckets.randomElement(using: &random)!, "x.json"],
            ["vocabulary", "x.json"], ["logs", "2026-01-0\(random.next() % 9 + 1).jsonl"], ["logs", "notaday.jsonl"],
            [".concord", "members", "mallory.json"], [".concord", "conflicts", "vocabulary", "a.json"],
            [".concord", "profile.json"], [".concord", "kinds.json"], [".gitattributes"], ["README"],
        ]
        let hostile = ["..", ".", ".git", ".GIT", ".git.", ".git ", "git~1", "a\u{1}b", "a\u{7f}", "", "a\\b",
                       ".concord", "vocabulary", "logs", "settings"]
        var components = shapes.randomElement(using: &random)!.map { Array($0.utf8) }
        if Int.random(in: 0..<3, using: &random) == 0 {
            let index = Int.random(in: 0..<components.count, using: &random)
            components[index] = Int.random(in: 0..<4, using: &random) == 0
                ? (0..<Int.random(in: 1...6, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                : Array(hostile.randomElement(using: &random)!.utf8)
        }
        return Array(components.joined(separator: [0x2F]))
    }

    func randomContent(for path: [UInt8], _ random: inout SeededGenerator) -> [UInt8] {
        let name = String(decoding: path, as: UTF8.self)
        let id = name.hasSuffix(".json") ? String((name.split(separator: "/").last ?? "x").dropLast(5)) : "x"
        let valid = String(decoding: sampleRecord, as: UTF8.self).replacingOccurrences(of: "\"id\": \"puzzle\"", with: "\"id\": \"\(id)\"")
        let choices: [String] = [
            valid, valid, valid,
            valid.replacingOccurrences(of: "\"kind\": \"vocabulary\"", with: "\"kind\": \"settings\""),
            valid.replacingOccurrences(of: "\"puzzle\"", with: "\"a\", \"label\": \"b\""),
            "not json", "[]", "{}", "",
            #"{"at":"2026-01-01T10:00:00.000Z-0000","by":"mallory","data":{},"device":"d","id":"e1"}"# + "\n",
            #"{"at":"9999-12-31T23:59:59.999Z-9999","by":"mallory","data":{},"device":"d","id":"e2"}"# + "\n",
            #"{"createdAt":"x","formatVersion":2,"id":"other","name":"evil"}"#,
            #"{"formatVersion":1,"kinds":[{"directory":"..","name":"evil","policy":"lww","writers":"viewer"}]}"#,
            "* merge=text\n",
        ]
        var bytes = Array(choices.randomElement(using: &random)!.utf8)
        if Int.random(in: 0..<8, using: &random) == 0, !bytes.isEmpty {
            bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
        }
        if Int.random(in: 0..<200, using: &random) == 0 { bytes += [UInt8](repeating: 0x20, count: 1 << 20) }
        return bytes
    }

    /// Writes the trees for `tree` (path → entry) below `prefix`, bottom up; returns the root's id.
    mutating func writeTree(_ tree: [[UInt8]: (mode: String, id: String)], prefix: [UInt8], disorder: Bool,
                            _ random: inout SeededGenerator) throws -> String {
        var children = [[UInt8]: [[UInt8]: (mode: String, id: String)]]()
        var entries = [(mode: String, name: [UInt8], id: String)]()
        for (path, entry) in tree {
            if let slash = path.firstIndex(of: 0x2F) {
                children[Array(path[..<slash]), default: [:]][Array(path[(slash + 1)...])] = entry
            } else {
                entries.append((entry.mode, path, entry.id))
            }
        }
        for (name, subtree) in children {
            entries.removeAll { $0.name == name }
            entries.append(("40000", name, try writeTree(subtree, prefix: prefix + name + [0x2F], disorder: disorder, &random)))
        }
        let key: ((mode: String, name: [UInt8], id: String)) -> [UInt8] = { $0.mode == "40000" ? $0.name + [0x2F] : $0.name }
        entries.sort { key($0).lexicographicallyPrecedes(key($1)) }
        if disorder, prefix.isEmpty || Int.random(in: 0..<3, using: &random) == 0, entries.count > 1 { entries.reverse() }
        var raw = [UInt8]()
        for entry in entries {
            raw += Array(entry.mode.utf8) + [0x20] + entry.name + [0]
            var hex = Substring(entry.id)
            while !hex.isEmpty { raw.append(UInt8(hex.prefix(2), radix: 16) ?? 0); hex = hex.dropFirst(2) }
        }
        return try writeObject("tree", raw)
    }

    /// Writes a loose object into the remote (as git would: zlib over header and content).
    mutating func writeObject(_ type: String, _ content: [UInt8]) throws -> String {
        let full = Array("\(type) \(content.count)\0".utf8) + content
        let id = Insecure.SHA1.hash(data: full).map { String(format: "%02x", $0) }.joined()
        let url = bareURL.appendingPathComponent("objects/\(id.prefix(2))/\(id.dropFirst(2))")
        if !FileManager.default.fileExists(atPath: url.path) {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(zlibStored(full)).write(to: url)
            written.append(url.path)
        }
        return id
    }

    func damage(_ path: String, _ random: inout SeededGenerator) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        switch Int.random(in: 0..<3, using: &random) {
        case 0: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
        case 1: bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
        default:   // a header that understates the size
            let content = bytes.count > 20 ? Array(bytes[7..<(bytes.count - 4)]) : bytes
            bytes = zlibStored(Array("blob 1\0".utf8) + content)
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func setMain(_ id: String) throws {
        try Data((id + "\n").utf8).write(to: bareURL.appendingPathComponent("refs/heads/main"))
    }

    /// After a refusal: the remote as it was (main back, the forged objects gone).
    mutating func restoreRemote() throws {
        try setMain(base)
        for path in written { try? FileManager.default.removeItem(atPath: path) }
        written = []
    }

    /// After an acceptance: the forged commit is the new base, and the damaged object file goes.
    /// Bob's sync fetched only what he lacked, so it accepts a commit whose damaged object he
    /// already had; the remote then gets a sound copy of it back from him (the damage is the
    /// attacker's, and the remote's fsck at the end would find it).
    mutating func adoptRemote() throws {
        if let damaged {
            try? FileManager.default.removeItem(atPath: damaged)
            let components = damaged.split(separator: "/").suffix(2)
            let id = components.joined()
            let lookup = try test.git(["cat-file", "-t", id], in: bobURL)
            let type = lookup.trimmedStdout
            if id.count == 40, lookup.status == 0, !type.isEmpty {
                let bytes = try ProcessRunner.run(gitPath, ["cat-file", type, id], environment: isolatedEnvironment(home: test.sandbox),
                                                  in: bobURL).stdoutData
                try ProcessRunner.runOK(gitPath, ["hash-object", "-w", "-t", type, "--stdin"],
                                        environment: isolatedEnvironment(home: test.sandbox), in: bareURL, input: bytes)
            }
        }
        base = try test.gitOK(["rev-parse", "refs/heads/main"], in: bareURL)
        written = []
        try loadFiles()
    }

    func object(_ id: String) throws -> [UInt8] {
        Array(try test.gitOK(["cat-file", "blob", id], in: bareURL).utf8) + [0x0A]
    }

    // MARK: The device

    func syncWithDeadline(seconds: Double) -> Outcome {
        let done = DispatchSemaphore(value: 0)
        let result = Box()
        result.device = (bob, bobIdentity)
        let thread = Thread {
            do {
                guard let (profile, identity) = result.device else { return }
                _ = try profile.sync.run(as: identity)
                result.outcome = .accepted
            } catch {
                result.outcome = .refused("\(error)")
            }
            done.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
        guard done.wait(timeout: .now() + seconds) == .success else { return .hung }
        return result.outcome ?? .hung
    }

    /// Hands the device to the sync thread and the outcome back (the test waits on a semaphore).
    final class Box: @unchecked Sendable {
        var device: (Profile, Identity)?
        var outcome: Outcome?
    }

    /// Bob's HEAD, tracking ref, index and every file of his working tree.
    func deviceState() throws -> [String: Data] {
        var state = [String: Data]()
        for name in ["HEAD", "refs/heads/main", "refs/remotes/origin/main", "index", "config"] {
            state[".git/" + name] = FileManager.default.contents(atPath: bobURL.appendingPathComponent(".git/" + name).path)
        }
        let enumerator = FileManager.default.enumerator(atPath: bobURL.path)
        while let relative = enumerator?.nextObject() as? String {
            if relative == ".git" { enumerator?.skipDescendants(); continue }
            state[relative] = FileManager.default.contents(atPath: bobURL.appendingPathComponent(relative).path) ?? Data()
        }
        return state
    }

    /// Everything in the sandbox but what a sync may change: Bob's working files (compared by
    /// `deviceState` and `git status`), his object store, refs, logs, index and concord state, the
    /// remote (the attacker's) and the test's own output files. Every other path, at any depth —
    /// Alice's profile, the identities' homes, Bob's `.git` config, hooks and info — with its size
    /// and bytes (up to 64 KiB), so a write anywhere else is seen.
    func outsideState() -> [String: Data] {
        var state = [String: Data]()
        let root = test.sandbox.path + "/"
        let bob = String(bobURL.path.dropFirst(root.count)), bare = String(bareURL.path.dropFirst(root.count))
        let changing = Set(["objects", "refs", "logs", "index", "concord", "ORIG_HEAD", "FETCH_HEAD", "packed-refs", "index.lock"])
        let enumerator = FileManager.default.enumerator(atPath: test.sandbox.path)
        while let relative = enumerator?.nextObject() as? String {
            let parts = relative.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
            if relative == bare || relative.hasPrefix("git-out-") { enumerator?.skipDescendants(); continue }
            if parts[0] == bob {
                if parts.count == 1 { continue }
                guard parts[1] == ".git" else { enumerator?.skipDescendants(); continue }   // a working file
                if parts.count >= 3, changing.contains(parts[2]) { enumerator?.skipDescendants(); continue }
            }
            var info = stat()
            guard lstat(root + relative, &info) == 0 else { continue }
            let kind = info.st_mode & S_IFMT
            if kind == S_IFREG, info.st_size <= 65_536 {
                state[relative] = FileManager.default.contents(atPath: root + relative) ?? Data()
            } else {
                state[relative] = Data("\(kind) \(info.st_size)".utf8)
            }
        }
        return state
    }
}
