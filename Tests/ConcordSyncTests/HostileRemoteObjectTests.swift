import ConcordGitFormats
import ConcordTestSupport
import Foundation
import XCTest

/// Hostile remotes, continued: forged clones and damaged or hostile objects and packs (the scene
/// and the checks are HostileRemoteTests').
extension HostileRemoteTests {
    // MARK: Clone

    func testACloneOfAForgedHistoryFailsAndLeavesNothing() throws {
        let scene = try makeScene()
        try scene.forger.push(try scene.forger.file("pwned\n"), at: "../escaped")
        let carol = try makeDevice("carol", device: "phone")
        let target = sandbox.appendingPathComponent("carol")
        let result = try concordWithDeadline(["clone", scene.remote.url, target.path], as: carol, in: sandbox)
        assertOneLineRefusal(result, status: 5, mentions: ["invalid commit", "../escaped"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: target.path), "a failed clone leaves nothing")
        XCTAssertFalse(FileManager.default.fileExists(atPath: sandbox.appendingPathComponent("escaped").path))
    }

    /// A record over the 1 MiB limit is refused from the size its object declares, unread: its
    /// loose object here holds only the first 2,000 of the 2 MiB its header declares, so reading
    /// it whole (as the fetch did before) fails as "damaged" instead. Sync and clone: exit 5,
    /// naming the commit and the path; nothing changes, the failed clone leaves nothing.
    func testAnOversizedRecordIsRefusedFromItsDeclaredSizeUnread() throws {
        let scene = try makeScene()
        let (path, good) = try puzzleRecord(scene)
        let big = Array((String(repeating: " ", count: 2 << 20) + good).utf8)
        let blob = try scene.forger.blob(Data(big))
        let commit = try scene.forger.push(Forger.Entry(mode: "100644", name: [], id: blob), at: path)
        let file = scene.remote.bare.appendingPathComponent("objects/\(blob.prefix(2))/\(blob.dropFirst(2))")
        try FileManager.default.removeItem(at: file)
        try Data(zlibStored(Array("blob \(big.count)\0".utf8) + big.prefix(2_000))).write(to: file)
        fsckAtEnd.removeAll { $0 == scene.remote.bare }   // its object is cut short on purpose

        try assertSyncRefused(scene, commit: commit, mentions: [path, "\(big.count) bytes, over the 1048576-byte limit"])
        let carol = try makeDevice("carol", device: "phone")
        let clone = sandbox.appendingPathComponent("carol")
        let result = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox)
        assertOneLineRefusal(result, status: 5, mentions: ["invalid commit", String(commit.prefix(7)), path, "over the 1048576-byte limit"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "a failed clone leaves nothing")
    }

