import ConcordTestSupport
import Foundation
import XCTest

@testable import ConcordEngine
@testable import ConcordKit

/// Issue 42: the user's own plain `git add NOTES.json && git commit` in a loop, in the profile's
/// folder, while concord writes records there (puts, and every fourth write a delete). `git commit` reads HEAD, then takes `index.lock` to
/// read the index, and commits that index on the HEAD it read: had concord moved the branch and
/// only then written the index, such a commit could sit on concord's commit with an index from
/// before it, and delete the record concord had just acknowledged. Concord holds `index.lock` from
/// before it builds on the branch until the index shows its commit (`IndexLock`), so it cannot.
final class GitCommitRaceTests: KitTestCase {
    func testEveryRecordConcordAcknowledgedSurvivesAPlainGitCommitLoopInItsFolder() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["CONCORD_RACE_ROUNDS"] ?? "") ?? 200
        let alice = try makeIdentity()
        let store = try ConcordStore.create(at: sandbox.appendingPathComponent("p"), name: "P", template: .aac, identity: alice,
                                            environment: makeEnvironment(alice))
        let folder = store.directory
        let stop = sandbox.appendingPathComponent("stop").path
        // One background loop of the user's own git, as in the issue: a new NOTES.json each time.
        let script = """
            cd '\(folder.path)' || exit 1
            i=0
            while [ ! -e '\(stop)' ]; do
              i=$((i+1)); printf '{"n":%d}\\n' "$i" > NOTES.json
              git add NOTES.json && git commit -q -m x || true
              echo "round $i" >> '\(sandbox.path)/loop-rounds'
            done
            """
        let loop = try ChildProcess(path: "/bin/sh", arguments: ["-c", script],
                                    environment: isolatedEnvironment(home: sandbox, [
                                        "GIT_AUTHOR_NAME": "Alice", "GIT_AUTHOR_EMAIL": "alice@example.com",
                                        "GIT_COMMITTER_NAME": "Alice", "GIT_COMMITTER_EMAIL": "alice@example.com",
                                    ]),
                                    output: sandbox.appendingPathComponent("loop.log"))
        addTeardownBlock { _ = loop.stop(grace: 5) }

        // Acknowledged: the write succeeded, or failed saying its commit is made and the next
        // command finishes it (what concord did when git held `index.lock` after the branch moved).
        // Every fourth write is the other kind concord makes, a delete (a tombstone over a record
        // written three rounds before): a git commit of a stale index would bring the record back.
        var acknowledged = [String](), succeeded = [String](), refused = [String]()
        var deleted = [String]()
        for round in 0..<rounds {
            let put = round % 4 != 3 || !succeeded.contains("r\(round - 3)")
            let id = put ? "r\(round)" : "r\(round - 3)"
            do {
                if put {
                    try store.write { try $0.put("vocabulary", id, data: ["label": .string(id)]) }
                    acknowledged.append(id)
                    succeeded.append(id)
                } else {
                    try store.write { try $0.delete("vocabulary", id) }
                    deleted.append(id)
                }
            } catch {
                let message = error.localizedDescription
                if message.contains(" is made") {
                    if put { acknowledged.append(id) } else { deleted.append(id) }
                }
                refused.append("\(id)\(put ? "" : " (delete)"): \(message)")
            }
        }
        // The next write finishes any update left unfinished.
        _ = try? store.write { try $0.put("vocabulary", "last", data: ["label": "last"]) }
        FileManager.default.createFile(atPath: stop, contents: nil)
        XCTAssertEqual(loop.wait(), 0, (try? String(contentsOfFile: sandbox.path + "/loop.log", encoding: .utf8)) ?? "")
        let gitRounds = ((try? String(contentsOfFile: sandbox.path + "/loop-rounds", encoding: .utf8)) ?? "").split(separator: "\n").count
        let gitCommits = try gitOK(["log", "--format=%an", "HEAD"], in: folder).split(separator: "\n").filter { $0 == "Alice" }.count

        // Every write concord acknowledged is in HEAD's tree and in the working tree.
        let inHead = Set(try gitOK(["ls-tree", "-r", "--name-only", "HEAD"], in: folder).split(separator: "\n").map(String.init))
        let kind = try store.withProfile { try $0.kind(named: "vocabulary") }
        var lost = [String](), lostSucceeded = 0
        for id in acknowledged {
            let path = kind.recordPath(try RecordID(id))
            if !inHead.contains(path) || !FileManager.default.fileExists(atPath: folder.appendingPathComponent(path).path) {
                lost.append(path + (inHead.contains(path) ? " (not in the working tree)" : " (not in HEAD's tree)"))
                if succeeded.contains(id) { lostSucceeded += 1 }
            }
        }
        XCTAssertEqual(lost, [], "\(lost.count) of \(acknowledged.count) acknowledged writes lost (\(lostSucceeded) of the "
                       + "\(succeeded.count) that succeeded); \(gitCommits) git commits in \(gitRounds) loop rounds")
        // Every delete concord acknowledged is a tombstone in HEAD and in the working tree.
        var undeleted = [String]()
        for id in deleted {
            let path = kind.recordPath(try RecordID(id))
            let inHead = try gitOK(["show", "HEAD:" + path], in: folder)
            let onDisk = (try? Data(contentsOf: folder.appendingPathComponent(path))) ?? Data()
            for (place, bytes) in [("HEAD", Data(inHead.utf8)), ("the working tree", onDisk)] {
                let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
                if object?["deleted"] as? Bool != true { undeleted.append("\(path) (live in \(place))") }
            }
        }
        XCTAssertEqual(undeleted, [], "\(undeleted.count) acknowledged deletes undone, of \(deleted.count)")
        XCTAssertGreaterThan(deleted.count, 0, "no delete went through: the race had no deletes")
        // Most writes go through; the others are refused before anything moved, with the line naming git's lock.
        XCTAssertGreaterThan(succeeded.count + deleted.count, rounds / 2, refused.prefix(5).joined(separator: "\n"))
        for line in refused { XCTAssertTrue(line.contains("another git process holds"), line) }
        XCTAssertGreaterThan(gitCommits, 0, "the git loop never committed: the race was not run")
        print("GitCommitRaceTests: \(succeeded.count) puts and \(deleted.count) deletes of \(rounds) writes went through, \(acknowledged.count) acknowledged, \(lost.count) lost; "
              + "\(gitCommits) git commits in \(gitRounds) loop rounds; refused: \(refused.prefix(3))")
        fsckAtEnd(folder)
    }
}
