// swift-tools-version:6.0
// Concord: an offline-first, file-based sync kit. Layers depend downward only:
//   concord (CLI) → ConcordCommands → ConcordServer → ConcordKit → ConcordEngine → ConcordRules, ConcordTrust, ConcordGit, ConcordModel, ConcordKeyIndex;
//   apps link ConcordKit alone: the server (ConcordServer) is the CLI's, not theirs;
//   ConcordRules → ConcordModel, ConcordTrust (the validity rule: no libgit2, no I/O);
//   concord-lookup → ConcordKeyIndex (the Swift standard library alone);
//   ConcordEngine → CSQLite (the read-only SQL entry; GRDB holds the index's other connection);
//   ConcordGit → CLibgit2, CLibgit2Startup, CLibssh2, ConcordGitFormats → CShims
import PackageDescription

let package = Package(
    name: "Concord",
    // Synchronization's Mutex (the locks of the Sendable types) needs macOS 15 and iOS 18.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "ConcordKit", targets: ["ConcordKit"]),
        .executable(name: "concord", targets: ["concord"]),
        .executable(name: "concord-lookup", targets: ["concord-lookup"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        // GRDB: the record index's SQLite (Debian's libsqlite3-dev on Linux).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // CLibgit2: the system libgit2 (1.5.1 on Debian bookworm) and its sys/merge.h driver API.
        .systemLibrary(
            name: "CLibgit2",
            pkgConfig: "libgit2",
            providers: [.apt(["libgit2-dev"])]
        ),
        // CLibgit2Startup: keeps libgit2's start-up from parsing the system's CA certificates (HTTPS only; Concord has none).
        .target(name: "CLibgit2Startup"),
        // CShims: zlib through typed wrappers, Linux's renameat2 and glibc's malloc_trim (what Swift cannot call directly;
        // -Xcc -DCONCORD_PORTABLE leaves the Linux calls out, as `make test-portable` builds).
        .systemLibrary(name: "CShims", providers: [.apt(["zlib1g-dev"])]),
        // CLibssh2: the system libssh2 (1.10, the one libgit2 links), for reading an ssh remote's refs.
        .systemLibrary(name: "CLibssh2", pkgConfig: "libssh2", providers: [.apt(["libssh2-1-dev"])]),
        // CSQLite: the system SQLite GRDB links, for the record index's read-only SQL entry alone (its own
        // authorizer and progress handler on a connection GRDB does not manage).
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // ConcordGitFormats: git's formats in pure Swift, no libgit2: object ids, raw trees, pack and
        // pack-index writing, small-object deflate, index-file patching, safe path names, file writes.
        .target(name: "ConcordGitFormats", dependencies: ["CShims", .product(name: "Crypto", package: "swift-crypto")]),
        // ConcordGit: the only importer of CLibgit2 and CLibssh2; repositories, objects, trees, refs, signed
        // commits, merge driver, remotes, fetch and push, the quarantine; re-exports ConcordGitFormats.
        .target(name: "ConcordGit",
                dependencies: ["CLibgit2", "CLibgit2Startup", "CLibssh2", "CShims", "ConcordGitFormats", .product(name: "Crypto", package: "swift-crypto")]),
        // ConcordModel: pure Swift data model: canonical JSON, ids, kinds, records, HLC, roles.
        .target(name: "ConcordModel"),
        // ConcordTrust: Ed25519 identities as OpenSSH keys, SSHSIG signing and verification.
        .target(name: "ConcordTrust", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // ConcordRules: the validity rule as pure functions of values (no libgit2, no I/O): profile documents,
        // membership, the access rule, acceptances, key proofs, the structural checks, the membership replay.
        .target(name: "ConcordRules", dependencies: ["ConcordModel", "ConcordTrust"]),
        // ConcordKeyIndex: a server's keys.index (header, lines, who is let in) and sshd's key lookup from it;
        // no Foundation, no libgit2, so concord-lookup starts fast.
        .target(name: "ConcordKeyIndex"),
        // ConcordEngine: the engine under the store, `package` access (not a product): profiles, records,
        // members, history, the record index (GRDB), sync, merge, integrity; the values apps see in the
        // store's API (errors, transactions, history entries, reports) are public, re-exported by ConcordKit.
        .target(
            name: "ConcordEngine",
            dependencies: [
                "ConcordGit", "ConcordModel", "ConcordRules", "ConcordTrust", "ConcordKeyIndex", "CSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // ConcordKit: what apps embed (the product): the store, typed records, observation, the change
        // feed, the sync engine; its machinery under Internal/.
        .target(name: "ConcordKit", dependencies: ["ConcordEngine", "ConcordGit", "ConcordModel", "ConcordRules", "ConcordTrust"]),
        // ConcordServer: a concord server (`concord serve`): who may open which profile, the forced command's
        // plan, the hooks' push check, the key index, revocation views, waits, deletions. Apps do not link it.
        .target(name: "ConcordServer", dependencies: ["ConcordKit", "ConcordEngine", "ConcordGit", "ConcordKeyIndex"]),
        // ConcordCommands: the command-line tool's commands, one engine call each, parsed, run and rendered
        // with a `CommandContext` (environment, directory, streams): the binary's own process, or a test's.
        .target(
            name: "ConcordCommands",
            dependencies: ["ConcordKit", "ConcordEngine", "ConcordServer", "ConcordGit", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // concord: the command-line tool, ConcordCommands run with this process's environment and streams.
        .executableTarget(name: "concord", dependencies: ["ConcordCommands"]),
        // concord-lookup: sshd's AuthorizedKeysCommand for a concord server, run once per connection.
        .executableTarget(name: "concord-lookup", dependencies: ["ConcordKeyIndex"]),
        // concord-embedding-sample: samples/embedding, a small app embedding ConcordKit end to end
        // (typed records, kinds, queries, observe, the change feed, sharing, sync); `make test` runs it.
        .executableTarget(name: "concord-embedding-sample", dependencies: ["ConcordKit"], path: "samples/embedding"),
        // concord-bench: the benchmark harness behind `make bench` (concord vs the git CLI, same data).
        .executableTarget(name: "concord-bench", dependencies: ["ConcordKit", "ConcordEngine", "ConcordGit", "ConcordKeyIndex", "ConcordTestSupport"]),

        // ConcordTestSupport: the fixtures every test target and the bench share: child processes, a real
        // sshd, the concord binary, sandboxes, seeded generators, hand-made object files; where XCTest is
        // (not in the bench's static build), `ConcordTestCase` and the scenes the CLI-level tests start from.
        .target(name: "ConcordTestSupport", dependencies: ["ConcordGitFormats", "ConcordModel", "ConcordKit", "ConcordEngine", "ConcordCommands"],
                path: "Tests/ConcordTestSupport"),

        // ConcordModelTests: canonical JSON, records, kinds, the clock and the merge policies, in process.
        .testTarget(name: "ConcordModelTests", dependencies: ["ConcordModel", "ConcordTestSupport"]),
        // ConcordRulesTests: the validity rule on its own, from values (no repository): every role, kind and check.
        .testTarget(name: "ConcordRulesTests", dependencies: ["ConcordRules", "ConcordModel", "ConcordTrust"]),
        // ConcordTrustTests: identities, OpenSSH key files and SSHSIG signatures against published vectors.
        .testTarget(name: "ConcordTrustTests", dependencies: ["ConcordTrust", "ConcordTestSupport"]),
        // ConcordGitFormatsTests: git's formats in pure Swift (no libgit2), judged by zlib and the git CLI.
        .testTarget(name: "ConcordGitFormatsTests", dependencies: ["ConcordGitFormats", "CShims", "ConcordTestSupport"]),
        // ConcordGitTests: the libgit2 layer: repositories, trees, commits, packs, transfers, the quarantine.
        .testTarget(name: "ConcordGitTests",
                    dependencies: ["ConcordGit", "ConcordGitFormats", "ConcordTestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        // ConcordKitTests: the engine in process: profiles, the validity rule on real histories, convergence, history, limits.
        .testTarget(name: "ConcordKitTests",
                    dependencies: ["ConcordKit", "ConcordEngine", "ConcordTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                                   .product(name: "GRDB", package: "GRDB.swift")]),
        // ConcordCLITests: the concord binary on one device: commands, bad input, help, docs' console blocks, git interop.
        .testTarget(name: "ConcordCLITests", dependencies: ["ConcordKit", "ConcordTestSupport"]),
        // ConcordSyncTests: devices syncing through a remote: clone, convergence, races, kills, restore,
        // set-aside, hostile remotes, watch.
        .testTarget(name: "ConcordSyncTests", dependencies: ["ConcordKit", "ConcordEngine", "ConcordServer", "ConcordTestSupport"]),
        // ConcordSharingTests: members and access: invitations, key proofs, revocation, roles, member
        // attacks, leaving, destroying a profile.
        .testTarget(name: "ConcordSharingTests", dependencies: ["ConcordKit", "ConcordEngine", "ConcordServer", "ConcordTestSupport"]),
        // ConcordServerTests: `concord serve` as library code (the forced command's plan, the request, the
        // access decision) and behind a real sshd: the hook, the key lookup, revocation, waits.
        .testTarget(name: "ConcordServerTests", dependencies: ["ConcordServer", "ConcordKit", "ConcordEngine", "ConcordGit", "ConcordTestSupport"]),
    ]
)