    /// Deltas libgit2 must never be handed, in a pack of a path remote holding a new record's
    /// blob: a delta whose base is itself (libgit2 1.5.1 spun forever, holding the profile lock),
    /// two deltas each the other's base, and a chain whose middle object declares 100 MiB (libgit2
    /// rebuilt it: 4 GB taken for a 7 MB pack). Sync and clone refuse each with one line, at once.
    func testDeltaCyclesAndBombsInARemotePackAreRefusedWithoutHangingOrRebuilding() throws {
        let scene = try makeScene()
        let (path, good) = try puzzleRecord(scene)
        let record = Array(good.replacingOccurrences(of: "\"puzzle\"\n  }", with: "\"changed\"\n  }").utf8)
        let puzzle = Array(good.utf8)
        let main = try revParse("refs/remotes/origin/main", in: scene.bobProfile)
        let blobHex = try scene.forger.blob(Data(record))
        let blob = try XCTUnwrap(ObjectID(hex: blobHex)), other = ObjectPack.id(of: Array("other".utf8), type: .blob)
        let puzzleID = ObjectPack.id(of: puzzle, type: .blob), middle = ObjectPack.id(of: Array("middle".utf8), type: .blob)
        let insert = HandPack.delta(baseSize: record.count, resultSize: record.count, inserting: Array("x".utf8))
        let cases: [(name: String, entries: [(id: ObjectID, entry: HandPack.Entry)], mention: String)] = [
            ("self", [(blob, .refDelta(base: blob, data: insert))], "leads back to itself"),
            ("pair", [(blob, .refDelta(base: other, data: insert)), (other, .refDelta(base: blob, data: insert))], "leads back to itself"),
            ("bomb", [(puzzleID, .whole(type: 3, bytes: puzzle)),
                      (middle, .refDelta(base: puzzleID, data: HandPack.delta(baseSize: puzzle.count, resultSize: 100 << 20, inserting: [0x20]))),
                      (blob, .refDelta(base: middle, data: HandPack.delta(baseSize: 100 << 20, resultSize: record.count, inserting: [0x20])))],
             "rebuilding 104857600 bytes, over the 67108864-byte limit"),
        ]
        let objects = scene.remote.bare.appendingPathComponent("objects")
        let loose = objects.appendingPathComponent("\(blobHex.prefix(2))/\(blobHex.dropFirst(2))")
        for item in cases {
            try scene.forger.run(["update-ref", "refs/heads/main", main])
            let commit = try scene.forger.push(Forger.Entry(mode: "100644", name: [], id: blobHex), at: path)
            try? FileManager.default.removeItem(at: loose)   // the blob is in the hand-made pack only
            try HandPack.write(item.entries, name: String(repeating: "e", count: 40), into: objects.appendingPathComponent("pack"))
            let before = try untouched(scene)
            let sync = try concordWithDeadline(["sync"], as: scene.bob, in: scene.bobProfile, seconds: 30)
            XCTAssertFalse(sync.timedOut, "\(item.name): sync hung")
            assertOneLineRefusal(sync, mentions: ["pack", item.mention])
            XCTAssertEqual(try untouched(scene), before, "\(item.name): a refused sync changed something")
            let clone = sandbox.appendingPathComponent("carol-\(item.name)")
            let carol = try makeDevice("carol-\(item.name)", device: "phone")
            let cloned = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox, seconds: 30)
            XCTAssertFalse(cloned.timedOut, "\(item.name): clone hung")
            assertOneLineRefusal(cloned, mentions: ["pack", item.mention])
            XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "a failed clone leaves nothing")
            _ = commit
            for suffix in [".pack", ".idx"] {
                try FileManager.default.removeItem(at: objects.appendingPathComponent("pack/pack-\(String(repeating: "e", count: 40))\(suffix)"))
            }
            try Data(zlibStored(Array("blob \(record.count)\0".utf8) + record)).write(to: loose)
        }
        try assertFsck(scene.bobProfile)
    }

    /// A path remote whose record blob was swapped for other content under the same name: a clone
    /// re-hashes every object it copies (it used to link the files), fails with one line and
    /// leaves nothing; a sync of an existing device refuses the same object.
    func testASwappedBlobInAPathRemoteFailsCloneAndSync() throws {
        let scene = try makeScene()
        // The remote's blob file is swapped for another object's bytes on purpose (a hash mismatch).
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        try concordOK(["put", "vocabulary/cat", "--json", #"{"label":"cat"}"#], as: scene.alice, in: scene.aliceProfile)
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let path = "vocabulary/\(try bucket(of: "cat", scene))/cat.json"
        let blob = try gitOK(["rev-parse", "refs/heads/main:\(path)"], in: scene.remote.bare)
        // Every object of the remote loose (packs moved out, then unpacked), then the blob's file
        // holding another blob's bytes.
        let objects = scene.remote.bare.appendingPathComponent("objects")
        let moved = try makeDirectory("moved-packs")
        for name in try FileManager.default.contentsOfDirectory(atPath: objects.appendingPathComponent("pack").path) {
            try FileManager.default.moveItem(at: objects.appendingPathComponent("pack/" + name), to: moved.appendingPathComponent(name))
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: moved.path) where name.hasSuffix(".pack") {
            try ProcessRunner.runOK("/bin/sh", ["-c", "git unpack-objects -q < " + ProcessRunner.shellQuoted(moved.appendingPathComponent(name).path)],
                                  environment: environment(), in: scene.remote.bare)
        }
        let forged = try scene.forger.blob(Data(#"{"forged": true}"#.utf8))
        let target = objects.appendingPathComponent("\(blob.prefix(2))/\(blob.dropFirst(2))")
        try FileManager.default.removeItem(at: target)
        try FileManager.default.copyItem(at: objects.appendingPathComponent("\(forged.prefix(2))/\(forged.dropFirst(2))"), to: target)

        let carol = try makeDevice("carol", device: "phone")
        let clone = sandbox.appendingPathComponent("carol")
        let result = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox)
        assertOneLineRefusal(result, mentions: [blob, "does not match its content"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "a failed clone leaves nothing")
        let before = try untouched(scene)
        let sync = try concordWithDeadline(["sync"], as: scene.bob, in: scene.bobProfile)
        assertOneLineRefusal(sync, mentions: [blob, "does not match its content"])
        XCTAssertEqual(try untouched(scene), before)
    }

    func testOverSSHTheSameCommitIsRefused() throws {
        let scene = try makeScene(.ssh)
        let commit = try scene.forger.push(try scene.forger.file("pwned\n"), at: "../escaped")
        try assertSyncRefused(scene, commit: commit, mentions: ["../escaped"])
    }

    // MARK: B. Objects

    /// A loose object whose header understates its size (libgit2 1.5.1 overflows its heap on it)
    /// and one cut short (libgit2 spins in inflate): each fails the sync with one line, at once.
    func testDamagedLooseObjectsFailTheSyncWithoutCrashOrHang() throws {
        let scene = try makeScene()
        // Loose object files in the remote are damaged on purpose.
        fsckAtEnd.removeAll { $0 == scene.remote.bare }
        let content = Array(#"{"data":{"label":"x"}}"#.utf8)
        let variants: [(name: String, bytes: [UInt8])] = [
            ("understated", zlibStored(Array("blob 1\u{0}".utf8) + content)),
            ("truncated", Array(zlibStored(Array("blob \(content.count)\u{0}".utf8) + content).prefix(12))),
            ("garbage", Array(repeating: 0x41, count: 64)),
        ]
        for variant in variants {
            try scene.forger.run(["update-ref", "refs/heads/main", try revParse("refs/remotes/origin/main", in: scene.bobProfile)])
            let path = "vocabulary/\(try bucket(of: "x-\(variant.name)", scene))/x-\(variant.name).json"
            let entry = try scene.forger.file(#"{"variant":"\#(variant.name)"}"#)
            try scene.forger.push(entry, at: path)
            let file = scene.remote.bare.appendingPathComponent("objects/\(entry.id.prefix(2))/\(entry.id.dropFirst(2))")
            try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
            try Data(variant.bytes).write(to: file)
            let before = try untouched(scene)
            let result = try concordWithDeadline(["sync"], as: scene.bob, in: scene.bobProfile)
            XCTAssertFalse(result.timedOut, "\(variant.name): sync hung")
            assertOneLineRefusal(result, status: 1, mentions: [entry.id])
            XCTAssertEqual(try untouched(scene), before, "\(variant.name): a failed sync changed something")
        }
        try assertFsck(scene.bobProfile)
    }

    /// A path remote's pack files are read by concord's own reader (libgit2 only for deltas):
    /// seeded damage to a pack or its index — a flipped byte, a cut, a run of garbage, an
    /// emptied file — gets each clone refused with one line and nothing left behind, or, where
    /// the damage touched nothing the profile needs, a whole clone git finds complete. Never a
    /// crash or a hang.
    func testDamagedPackFilesGetACloneRefusedOrLeaveItWhole() throws {
        let scene = try makeScene()
        for n in 0..<6 {
            try concordOK(["put", "vocabulary/word\(n)", "--json", #"{"label":"word \#(n)"}"#], as: scene.alice, in: scene.aliceProfile)
        }
        try concordOK(["sync"], as: scene.alice, in: scene.aliceProfile)
        let main = try gitOK(["rev-parse", "refs/heads/main"], in: scene.remote.bare)
        let packDirectory = scene.remote.bare.appendingPathComponent("objects/pack")
        let names = try FileManager.default.contentsOfDirectory(atPath: packDirectory.path).filter { $0.hasSuffix(".pack") || $0.hasSuffix(".idx") }
        XCTAssertFalse(names.isEmpty)
        var pristine = [String: Data]()
        for name in names {
            let path = packDirectory.appendingPathComponent(name).path
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            pristine[name] = try Data(contentsOf: URL(fileURLWithPath: path))
        }
        let carol = try makeDevice("carol", device: "phone")
        var random = SeededGenerator(seed: 0x9ACC)
        var refused = 0, whole = 0
        for number in 0..<150 {
            let name = names.sorted()[Int.random(in: 0..<names.count, using: &random)]
            var bytes = Array(try XCTUnwrap(pristine[name]))
            let at = Int.random(in: 0..<bytes.count, using: &random)
            let mutation: String
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                bytes[at] ^= UInt8.random(in: 1...255, using: &random)
                mutation = "byte \(at) flipped"
            case 1:
                bytes = Array(bytes.prefix(at))
                mutation = "cut at \(at)"
            case 2:
                for index in at..<min(bytes.count, at + 16) { bytes[index] = UInt8.random(in: 0...255, using: &random) }
                mutation = "16 bytes of garbage at \(at)"
            default:
                bytes = []
                mutation = "emptied"
            }
            let context = "case \(number): \(name) \(mutation)"
            try Data(bytes).write(to: packDirectory.appendingPathComponent(name))
            let clone = sandbox.appendingPathComponent("clone-\(number)")
            let result = try concordWithDeadline(["clone", scene.remote.url, clone.path], as: carol, in: sandbox, seconds: 30)
            try Data(try XCTUnwrap(pristine[name])).write(to: packDirectory.appendingPathComponent(name))
            XCTAssertFalse(result.timedOut, "\(context): the clone hung")
            XCTAssertLessThan(result.status, 128, "\(context): the clone crashed: \(result.stderr)")
            if result.status == 0 {
                whole += 1
                XCTAssertEqual(try gitOK(["rev-parse", "HEAD"], in: clone), main, context)
                XCTAssertEqual(try gitOK(["status", "--porcelain"], in: clone), "", context)
                try assertFsck(clone)
                try FileManager.default.removeItem(at: clone)
            } else {
                refused += 1
                assertOneLineRefusal(result, status: result.status, mentions: [])
                XCTAssertFalse(FileManager.default.fileExists(atPath: clone.path), "\(context): a failed clone leaves nothing")
            }
        }
        print("damaged packs: \(refused) clones refused, \(whole) whole")
        XCTAssertGreaterThan(refused, 20, "refused \(refused), whole \(whole)")
        XCTAssertGreaterThan(whole, 0, "refused \(refused), whole \(whole)")
    }
}
