import ConcordKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Synthetic AAC vocabulary: `count` records of kind `vocabulary` whose record files are about
/// 300 bytes each, as a concord dump, plus helpers to copy the bytes concord wrote to the git side.
enum VocabularyData {
    static let kind = "vocabulary"

    /// The id of record `index`: zero-padded so ids sort like their numbers.
    static func id(_ index: Int) -> String {
        let digits = String(index)
        return "w" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    static let categories = ["people", "actions", "feelings", "food", "places", "describing", "questions", "time"]

    /// The data of record `index`; `revision` > 0 gives the changed data of a later put.
    static func data(_ index: Int, revision: Int = 0) -> [String: JSONValue] {
        let word = "word\(index)" + (revision > 0 ? "-r\(revision)" : "")
        return [
            "label": .string(word),
            "spoken": .string("I want \(word)"),
            "symbol": .string("symbols/arasaac/\(index % 9_973).png"),
            "category": .string(categories[index % categories.count]),
            "color": .string(String(format: "#%06x", (index &* 2_654_435_761) & 0xFF_FFFF)),
            "position": .number(String(index % 48)),
        ]
    }

    /// Writes `{"records":[...]}` with records 0..<count to `url`.
    static func writeDump(count: Int, to url: URL) throws {
        let records = (0..<count).map { index -> JSONValue in
            .object(["kind": .string(kind), "id": .string(id(index)), "data": .object(data(index))])
        }
        let bytes = JSONValue.object(["records": .array(records)]).canonicalLine()
        try Data(bytes).write(to: url)
    }

    /// The record files of a kind `directory` of a working tree (in its bucket directories), by
    /// path relative to `directory` (e.g. `3f/w000042.json`).
    static func readFiles(in directory: URL) throws -> [(name: String, bytes: Data)] {
        try fileNames(in: directory).map { ($0, try Data(contentsOf: directory.appendingPathComponent($0))) }
    }

    /// The record file paths of a kind `directory`, relative to it and sorted.
    static func fileNames(in directory: URL) throws -> [String] {
        var names = [String]()
        for bucket in try FileManager.default.contentsOfDirectory(atPath: directory.path) where RecordPaths.isBucket(bucket) {
            names += try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent(bucket).path)
                .filter { $0.hasSuffix(".json") }.map { "\(bucket)/\($0)" }
        }
        return names.sorted()
    }

    /// Writes `files` into `directory`, creating it and the bucket directories.
    static func writeFiles(_ files: [(name: String, bytes: Data)], into directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var made = Set<String>()
        for file in files {
            if let slash = file.name.lastIndex(of: "/"), made.insert(String(file.name[..<slash])).inserted {
                try FileManager.default.createDirectory(at: directory.appendingPathComponent(String(file.name[..<slash])),
                                                        withIntermediateDirectories: true)
            }
            try writeFile(file.bytes, to: directory.appendingPathComponent(file.name).path)
        }
    }

    /// Writes one file with plain open/write/close, as an editor or `cp` would. (Foundation's
    /// `createFile` and atomic `Data.write` fsync every file, which would bill git for a cost
    /// concord does not pay: concord writes working tree files without fsync too.)
    static func writeFile(_ bytes: Data, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BenchError("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let complete = bytes.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 { if errno == EINTR { continue }; return false }
                offset += written
            }
            return true
        }
        guard complete else { throw BenchError("cannot write \(path): \(String(cString: strerror(errno)))") }
    }

    /// A `git fast-import` stream making ONE commit on `main` (on top of its current tip) that adds
    /// `files` under `directory/`.
    static func fastImportStream(_ files: [(name: String, bytes: Data)], directory: String) -> Data {
        var stream = Data()
        func append(_ text: String) { stream.append(contentsOf: Array(text.utf8)) }
        let message = "import"
        append("commit refs/heads/main\n")
        append("author bench <bench@bench> 1767261600 +0000\n")
        append("committer bench <bench@bench> 1767261600 +0000\n")
        append("data \(message.utf8.count)\n\(message)\n")
        append("from refs/heads/main^0\n")
        for file in files {
            append("M 100644 inline \(directory)/\(file.name)\n")
            append("data \(file.bytes.count)\n")
            stream.append(file.bytes)
            append("\n")
        }
        append("done\n")
        return stream
    }
}

/// Sizes and durations as people read them.
enum Format {
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "—" }
        if seconds >= 10 { return String(format: "%.1f s", seconds) }
        if seconds >= 1 { return String(format: "%.2f s", seconds) }
        if seconds >= 0.1 { return String(format: "%.0f ms", seconds * 1000) }
        return String(format: "%.1f ms", seconds * 1000)
    }

    static func bytes(_ count: Int) -> String {
        if count >= 1 << 30 { return String(format: "%.2f GiB", Double(count) / Double(1 << 30)) }
        if count >= 1 << 20 { return String(format: "%.2f MiB", Double(count) / Double(1 << 20)) }
        if count >= 1 << 10 { return String(format: "%.1f KiB", Double(count) / Double(1 << 10)) }
        return "\(count) B"
    }

    static func ratio(_ value: Double) -> String {
        value.isFinite ? String(format: "%.2f", value) : "—"
    }

    static func count(_ value: Int) -> String {
        let digits = String(value)
        var out = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0, (digits.count - offset) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return out
    }

    /// All runs of a sample, for the notes: "1.21 s, 1.25 s, ...".
    static func runs(_ samples: Samples) -> String {
        samples.values.map(duration).joined(separator: ", ")
    }
}
