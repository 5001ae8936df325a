import ConcordModel
import ConcordRules
import ConcordTrust
import XCTest

/// The structural rule for profile documents on its own (no git): the bytes a commit writes, and the
/// first parent's profile.json, given as values.
final class DocumentRuleTests: XCTestCase {
    let kinds = Template.aac.kinds

    func info(_ id: String = "p1", format: Int = concordFormatVersion) -> [UInt8] {
        ProfileInfo(id: id, name: "Kid", formatVersion: format, createdAt: "2026-01-01T00:00:00.000Z").json.canonicalBytes()
    }

    func problem(_ file: ProfilePathRules.File, _ bytes: [UInt8], path: String = ProfilePaths.profile, before: [UInt8]? = nil,
                 profileID: String? = "p1") -> String? {
        var id = profileID
        return DocumentRule.problem(file, bytes: bytes, path: path, kinds: kinds, before: before, profileID: &id)
    }

    func testProfileInfoKeepsItsIdAndAFormatThisBuildReadsThatOnlyMovesUp() {
        XCTAssertNil(problem(.profileInfo, info()))
        XCTAssertEqual(problem(.profileInfo, Array("{".utf8)), "unreadable")
        XCTAssertEqual(problem(.profileInfo, info(format: concordFormatVersion + 1)),
                       "it is of data format \(concordFormatVersion + 1), newer than this concord reads (\(concordFormatVersion)): upgrade concord to a build that reads format \(concordFormatVersion + 1), then sync again")
        XCTAssertEqual(problem(.profileInfo, info(format: oldestReadableFormatVersion - 1)),
                       "it is of data format \(oldestReadableFormatVersion - 1), older than any this concord reads (\(oldestReadableFormatVersion))")
        XCTAssertEqual(problem(.profileInfo, info(format: 5), before: info(format: 6)),
                       "it changes the data format from 6 back to 5; a profile's format only moves up")
        XCTAssertNil(problem(.profileInfo, info(format: 6), before: info(format: 5)))
        XCTAssertEqual(problem(.profileInfo, info("p2")), "it names another profile (id p2, this one is p1)")
        // While cloning, the first profile.json sets the id the rest must name.
        var id: String?
        XCTAssertNil(DocumentRule.problem(.profileInfo, bytes: info("p2"), path: ProfilePaths.profile, kinds: kinds, before: nil, profileID: &id))
        XCTAssertEqual(id, "p2")
    }

    func testMemberFilesAndOpenInvitationsNameWhatTheirPathsName() {
        let vera = Member(name: "vera", role: .viewer, status: .active, keys: [], addedBy: "alice", addedAt: "2026-01-01T00:00:00.000Z")
        XCTAssertNil(problem(.member(name: "vera"), vera.json.canonicalBytes(), path: ProfilePaths.member("vera")))
        XCTAssertEqual(problem(.member(name: "bob"), vera.json.canonicalBytes(), path: ProfilePaths.member("bob")), "the file names member vera")
        XCTAssertEqual(problem(.member(name: "vera"), Array("{}".utf8), path: ProfilePaths.member("vera")), "unreadable member file")
        func invitation(_ id: String, _ role: Role) -> [UInt8] {
            OpenInvitation(id: id, role: role, uses: 3, expiresAt: "2026-02-01T00:00:00.000Z", invitedBy: "alice",
                           invitedAt: "2026-01-01T00:00:00.000Z", key: SigningKey.generate().publicKey).json.canonicalBytes()
        }
        let id = "0123456789abcdef"
        XCTAssertNil(problem(.invitation(id: id), invitation(id, .user), path: ProfilePaths.invitation(id)))
        XCTAssertEqual(problem(.invitation(id: id), invitation("fedcba9876543210", .user), path: ProfilePaths.invitation(id)),
                       "the file names open invitation fedcba9876543210")
        XCTAssertEqual(problem(.invitation(id: id), invitation(id, .admin), path: ProfilePaths.invitation(id)), "an open invitation cannot make Admins")
    }

    func testGitattributesAreWhatTheKindsGenerate() {
        XCTAssertNil(problem(.gitattributes, Array(kinds.gitattributes().utf8), path: ProfilePaths.gitattributes))
        XCTAssertEqual(problem(.gitattributes, Array("* text\n".utf8), path: ProfilePaths.gitattributes),
                       "it differs from what .concord/kinds.json generates (it would change how plain git merges)")
    }
}
