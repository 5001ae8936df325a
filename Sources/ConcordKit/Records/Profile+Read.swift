import ConcordModel
import Foundation

/// One line of `concord ls`: a live record, or one entry of a log kind.
public struct ListedItem: Sendable, Equatable {
    public let kind: String
    public let id: String
    public var reference: String { "\(kind)/\(id)" }
}

/// A listing and the files that could not be read while making it.
public struct Listing: Sendable {
    public let items: [ListedItem]
    /// One message per unreadable file: the listing skips it and goes on.
    public let warnings: [String]
}

extension Profile {
    /// Parses `kind/id` into a kind of this profile and a valid id.
    public func parseReference(_ text: String) throws -> (RecordKind, RecordID) {
        guard let slash = text.firstIndex(of: "/") else { throw ConcordError.badReference(text) }
        let kind = try kind(named: String(text[..<slash]))
        let id = try Transaction.recordID(String(text[text.index(after: slash)...]))
        return (kind, id)
    }

    /// Reads and decodes the record file at `path` in the working tree; nil if there is none.
    func readRecord(_ path: String) throws -> Record? {
        guard let bytes = try workingFile(path, limit: maxRecordBytes) else { return nil }
        do {
            let record = try Record.decode(bytes)
            guard "\(record.id).json" == (path as NSString).lastPathComponent else {
                throw ConcordError.corruptRecord(path: path, reason: "its id \"\(record.id)\" does not match the file name")
            }
            return record
        } catch let error as ConcordError {
            throw error
        } catch {
            throw ConcordError.corruptRecord(path: path, reason: error.localizedDescription)
        }
    }

    /// The bytes of `path` in the working tree, nil if there is none; a file over `limit` bytes is
    /// refused from its size, unread (a 1 GiB file must not cost 1 GiB to reject).
    func workingFile(_ path: String, limit: Int) throws -> Data? {
        var info = stat()
        guard stat(rootPath + path, &info) == 0 else { return nil }
        guard Int(info.st_size) <= limit else {
            throw ConcordError.corruptRecord(path: path, reason: "it is \(info.st_size) bytes, over the \(limit)-byte limit")
        }
        return FileManager.default.contents(atPath: rootPath + path)
    }

    /// The entries of a log kind from all its day files. With `strict`, an unreadable day file is
    /// an error; otherwise it is skipped and reported as a warning.
    func readLog(_ kind: RecordKind, strict: Bool) throws -> (entries: [LogEntry], warnings: [String]) {
        var entries = [LogEntry]()
        var warnings = [String]()
        for name in fileNames(in: kind.directory, extension: "jsonl") {
            let path = "\(kind.directory)/\(name)"
            do {
                guard let bytes = try workingFile(path, limit: ProfilePathRules.maxLogFileBytes) else { continue }
                entries += try Transaction.parseLog(Array(bytes), path: path)
            } catch {
                if strict { throw error }
                warnings.append("skipped \(path): \(error.localizedDescription)")
            }
        }
        return (entries.sorted(), warnings)
    }

    /// The record files of record kind `kind` in the working tree (every bucket directory), sorted
    /// by file name, i.e. by record id.
    func recordFiles(of kind: RecordKind) -> [String] {
        let buckets = ((try? FileManager.default.contentsOfDirectory(atPath: rootPath + kind.directory)) ?? [])
            .filter { RecordPaths.isBucket($0) }
        var files = [(name: String, path: String)]()
        for bucket in buckets {
            let directory = "\(kind.directory)/\(bucket)"
            files += fileNames(in: directory, extension: "json").map { ($0, "\(directory)/\($0)") }
        }
        return files.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }.map(\.path)
    }

    /// File names with `extension` directly in `directory` of the working tree, sorted.
    func fileNames(in directory: String, extension: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: rootPath + directory)) ?? []
        return names.filter { $0.hasSuffix("." + `extension`) }.sorted()
    }
}
