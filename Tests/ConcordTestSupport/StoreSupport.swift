// See ConcordTestCase.swift: only where XCTest is.
#if canImport(XCTest)
import ConcordKit
import Foundation
import XCTest

/// Stores as an app opens them, for the library-level tests: identities in homes of their own, a
/// bare path remote, and the care team two members share.
extension ConcordTestCase {
    /// A new identity in `<sandbox>/home-<member>-<device>`.
    package func storeIdentity(_ member: String, device: String) throws -> Identity {
        try Identity.create(member: member, device: device, in: sandbox.appendingPathComponent("home-\(member)-\(device)"))
    }

    /// `identity`'s environment (its home; the system clock).
    package func storeEnvironment(_ identity: Identity) -> ConcordEnvironment { ConcordEnvironment(home: identity.home) }

    /// Alice's "Care team" (aac) on a bare path remote `<sandbox>/remote.git` with `other` added as
    /// `role` (with `otherDevice`'s key) and pushed, and `other`'s clone as a store (not fsck'd at
    /// the end: tests delete it). Alice's device is `laptop`.
    package func sharedCareTeam(other: String = "bob", otherDevice: String = "tablet", role: Role = .editor)
        throws -> (remote: URL, alice: ConcordStore, other: ConcordStore) {
        let (remote, aliceStore, invited) = try publishedCareTeam(other: other, otherDevice: otherDevice, role: role)
        let otherStore = try ConcordStore.clone(url: remote.path, into: sandbox.appendingPathComponent(other), identity: invited,
                                                environment: storeEnvironment(invited))
        return (remote, aliceStore, otherStore)
    }

    /// Alice's "Care team" (aac) on a bare path remote `<sandbox>/remote.git` with `other` added as
    /// `role` (with `otherDevice`'s key) and pushed; `other`'s identity, not yet cloned.
    package func publishedCareTeam(other: String, otherDevice: String, role: Role = .editor)
        throws -> (remote: URL, alice: ConcordStore, other: Identity) {
        let alice = try storeIdentity("alice", device: "laptop"), invited = try storeIdentity(other, device: otherDevice)
        let remote = sandbox.appendingPathComponent("remote.git")
        try Sync.createBareRemote(at: remote)
        let aliceStore = try ConcordStore.create(at: sandbox.appendingPathComponent("alice"), name: "Care team", template: .aac,
                                                 identity: alice, environment: storeEnvironment(alice))
        try aliceStore.addRemote("origin", url: remote.path)
        try aliceStore.addMember(other, role: role, device: otherDevice, key: invited.key.publicKey)
        _ = try aliceStore.sync()
        return (remote, aliceStore, invited)
    }

    /// The `ConcordError` `body` threw; nil when it threw none, or another error.
    package func thrownConcordError(_ body: () throws -> Any) -> ConcordError? {
        do { _ = try body() } catch { return error as? ConcordError }
        return nil
    }
}
#endif
