import Foundation

/// The places for `concord-wait` connections on a server: a wait holds one place of its member
/// and one of its profile for as long as it waits. Places are counted per member, not per key: a
/// Viewer with 16 device keys of her own held all 64 places of a profile (1.6 GB of the server)
/// while they were counted per key. The member is the one whose key connected, in the membership at
/// the server's main (`ConcordServer.Admitted.member`); a key that is no member's (the server
/// admin's) is counted as its own member. Every connection is its own `concord serve` process, so
/// the places are files, `<root>/waits/member-<profile>-<hex of the name>.<n>` (or
/// `key-<fingerprint>.<n>`) and `profile-<name>.<n>`, each held with `flock` by the process waiting
/// in it: the kernel lets go of a killed process's lock, so a place is never lost, and nothing has
/// to be counted or cleaned up.
public final class WaitSlots {
    /// The most `concord-wait`s one member may hold open at once on a profile, all their device
    /// keys together (a device's `watch` holds one).
    public static let maxPerMember = 4
    /// The most `concord-wait`s open at once on one profile, all its members' devices together.
    public static let maxPerProfile = 64
    /// The directory of the place files, under the server's root.
    static let directory = "waits"

    private var descriptors = [Int32]()

    /// Takes a place of `member` (of `profile`; nil: of `key`, its `SHA256:` fingerprint) and one of
    /// `profile` under `root`, held until this value is let go or the process ends; throws
    /// `ServerRefusal` when every place of either is taken.
    public init(root: URL, key: String, member: String?, profile: String,
                perMember: Int = maxPerMember, perProfile: Int = maxPerProfile) throws {
        let directory = root.appendingPathComponent(Self.directory).path
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw ServerRefusal("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let holder: String
        if let member {
            // A member's name may hold any character: the file name spells it in hex.
            holder = "/member-\(profile)-" + member.utf8.map { String(format: "%02x", $0) }.joined()
        } else {
            // A fingerprint's base64 may hold "/" and "+": the file name spells them "_" and "-".
            holder = "/key-" + key.replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "+", with: "-")
        }
        guard try take(directory + holder, places: perMember) else {
            let who = member.map { "\"\($0)\" (all their device keys together)" } ?? "this key"
            throw ServerRefusal("\(who) already holds \(perMember) concord-wait connections on \"\(profile)\", the most one member may: "
                                + "stop a watch on another of these devices or terminals, or wait for one of them to end")
        }
        guard try take(directory + "/profile-" + profile, places: perProfile) else {
            throw ServerRefusal("\"\(profile)\" already has \(perProfile) concord-wait connections open, the most one profile may: "
                                + "the device polls instead; try again later")
        }
    }

    deinit {
        for descriptor in descriptors { close(descriptor) }
    }

    /// Takes the first free one of `prefix.0` … `prefix.<places - 1>`; false when all are held.
    private func take(_ prefix: String, places: Int) throws -> Bool {
        for place in 0..<places {
            let path = "\(prefix).\(place)"
            let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard descriptor >= 0 else { throw ServerRefusal("cannot open \(path): \(String(cString: strerror(errno)))") }
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                descriptors.append(descriptor)
                return true
            }
            close(descriptor)
        }
        return false
    }
}
