import ArgumentParser
import ConcordEngine
import ConcordKit
import Foundation

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Add or remove your own device keys (any member, for their own keys only).",
        subcommands: [AddDevice.self, RemoveDevice.self])

    struct AddDevice: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a device key to your own keys.")

        @OptionGroup var profile: ProfileOption
        @Option(help: "The new device's name.") var name: String
        @Option(help: "The new device's public key line, as 'concord identity show --public-key' prints it there.") var key: String
        @Option(help: "The new device's proof of possession of that key, as 'concord identity prove PROFILE-ID' prints it there (needed from data format 5 on).")
        var proof: String?

        func run() throws {
            _ = try profile.open().addOwnDevice(name, key: try SSHPublicKey(line: key), proof: proof)
            print("added device \(name); run 'concord sync', then 'concord clone' on that device")
        }
    }

    struct RemoveDevice: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove one of your own device keys.",
            discussion: """
            Name the device by its label or by its key's fingerprint (SHA256:..., as 'concord members --json' \
            shows it). Anyone holding one of your keys can relabel your keys, so a label that names two keys, \
            or this device's own key, is refused: name the fingerprint instead.
            """)

        @OptionGroup var profile: ProfileOption
        @Argument(help: "The device's label, or its key's fingerprint (SHA256:...).") var name: String

        func run() throws {
            let store = try profile.open()
            let before = Set(try store.read { try $0.members() }.first { $0.name == store.identity.member }?.keys.map(\.publicKey.fingerprint) ?? [])
            let after = Set(try store.removeDevice(name).value.keys.map(\.publicKey.fingerprint))
            // The key itself, named: a label can have been changed by whoever holds one of this member's keys.
            print("removed device \(name) (key \(before.subtracting(after).sorted().joined(separator: ", "))); run 'concord sync' to publish it")
        }
    }
}
