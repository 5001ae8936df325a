import ConcordTestSupport
import Foundation
import XCTest

/// Every role × every action, both ways a change can be made: through concord on the member's own
/// device (allowed succeeds, forbidden is refused before anything is committed), and forged with
/// plain git, signed with that member's key (allowed is taken by Alice's sync, forbidden is refused
/// with exit 5 and nothing merged). The allowed changes forged unsigned or by an unknown key are
/// refused too.
final class RoleMatrixTests: ConcordTestCase {
    /// What each role may do (Admin: everything).
    private let allowed: [String: Set<String>] = [
        "editor": ["vocabulary", "logs"],
        "user": ["logs"],
        "viewer": [],
    ]

    func testEveryRoleAndActionThroughConcord() throws {
        let team = try makeAccessTeam()
        for (device, role) in [(team.eddie, "editor"), (team.uma, "user"), (team.vera, "viewer")] {
            let copy = try cloneProfile(device, from: team.remote, into: "\(device.member)-copy")
            let actions: [(String, [String])] = [
                ("vocabulary", ["put", "vocabulary/\(device.member)", "--json", #"{"label":"new"}"#]),
                ("settings", ["put", "settings/theme", "--json", #"{"color":"red"}"#]),
                ("logs", ["append", "logs", "--json", #"{"symbol":"puzzle"}"#]),
                ("invite", ["share", "newcomer", "--role", "viewer"]),
                ("revoke", ["revoke", "alice"]),
                ("role", ["role", "alice", "viewer"]),
            ]
            for (action, arguments) in actions {
                let head = try revParse("HEAD", in: copy)
                let result = try concord(arguments, as: device, in: copy)
                if allowed[role]?.contains(action) == true {
                    XCTAssertEqual(result.status, 0, "\(role) \(action): \(result.stderr)")
                } else {
                    assertOneLineRefusal(result, mentions: ["\(device.member) is \(role)"])
                    XCTAssertEqual(try revParse("HEAD", in: copy), head, "\(role) \(action): nothing committed")
                }
            }
        }
        // The Admin does all of it.
        for arguments in [["put", "vocabulary/alice", "--json", "{}"], ["put", "settings/theme", "--json", #"{"color":"red"}"#],
                          ["append", "logs", "--json", "{}"], ["share", "newcomer", "--role", "viewer"], ["role", "vera", "user"],
                          ["revoke", "uma"]] {
            try concordOK(arguments, as: team.alice, in: team.aliceProfile)
        }
    }

    func testEveryRoleAndActionForgedWithPlainGit() throws {
        let team = try makeAccessTeam()
        let line = { (by: String, id: String) in
            #"{"at":"2026-01-01T10:00:00.000Z-0000","by":"\#(by)","data":{"symbol":"puzzle"},"device":"tablet","id":"\#(id)"}"# + "\n"
        }
        // Each action as an edit of a fresh clone by `member`.
        let actions: [(String, (URL, String) throws -> Void)] = [
            ("vocabulary", { clone, member in
                let file = try self.recordFile("vocabulary", "puzzle", in: clone)
                let text = try String(contentsOf: file, encoding: .utf8)
                try Data(text.replacingOccurrences(of: #""label": "[^"]*""#, with: #""label": "\#(member) \#(UUID().uuidString.prefix(4))""#,
                                                   options: .regularExpression).utf8).write(to: file)
                try self.stamp(file, as: member)
            }),
            ("settings", { clone, member in
                let file = try self.recordFile("settings", "theme", in: clone)
                try self.replace(#""color": "blue""#, with: #""color": "red""#, in: file)
                try self.stamp(file, as: member)
            }),
            ("logs", { clone, member in
                let day = clone.appendingPathComponent("logs/2026-01-01.jsonl")
                try FileManager.default.createDirectory(at: day.deletingLastPathComponent(), withIntermediateDirectories: true)
                let before = (try? String(contentsOf: day, encoding: .utf8)) ?? ""
                try Data((before + line(member, "\(member)-\(UUID().uuidString.prefix(6))")).utf8).write(to: day)
            }),
            ("revoke", { clone, _ in try self.editMember("alice", in: clone) { $0["status"] = "revoked" } }),
            ("role", { clone, _ in try self.editMember("vera", in: clone) { $0["role"] = "admin" } }),
        ]
        let stranger = try makeDevice("mallory", device: "laptop")
        for (action, edit) in actions {
            for (device, role) in [(team.eddie, "editor"), (team.uma, "user"), (team.vera, "viewer")] {
                let commit = try pushWithGit(team, signedWith: device.keyFile, message: "\(role) \(action)") { try edit($0, device.member) }
                if allowed[role]?.contains(action) == true {
                    try assertAccepted(team, commit: commit)
                    // The same change unsigned, or signed by a key no member holds: refused.
                    for key in [nil, stranger.keyFile] {
                        let forged = try pushWithGit(team, signedWith: key, message: "forged \(action)") { try edit($0, device.member) }
                        try assertRefused(team, commit: forged, mentions: [key == nil ? "not signed" : "unknown key"])
                        try gitOK(["update-ref", "refs/heads/main", commit], in: team.remote.bare)
                    }
                } else {
                    try assertRefused(team, commit: commit, mentions: ["by \(device.member)@\(device.device)"])
                    try gitOK(["update-ref", "refs/heads/main", try revParse("HEAD", in: team.aliceProfile)], in: team.remote.bare)
                }
            }
        }
    }
}
