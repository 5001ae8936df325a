import ArgumentParser
import ConcordKit
import Foundation

struct IdentityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity",
        abstract: "Create or show this device's identity (member name, device name, Ed25519 key).",
        subcommands: [New.self, Show.self]
    )

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create this device's identity in CONCORD_HOME.")

        @Option(help: "Your member name, as others see it (letters, digits, . _ -).") var name: String
        @Option(help: "This device's name, e.g. phone or ipad.") var device: String
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let identity = try Identity.create(member: name, device: device, in: try ConcordEnvironment.fromProcess().home)
            if json {
                printJSON(identityJSON(identity))
            } else {
                print("created identity \(identity.principal) in \(identity.home.path)")
                print("public key: \(identity.publicKeyLine)")
                print("fingerprint: \(identity.key.publicKey.fingerprint)")
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show this device's identity.")

        @Flag(help: "Print only the public key line (ssh-ed25519 ...).") var publicKey = false
        @Flag(help: "Print the result as JSON.") var json = false

        func run() throws {
            let identity = try loadIdentity()
            if publicKey {
                print(identity.publicKeyLine)
            } else if json {
                printJSON(identityJSON(identity))
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

private func identityJSON(_ identity: Identity) -> JSONValue {
    .object([
        "member": .string(identity.member), "device": .string(identity.device),
        "publicKey": .string(identity.publicKeyLine), "fingerprint": .string(identity.key.publicKey.fingerprint),
        "home": .string(identity.home.path),
    ])
}
