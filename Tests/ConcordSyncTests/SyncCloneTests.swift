import ConcordKit
import ConcordTestSupport
import Foundation
import XCTest

/// `concord clone`: a new device gets the whole profile byte for byte, ready to sync; failed clones
/// leave nothing behind.
final class SyncCloneTests: ConcordTestCase {
    /// Clone wall times by transport, printed so the run log shows them.
    private func report(_ text: String) {
        print("SyncCloneTests: \(text)")
    }

    func testNewDeviceClonesFiftyRecordsOverAPath() throws { try newDeviceClones(.path) }

    func testNewDeviceClonesFiftyRecordsOverSSH() throws { try newDeviceClones(.ssh) }

    func testCloneErrorsOverAPath() throws { try cloneErrors(.path) }

    func testCloneErrorsOverSSH() throws { try cloneErrors(.ssh) }

    private func newDeviceClones(_ transport: SyncTransport) throws {
        let remote = try makeRemote(transport)
        let laptop = try makeDevice("alice", device: "laptop")
        let tablet = try makeDevice("alice", device: "tablet")
        var records = [(String, String)]()
        for index in 0..<50 {
            records.append((String(format: "vocabulary/word-%02d", index),
                            #"{"label":"word \#(index)","position":\#(index),"row":\#(index / 10),"column":\#(index % 10)}"#))
        }
        records += [("settings/voice", #"{"rate":1.25,"pitch":0.9}"#), ("settings/grid", #"{"rows":5,"columns":10}"#),
                    ("settings/display", #"{"theme":"high-contrast","fontSize":18}"#)]
        let source = try publishProfile(owner: laptop, remote: remote, directory: "laptop",
                                        members: [(tablet, "admin")], records: records)
        XCTAssertEqual(try remoteMain(remote), try revParse("HEAD", in: source), "device A did not publish")

        try allow(tablet, on: remote, trustHost: false)
        let target = sandbox.appendingPathComponent("tablet")
        var arguments = ["clone", remote.url, target.path, "--json"]
        if let server = remote.server { arguments += ["--trust-host", server.hostKeyFingerprint] }
        let started = Date()
        let output = try concordOK(arguments, as: tablet)
        fsckAtEnd.append(target)
        let seconds = Date().timeIntervalSince(started)
        report("cloned 53 records over \(transport.rawValue) in \(String(format: "%.3f", seconds)) s")
        XCTAssertLessThan(seconds, 120, "cloning 53 records took \(seconds) s")
        let summary = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any], output)
        XCTAssertEqual(summary["records"] as? Int, 53)
        XCTAssertEqual(summary["path"] as? String, target.path)

        // Every record, byte for byte as the source device wrote it (`get` prints a record file's bytes),
        // and every other file of the work tree too.
        let listed = try concordOK(["ls"], as: tablet, in: target).split(separator: "\n").map(String.init)
        XCTAssertEqual(listed, records.map(\.0).sorted())
        for (reference, _) in records {
            let parts = reference.split(separator: "/").map(String.init)
            let written = try Data(contentsOf: source.appendingPathComponent(RecordPaths.file(directory: parts[0], id: parts[1])))
            XCTAssertEqual(Data(try concord(["get", reference], as: tablet, in: target).stdout.utf8), written, "\(reference) differs")
        }
        XCTAssertEqual(try concord(["get", "vocabulary/word-07"], as: laptop, in: source).stdout,
                       try concord(["get", "vocabulary/word-07"], as: tablet, in: target).stdout)
        XCTAssertEqual(try workTreeSnapshot(target), try workTreeSnapshot(source), "the clone's work tree differs")

        // Ready to sync: nothing ahead or behind, plain git knows the merge driver, registered in CONCORD_HOME.
        let status = try statusJSON(tablet, in: target)
        XCTAssertEqual(status["ahead"] as? Int, 0)
        XCTAssertEqual(status["behind"] as? Int, 0)
        XCTAssertEqual(status["url"] as? String, remote.url)
        XCTAssertNotNil(status["lastSync"] as? String, "a clone counts as a sync")
        let driver = try gitOK(["config", "merge.concord.driver"], in: target)
        XCTAssertTrue(driver.contains("merge-driver"), "merge.concord.driver is \(driver)")
        let registry = try String(contentsOf: tablet.home.appendingPathComponent("profiles.json"), encoding: .utf8)
        XCTAssertTrue(registry.contains(target.path), "profiles.json: \(registry)")
        let synced = try syncJSON(tablet, in: target)
        XCTAssertFalse(synced.movedAnything, "a fresh clone had something to sync")
    }

    private func cloneErrors(_ transport: SyncTransport) throws {
        let phone = try makeDevice("bob", device: "phone")
        let empty = try makeRemote(transport, name: "empty.git")
        try allow(phone, on: empty, trustHost: true)

        // An empty bare repository holds no profile: exit 1, no directory.
        let fromEmpty = sandbox.appendingPathComponent("from-empty")
        assertOneLineRefusal(try concord(["clone", empty.url, fromEmpty.path], as: phone),
                             mentions: ["holds no profile yet"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: fromEmpty.path), "a failed clone left \(fromEmpty.path)")

        // Into a directory that already has files: refused before anything is fetched, the files stay.
        let laptop = try makeDevice("alice", device: "laptop")
        let remote = try makeRemote(transport, server: empty.server)
        _ = try publishProfile(owner: laptop, remote: remote, directory: "laptop")
        let occupied = try makeDirectory("occupied")
        try Data("mine\n".utf8).write(to: occupied.appendingPathComponent("notes.txt"))
        assertOneLineRefusal(try concord(["clone", remote.url, occupied.path], as: phone),
                             mentions: [occupied.path, "empty or new directory"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: occupied.path), ["notes.txt"])
        XCTAssertEqual(try String(contentsOf: occupied.appendingPathComponent("notes.txt"), encoding: .utf8), "mine\n")

        // An existing empty directory is fine, and is left empty (not removed) when the clone fails.
        let emptyDirectory = try makeDirectory("empty-directory")
        assertOneLineRefusal(try concord(["clone", empty.url, emptyDirectory.path], as: phone), mentions: ["holds no profile yet"])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: emptyDirectory.path), [])

        // A missing repository is unreachable (exit 3, docs/sync.md "remote path missing"), over ssh too;
        // so is a stopped server.
        let missing = sandbox.appendingPathComponent("missing.git")
        let missingURL = empty.server?.url(for: missing) ?? missing.path
        let intoMissing = sandbox.appendingPathComponent("from-missing")
        assertOneLineRefusal(try concord(["clone", missingURL, intoMissing.path], as: phone),
                             status: 3, prefix: "concord: offline:", mentions: ["origin", missing.path])
        XCTAssertFalse(FileManager.default.fileExists(atPath: intoMissing.path), "a failed clone left \(intoMissing.path)")
        if let server = empty.server {
            server.stop()
            assertOneLineRefusal(try concord(["clone", remote.url, intoMissing.path], as: phone),
                                 status: 3, prefix: "concord: offline:", mentions: ["origin"])
            XCTAssertFalse(FileManager.default.fileExists(atPath: intoMissing.path), "a failed clone left \(intoMissing.path)")
        }
    }
}
