import ArgumentParser
import ConcordKit
import Foundation

struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Create or show this device's identity (member name, device name, Ed25519 key).",
        subcommands: [New.self, Show.self, Prove.self, Delete.self]
    )

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "new", abstract: "Create this device's identity in CONCORD_HOME.")

        @Option(help: "Your member name, as others see it (letters, digits, . _ -).") var name: String
        @Option(help: "This device's name, e.g. phone or ipad.") var device: String
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let identity = try Identity.create(member: name, device: device, in: try runEnvironment().home)
            if json {
                try printJSON(identityJSON(identity))
            } else {
                print("created identity \(identity.principal) in \(identity.home.path)")
                print("public key: \(identity.publicKeyLine)")
                print("fingerprint: \(identity.key.publicKey.fingerprint)")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "show", abstract: "Show this device's identity.")

        @Flag(help: "Print only the public key line (ssh-ed25519 ...).") var publicKey = false
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let identity = try loadIdentity()
            if publicKey {
                print(identity.publicKeyLine)
            } else if json {
                try printJSON(identityJSON(identity))
            } else {
                print("member: \(identity.member)")
                print("device: \(identity.device)")
                print("public key: \(identity.publicKeyLine)")
                print("fingerprint: \(identity.key.publicKey.fingerprint)")
                print("home: \(identity.home.path)")
            }
        }
    }
}

extension IdentityCommand {
    struct Prove: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "prove",
            abstract: "Print this device key's proof of possession for a profile, to add the key as another of your devices.",
            discussion: """
                On the new device, run 'concord identity prove PROFILE-ID' (the id 'concord devices add' names when it asks \
                for the proof, on a device that has the profile); on a device already in the profile, run \
                'concord devices add --name DEVICE --key KEY --proof PROOF' with this device's public key and the line \
                printed here. The proof is a signature by this device's key over the profile id, this identity's member \
                name and the key: only the key's holder can make it (docs/security.md, "A key belongs to one member").
                """)

        @Argument(help: "The profile's id.") var profileID: String
        @Option(help: "The member the key is for (default: this identity's member name).") var member: String?
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let identity = try loadIdentity()
            let member = member ?? identity.member
            let proof = KeyProof.sign(profileID: profileID, member: member, with: identity.key)
            if json {
                try printJSON(["profile": profileID, "member": member, "device": identity.device, "publicKey": identity.publicKeyLine,
                               "proof": proof])
            } else {
                print(proof)
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete your account on this device: leave or destroy every profile, then remove the identity.",
            discussion: """
                Each profile this identity has here: one you alone administer is destroyed ('concord destroy': its \
                remotes keep only your signed deletion notice, and the other members' devices remove their copies); \
                from every other one you leave ('concord leave': your departure, with no device keys, is synced so the \
                others see it). Then this device's copy goes. A profile whose remote cannot be reached is kept, and so \
                is the identity: run the command again to finish. Once every profile is done, the identity's files \
                (key, registry, known hosts, saved exports) are removed. Data already synced to other people's \
                devices is not recalled.
                """)

        @Flag(help: "Confirm: leave or delete every profile and remove this identity.") var yes = false
        @Flag(help: "Print the result as JSON.") var json = false

        /// What `--json` prints: each profile's step (`profile`, `path`, `result`, `detail`) and the files removed.
        struct Output: Encodable {
            let member: String, identityDeleted: Bool, profiles: [[String: String]], removedFiles: [String]
        }

        func run() throws {
            let environment = try processEnvironment()
            let identity = try loadIdentity()
            guard yes else {
                throw ValidationError("identity delete leaves or deletes every profile of \(identity.principal) on this device and removes "
                                      + "the identity: run it again with --yes")
            }
            let report = AccountDeletion(identity: identity, environment: environment).run()
            func text(_ outcome: AccountDeletion.Outcome) -> (String, String) {
                switch outcome {
                case .destroyed(let detail): return ("destroyed", detail)
                case .left(let detail): return ("left", detail)
                case .alreadyGone(let detail): return ("already gone", detail)
                case .notDone(let detail): return ("NOT done", detail)
                }
            }
            if json {
                let profiles = report.steps.map { step in
                    let (result, detail) = text(step.outcome)
                    return ["profile": step.profile, "path": step.path, "result": result, "detail": detail]
                }
                try printJSON(Output(member: identity.member, identityDeleted: report.identityDeleted, profiles: profiles,
                                     removedFiles: report.removedFiles))
            } else {
                for step in report.steps {
                    let (result, detail) = text(step.outcome)
                    print("\(step.profile.isEmpty ? step.path : "\"\(step.profile)\" (\(step.path))"): \(result): \(detail)")
                }
                print(report.identityDeleted
                      ? "deleted identity \(identity.principal) from \(identity.home.path); data already on other people's devices is not recalled"
                      : "identity \(identity.principal) is kept until every profile is done: run 'concord identity delete --yes' again")
            }
            if !report.identityDeleted { throw ExitCode(ExitStatus.failure) }
        }
    }
}

/// An identity as `identity new --json` and `identity show --json` print it.
private func identityJSON(_ identity: Identity) -> [String: String] {
    ["member": identity.member, "device": identity.device, "publicKey": identity.publicKeyLine,
     "fingerprint": identity.key.publicKey.fingerprint, "home": identity.home.path]
}
