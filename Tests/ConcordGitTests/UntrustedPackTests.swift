import Crypto
import Foundation
import XCTest

@testable import ConcordGit

/// The pack reader for path remotes (`UntrustedPack`), judged by git: every object it reads is
/// the one `git cat-file` prints, it leaves exactly the delta entries to libgit2, a forged index
/// only gets a fetch refused, and a copy that stores the streams it read is a pack git accepts.
final class UntrustedPackTests: GitTestCase {
    /// One line of `git verify-pack -v`: an object, its size (a delta entry's: the delta's), where
    /// its entry starts and its entry's length.
    struct PackedObject {
        let id: ObjectID
        let type: ObjectType
        let size: Int
        let sizeInPack: Int
        let offset: Int
        let isDelta: Bool
    }

    func packedObjects(_ repository: URL) throws -> (pack: String, objects: [PackedObject]) {
        let directory = repository.appendingPathComponent(".git/objects/pack")
        let names = try packFiles(repository)
        XCTAssertEqual(names.count, 1, "one pack")
        let pack = directory.appendingPathComponent(try XCTUnwrap(names.first)).path
        let lines = try gitOK(["verify-pack", "-v", pack], in: repository).split(separator: "\n")
        let objects: [PackedObject] = lines.compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 5 || fields.count == 7, let id = ObjectID(hex: String(fields[0])) else { return nil }
            let type: ObjectType
            switch fields[1] {
            case "commit": type = .commit
            case "tree": type = .tree
            case "blob": type = .blob
            default: return nil
            }
            return PackedObject(id: id, type: type, size: Int(fields[2])!, sizeInPack: Int(fields[3])!,
                                offset: Int(fields[4])!, isDelta: fields.count == 7)
        }
        return (pack, objects)
    }

    /// The length of a pack entry's header (type and size) for an object of `size` bytes.
    func headerLength(_ size: Int) -> Int {
        var length = 1, rest = size >> 4
        while rest > 0 { length += 1; rest >>= 7 }
        return length
    }

    /// Rewrites the pack index at `packPath` so that it says object `id` is at `offset`.
    func pointIndex(of packPath: String, objects: [PackedObject], id: ObjectID, at offset: Int) throws {
        // Version 2 index: header, fan-out, sorted ids, CRCs, then the 4-byte offsets.
        let indexURL = URL(fileURLWithPath: String(packPath.dropLast(5)) + ".idx")
        var index = Array(try Data(contentsOf: indexURL))
        let position = try XCTUnwrap(objects.map(\.id).sorted().firstIndex(of: id))
        let at = 8 + 1024 + objects.count * 24 + position * 4
        index.replaceSubrange(at..<(at + 4), with: [UInt8(offset >> 24 & 0xFF), UInt8(offset >> 16 & 0xFF),
                                                    UInt8(offset >> 8 & 0xFF), UInt8(offset & 0xFF)])
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: indexURL.path)
        try Data(index).write(to: indexURL)
    }

    /// A history of records that change a little each time, packed by git with deltas.
    func makeRepackedRepository(offsetDeltas: Bool = true) throws -> (Repository, URL, ObjectID) {
        let (source, url) = try makeRepository("source")
        var tip: ObjectID?
        for round in 0..<12 {
            var files = [String: String?]()
            for record in 0..<20 {
                files["kind/r\(record).json"] = String(repeating: "line \(record) of a record that changes a little\n", count: 30)
                    + "round \(round)\n"
            }
            tip = try commit(source, files: files, base: try tip.map { try source.commit($0).tree },
                             parents: tip.map { [$0] } ?? [], message: "round \(round)\n")
        }
        let main = try XCTUnwrap(tip)
        try source.updateReference("refs/heads/main", to: main, expected: nil, message: "rounds")
        try gitOK(["-c", "repack.useDeltaBaseOffset=\(offsetDeltas)", "repack", "-adf", "-q"], in: url)
        XCTAssertEqual(try looseObjects(url), [])
        return (source, url, main)
    }

    func testEveryObjectOfAPackGitMadeIsReadAsGitReadsItAndDeltasAreLeftToLibgit2() throws {
        let (_, url, _) = try makeRepackedRepository()
        let (packPath, objects) = try packedObjects(url)
        let pack = UntrustedPack(packPath: packPath, indexPath: String(packPath.dropLast(5)) + ".idx")
        let reader = UntrustedPackReader(pack)
        let source = try SourceObjects(repositoryAt: url.path)
        // Every object's bytes as git prints them, through one `git cat-file --batch`.
        let batch = Array(try git(["cat-file", "--batch"], in: url,
                                  input: Data(objects.map { $0.id.hex + "\n" }.joined().utf8)).stdoutData)
        var expectedBytes = [ObjectID: [UInt8]](), at = 0
        while let newline = batch[at...].firstIndex(of: 0x0A) {
            let header = String(decoding: batch[at..<newline], as: UTF8.self).split(separator: " ")
            let size = try XCTUnwrap(Int(header[2]))
            expectedBytes[try XCTUnwrap(ObjectID(hex: String(header[0])))] = Array(batch[(newline + 1)..<(newline + 1 + size)])
            at = newline + 1 + size + 1
        }
        XCTAssertEqual(expectedBytes.count, objects.count)
        var whole = 0, deltas = 0
        for object in objects {
            XCTAssertEqual(reader.offset(of: object.id), object.offset, "\(object.id)")
            let expected = try XCTUnwrap(expectedBytes[object.id])
            if !object.isDelta { XCTAssertEqual(expected.count, object.size) }   // a delta's size is its delta's
            XCTAssertEqual(try source.object(object.id, type: object.type), expected, "\(object.type.name) \(object.id)")
            let stored = try reader.object(at: object.offset, type: object.type, id: object.id, limit: 1 << 20, withStream: true)
            XCTAssertEqual(stored == nil, object.isDelta, "\(object.id): only deltas are left to libgit2")
            if let stored {
                whole += 1
                XCTAssertEqual(stored.bytes, expected)
                XCTAssertEqual(stored.compressed?.count, object.sizeInPack - headerLength(object.size), "the entry's whole stream")
            } else {
                deltas += 1
            }
        }
        XCTAssertGreaterThan(whole, 20)
        XCTAssertGreaterThan(deltas, 20, "git stored the changed records as deltas")
        // An id the index does not list, and a type the entry does not have.
        XCTAssertNil(reader.offset(of: try XCTUnwrap(ObjectID(hex: String(repeating: "ab", count: 20)))))
        let blob = try XCTUnwrap(objects.first { $0.type == .blob && !$0.isDelta })
        XCTAssertThrowsError(try reader.object(at: blob.offset, type: .tree, id: blob.id, limit: 1 << 20, withStream: false)) { error in
            XCTAssertTrue("\(error)".contains("is not a tree"), "\(error)")
        }
        XCTAssertThrowsError(try reader.object(at: blob.offset, type: .blob, id: blob.id, limit: blob.size - 1, withStream: false)) { error in
            XCTAssertTrue("\(error)".contains("over the"), "\(error)")
        }
    }

    /// A delta entry whose base is not in the pack (its base id damaged), which libgit2 would report
    /// as "not found": the fetch is refused as a damaged remote before libgit2 reads the pack,
    /// never as a remote that is not there (a sync would report that as offline and retry it for ever).
    func testADeltaWhoseBaseIsGoneIsADamagedRemoteNotAMissingOne() throws {
        let (_, url, _) = try makeRepackedRepository(offsetDeltas: false)
        let (packPath, objects) = try packedObjects(url)
        let delta = try XCTUnwrap(objects.first { $0.isDelta && $0.type == .blob })
        // A by-id delta entry: its type-and-size header (of the delta's size), then its base's 20-byte id.
        var pack = Array(try Data(contentsOf: URL(fileURLWithPath: packPath)))
        XCTAssertEqual(pack[delta.offset] >> 4 & 0x7, 7, "a by-id delta")
        var length = 1
        while pack[delta.offset + length - 1] & 0x80 != 0 { length += 1 }
        pack.replaceSubrange((delta.offset + length)..<(delta.offset + length + 20), with: [UInt8](repeating: 0xAB, count: 20))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: packPath)
        try Data(pack).write(to: URL(fileURLWithPath: packPath))

        let (destination, destinationURL) = try makeRepository("destination")
        let error = gitError {
            try destination.fetchFromLocalRepository(at: url.path, ref: "refs/heads/main", into: "refs/remotes/origin/main", intoEmpty: true)
        }
        XCTAssertNotNil(error)
        XCTAssertNotEqual(error?.code, .notFound, "\(String(describing: error))")
        XCTAssertTrue(error?.message.contains("damaged") == true, "\(String(describing: error))")
        // Before libgit2 reads anything, the delta whose base is not in the pack is found and named.
        XCTAssertTrue(error?.message.contains("a delta at \(delta.offset) whose base \(String(repeating: "ab", count: 20)) is not in the pack") == true,
                      "names the delta: \(String(describing: error))")
        XCTAssertNil(try destination.resolveReference("refs/remotes/origin/main"))
        XCTAssertEqual(try packFiles(destinationURL), [])
    }

    /// libgit2 reads copies of a remote's packs, each copied index checked before it does: what
    /// the remote's writer does to its own files afterwards cannot reach libgit2. Here, once
    /// libgit2 has read a delta, two other deltas' index entries are pointed at each other's
    /// entries, in place. (When libgit2 read the remote's own files, it then returned one
    /// object's bytes for the other: a writer could also hand it an index the check never saw.)
    func testLibgit2ReadsCheckedCopiesSoAnIndexChangedLaterIsNotRead() throws {
        let (_, url, _) = try makeRepackedRepository()
        let (packPath, objects) = try packedObjects(url)
        let deltas = objects.filter { $0.isDelta && $0.type == .blob }
        XCTAssertGreaterThanOrEqual(deltas.count, 3)
        let scratch = sandbox.appendingPathComponent("scratch")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        try {
            let source = try SourceObjects(repositoryAt: url.path, scratch: scratch.path)
            XCTAssertEqual(ObjectPack.id(of: try source.object(deltas[0].id, type: .blob), type: .blob), deltas[0].id)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path).count, 1, "one directory of copies")
            // In place (the same file, so a reader that has it open or mapped sees the change).
            let sorted = objects.map(\.id).sorted()
            let indexPath = String(packPath.dropLast(5)) + ".idx"
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: indexPath)
            let descriptor = open(indexPath, O_WRONLY)
            XCTAssertGreaterThanOrEqual(descriptor, 0)
            defer { close(descriptor) }
            for (object, other) in [(deltas[1], deltas[2]), (deltas[2], deltas[1])] {
                let position = try XCTUnwrap(sorted.firstIndex(of: object.id))
                let offset = [UInt8(other.offset >> 24 & 0xFF), UInt8(other.offset >> 16 & 0xFF), UInt8(other.offset >> 8 & 0xFF), UInt8(other.offset & 0xFF)]
                XCTAssertEqual(pwrite(descriptor, offset, 4, off_t(8 + 1024 + objects.count * 24 + position * 4)), 4)
            }
            for object in [deltas[1], deltas[2]] {
                XCTAssertEqual(ObjectPack.id(of: try source.object(object.id, type: .blob), type: .blob), object.id,
                               "libgit2 read the remote's changed index")
            }
        }()
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path), [], "the copies go with the reader")
    }

    /// libgit2 1.5.1 trusts a pack index's order and offsets (16 bytes of garbage among a remote's
    /// ids crashed a clone with SIGSEGV, 1 in ~100 such damages): an index that is not what
    /// `git verify-pack` accepts gets the fetch refused, naming it, before libgit2 reads it.
    func testADamagedIndexIsRefusedBeforeLibgit2ReadsIt() throws {
        let (_, url, _) = try makeRepackedRepository()
        let (packPath, objects) = try packedObjects(url)
        let indexURL = URL(fileURLWithPath: String(packPath.dropLast(5)) + ".idx")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: indexURL.path)
        let pristine = Array(try Data(contentsOf: indexURL))
        let count = objects.count, ids = 8 + 1024, offsets = ids + count * 24
        func word(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        func fanout(_ index: [UInt8], _ bucket: Int) -> UInt32 { index[(8 + bucket * 4)..<(12 + bucket * 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        let growable = try XCTUnwrap((0..<255).first { fanout(pristine, $0) < fanout(pristine, $0 + 1) })
        let damages: [(String, String, ([UInt8]) -> [UInt8])] = [
            ("two ids swapped", "not in order", { index in
                var index = index
                let first = Array(index[ids..<(ids + 20)])
                index.replaceSubrange(ids..<(ids + 20), with: index[(ids + 20)..<(ids + 40)])
                index.replaceSubrange((ids + 20)..<(ids + 40), with: first)
                return index }),
            ("a fan-out count one too high", "fan-out table does not match", { index in
                var index = index
                index.replaceSubrange((8 + growable * 4)..<(12 + growable * 4), with: word(fanout(index, growable) + 1))
                return index }),
            ("an offset past the pack", "outside the pack", { index in
                var index = index
                index.replaceSubrange(offsets..<(offsets + 4), with: word(0x7FFF_FF00))
                return index }),
            ("a large offset with no table", "large-offset table", { index in
                var index = index
                index.replaceSubrange(offsets..<(offsets + 4), with: word(0x8000_0003))
                return index }),
            ("another pack's checksum", "belongs to another pack", { index in
                var index = index
                index[index.count - 40] ^= 0xFF
                return index }),
            ("16 bytes of garbage among the ids", "is damaged", { index in
                var index = index
                for at in (ids + 20 * (count / 2))..<(ids + 20 * (count / 2) + 16) { index[at] = UInt8(truncatingIfNeeded: at &* 37) }
                return index }),
        ]
        for (number, (damage, reason, mutate)) in damages.enumerated() {
            try Data(mutate(pristine)).write(to: indexURL)
            let (destination, destinationURL) = try makeRepository("destination-\(number)")
            let error = gitError {
                try destination.fetchFromLocalRepository(at: url.path, ref: "refs/heads/main", into: "refs/remotes/origin/main", intoEmpty: true)
            }
            XCTAssertTrue(error?.message.contains("pack index \(indexURL.path) is damaged") == true, "\(damage): \(String(describing: error))")
            XCTAssertTrue(error?.message.contains(reason) == true, "\(damage): \(String(describing: error))")
            XCTAssertNil(try destination.resolveReference("refs/remotes/origin/main"), damage)
            XCTAssertEqual(try packFiles(destinationURL), [], damage)
        }
        // The same index undamaged: the fetch takes everything.
        try Data(pristine).write(to: indexURL)
        let (whole, wholeURL) = try makeRepository("whole")
        XCTAssertNotNil(try whole.fetchFromLocalRepository(at: url.path, ref: "refs/heads/main", into: "refs/remotes/origin/main", intoEmpty: true))
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: wholeURL).status, 0)
    }

    /// An index may give an offset through its large-offset table (git does for packs over 2 GiB):
    /// the pack's checksum then follows that table. Such an index, valid to `git verify-pack`,
    /// is read and checked whole (the check once looked for the checksum before the table).
    func testAnIndexWithALargeOffsetTableIsReadWhole() throws {
        let (_, url, tip) = try makeRepackedRepository()
        let (packPath, objects) = try packedObjects(url)
        let indexURL = URL(fileURLWithPath: String(packPath.dropLast(5)) + ".idx")
        var index = Array(try Data(contentsOf: indexURL))
        let sorted = objects.map(\.id).sorted()
        let blob = try XCTUnwrap(objects.first { $0.type == .blob && !$0.isDelta })
        let position = try XCTUnwrap(sorted.firstIndex(of: blob.id))
        let at = 8 + 1024 + objects.count * 24 + position * 4
        index.replaceSubrange(at..<(at + 4), with: [0x80, 0, 0, 0])   // slot 0 of the large-offset table
        let large = (0..<8).map { UInt8(UInt64(blob.offset) >> (56 - 8 * $0) & 0xFF) }
        index.insert(contentsOf: large, at: index.count - 40)
        index.replaceSubrange((index.count - 20)..., with: Array(Insecure.SHA1.hash(data: index.dropLast(20))))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: indexURL.path)
        try Data(index).write(to: indexURL)
        XCTAssertEqual(try git(["verify-pack", packPath], in: url).status, 0, "git takes the index as valid")
        XCTAssertEqual(UntrustedPackReader(UntrustedPack(packPath: packPath, indexPath: indexURL.path)).offset(of: blob.id), blob.offset)

        let (destination, destinationURL) = try makeRepository("destination")
        XCTAssertEqual(try destination.fetchFromLocalRepository(at: url.path, ref: "refs/heads/main", into: "refs/remotes/origin/main",
                                                               intoEmpty: true), tip)
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: destinationURL).status, 0)
    }

    /// The index is the remote's too: pointing one blob's id at another blob's entry, or at a
    /// tree's, gets the fetch refused with one line, and the destination gets nothing.
    func testAnIndexPointingAnIdAtAnotherEntryGetsTheFetchRefused() throws {
        for (target, message) in [(ObjectType.blob, "does not match its content"), (.tree, "is not a blob")] {
            let (source, url) = try makeRepository("source-\(target.name)")
            let tip = try commit(source, files: ["kind/a.json": "the first record\n", "kind/b.json": "{\"quite\": \"another\"}\n"])
            try source.updateReference("refs/heads/main", to: tip, expected: nil, message: "one")
            try gitOK(["repack", "-adf", "-q"], in: url)
            let (packPath, objects) = try packedObjects(url)
            let a = try XCTUnwrap(try source.entry(at: "kind/a.json", inTree: try source.commit(tip).tree)).id
            let other = target == .blob
                ? try XCTUnwrap(try source.entry(at: "kind/b.json", inTree: try source.commit(tip).tree)).id
                : try XCTUnwrap(try source.entry(at: "kind", inTree: try source.commit(tip).tree)).id
            let otherOffset = try XCTUnwrap(objects.first { $0.id == other }?.offset)
            try pointIndex(of: packPath, objects: objects, id: a, at: otherOffset)

            let (destination, destinationURL) = try makeRepository("destination-\(target.name)")
            let error = gitError {
                try destination.fetchFromLocalRepository(at: url.path, ref: "refs/heads/main", into: "refs/remotes/origin/main")
            }
            XCTAssertTrue(error?.message.contains(message) == true, "\(target.name): \(String(describing: error))")
            XCTAssertTrue(error?.message.contains(a.hex) == true, "names the object: \(String(describing: error))")
            XCTAssertNil(try destination.resolveReference("refs/remotes/origin/main"))
            XCTAssertEqual(try packFiles(destinationURL), [])
        }
    }

    /// A copy of many objects from a pack (read on every core, each reader its own) stores each
    /// entry's stream as it was read: here git's level-9 streams, whose lengths this repository's
    /// own compressor would not reproduce. git accepts the result.
    func testACopyStoresTheStreamsItReadAndGitAcceptsThePack() throws {
        let (source, url) = try makeRepository("source")
        var files = [String: String?]()
        for record in 0..<1_200 { files["kind/b\(record % 16)/r\(record).json"] = "{\"label\": \"record \(record)\", \"note\": \"\(String(repeating: "ab", count: record % 40))\"}\n" }
        let tip = try commit(source, files: files)
        try source.updateReference("refs/heads/main", to: tip, expected: nil, message: "many")
        try gitOK(["-c", "pack.compression=9", "repack", "-adf", "-q", "--window=0"], in: url)
        let (_, sourceObjects) = try packedObjects(url)
        XCTAssertFalse(sourceObjects.contains { $0.isDelta })

        let (destination, destinationURL) = try makeRepository("destination")
        XCTAssertEqual(try destination.fetchFromLocalRepository(at: url.path, ref: "refs/heads/main", into: "refs/remotes/origin/main",
                                                               intoEmpty: true), tip)
        XCTAssertEqual(try git(["fsck", "--full", "--strict"], in: destinationURL).status, 0)
        let (_, copied) = try packedObjects(destinationURL)
        let lengths = Dictionary(uniqueKeysWithValues: sourceObjects.map { ($0.id, $0.sizeInPack) })
        let blobs = copied.filter { $0.type == .blob }
        XCTAssertEqual(blobs.count, 1_200)
        for blob in blobs { XCTAssertEqual(blob.sizeInPack, lengths[blob.id], "\(blob.id): stored as read") }
        XCTAssertEqual(try gitOK(["rev-list", "--objects", "refs/remotes/origin/main"], in: destinationURL).split(separator: "\n").sorted(),
                       try gitOK(["rev-list", "--objects", "main"], in: url).split(separator: "\n").sorted())

        // One blob's id pointed at another blob's entry: the copy on every core refuses it all.
        let (packPath, _) = try packedObjects(url)
        let sourceBlobs = sourceObjects.filter { $0.type == .blob }
        try pointIndex(of: packPath, objects: sourceObjects, id: sourceBlobs[700].id, at: sourceBlobs[701].offset)
        let (forgedInto, forgedIntoURL) = try makeRepository("forged-into")
        let error = gitError {
            try forgedInto.fetchFromLocalRepository(at: url.path, ref: "refs/heads/main", into: "refs/remotes/origin/main", intoEmpty: true)
        }
        XCTAssertTrue(error?.message.contains("\(sourceBlobs[700].id) does not match its content") == true, "\(String(describing: error))")
        XCTAssertNil(try forgedInto.resolveReference("refs/remotes/origin/main"))
        XCTAssertEqual(try packFiles(forgedIntoURL), [])
    }
}
