// swift-tools-version:6.0
// Concord: an offline-first, file-based sync kit. Layers depend downward only:
//   concord (CLI) → ConcordKit → ConcordTrust, ConcordGit, ConcordModel, ConcordKeyIndex;
//   concord-lookup → ConcordKeyIndex (the Swift standard library alone);
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
        // ConcordKeyIndex: a server's keys.index (header, lines, who is let in) and sshd's key lookup from it;
        // no Foundation, no libgit2, so concord-lookup starts fast.
        .target(name: "ConcordKeyIndex"),
        // ConcordKit: the engine apps embed: profiles, transactions, reads, history.
        .target(
            name: "ConcordKit",
            dependencies: [
                "ConcordGit", "ConcordModel", "ConcordTrust", "ConcordKeyIndex",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // concord: the command-line tool; each command parses, calls one engine function, renders.
        .executableTarget(
            name: "concord",
            dependencies: ["ConcordKit", "ConcordGit", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // concord-lookup: sshd's AuthorizedKeysCommand for a concord server, run once per connection.
        .executableTarget(name: "concord-lookup", dependencies: ["ConcordKeyIndex"]),
        // concord-bench: the benchmark harness behind `make bench` (concord vs the git CLI, same data).
        .executableTarget(name: "concord-bench", dependencies: ["ConcordKit", "ConcordGit", "ConcordKeyIndex", "ConcordTestSupport"]),

        // ConcordTestSupport: the fixtures every test target and the bench share: child processes, a real
        // sshd, the concord binary, sandboxes, seeded generators, hand-made object files. No XCTest here.
        .target(name: "ConcordTestSupport", dependencies: ["ConcordGitFormats", "ConcordModel"], path: "Tests/ConcordTestSupport"),

        .testTarget(name: "ConcordModelTests", dependencies: ["ConcordModel", "ConcordTestSupport"]),
        .testTarget(name: "ConcordTrustTests", dependencies: ["ConcordTrust", "ConcordTestSupport"]),
        .testTarget(name: "ConcordGitFormatsTests", dependencies: ["ConcordGitFormats", "CShims", "ConcordTestSupport"]),
        .testTarget(name: "ConcordGitTests",
                    dependencies: ["ConcordGit", "ConcordGitFormats", "ConcordTestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "ConcordKitTests",
                    dependencies: ["ConcordKit", "ConcordTestSupport", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "ConcordCLITests", dependencies: ["ConcordKit", "ConcordTestSupport"]),
        .testTarget(name: "ConcordSyncTests", dependencies: ["ConcordKit", "ConcordTestSupport"]),
    ]
)
