import ConcordGit
import Foundation
import XCTest

/// A pre-receive hook reads the pushed objects where git keeps them until the hook says yes: a
/// quarantine directory (`GIT_QUARANTINE_PATH`) that libgit2 does not see on its own.
final class ObjectDirectoryTests: GitTestCase {
    func testObjectsInAnotherDirectoryAreReadOnlyOnceItIsAdded() throws {
        let bare = sandbox.appendingPathComponent("remote.git")
        _ = try Repository.create(at: bare.path, bare: true)
        // What receive-pack does: new objects go to a directory of their own inside objects/.
        let quarantine = bare.appendingPathComponent("objects/tmp_objdir-incoming-test")
        try FileManager.default.createDirectory(at: quarantine, withIntermediateDirectories: true)
        let file = sandbox.appendingPathComponent("pushed.txt")
        try Data("pushed\n".utf8).write(to: file)
        let hex = try gitOK(["hash-object", "-w", file.path], in: bare, environment: ["GIT_OBJECT_DIRECTORY": quarantine.path])
        let id = try XCTUnwrap(ObjectID(hex: hex))

        let repository = try Repository.open(bare.path)
        XCTAssertFalse(repository.contains(id), "libgit2 ignores git's quarantine variables")
        try repository.addObjectDirectory(quarantine.path)
        XCTAssertTrue(repository.contains(id))
        XCTAssertEqual(try repository.blob(id), Array("pushed\n".utf8))
    }
}
