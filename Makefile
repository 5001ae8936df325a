# Concord — two commands do all the set-up on a fresh Debian/Ubuntu machine:
#   make demo   installs what is missing, builds (release), runs a short real scenario
#   make test   installs what is missing, builds, runs every test
# and `make bench` runs the benchmark harness (release build) and rewrites docs/benchmarks.md;
# `make bench BASELINE=<revision>` also times that revision's concord side by side in B1–B8;
# `make bench-baseline` does only that (against ff5d3de) into docs/benchmarks-baseline.md;
# `make test-portable` builds with the portable fallbacks of the Linux-only calls and runs the unit tests;
# `make test-asan` and `make test-tsan` run the store, engine, sync and index suites under AddressSanitizer or ThreadSanitizer;
# `make docs` builds ConcordKit's DocC catalog (Sources/ConcordKit/ConcordKit.docc) into .build-docs/ConcordKit.doccarchive.

SHELL := /bin/bash
ifneq ($(wildcard /opt/swift/usr/bin/swift),)
export PATH := /opt/swift/usr/bin:$(PATH)
endif
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# System packages: libgit2 (with ssh), SQLite (the record index, through GRDB), git and OpenSSH (client for
# signing checks, server for ssh tests).
PACKAGES := libgit2-dev libssh2-1-dev zlib1g-dev libsqlite3-dev pkg-config git openssh-client openssh-server
RELEASE := .build-release
# The release binary links the Swift runtime and Foundation statically: it runs where no Swift
# toolchain is installed (a server that only has git, ssh and libgit2), and every command starts
# faster (no dynamic loading and relocation of the Swift libraries; ~7 ms of `concord --version`).
RELEASE_BUILD := swift build -c release --static-swift-stdlib --scratch-path $(RELEASE)
SWIFT_TEST_FLAGS ?=

.PHONY: deps build release demo test test-portable test-asan test-tsan docs bench bench-baseline baseline clean

deps:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi
	@command -v swift >/dev/null || { echo "swift not found: install Swift 6 (https://swift.org) and put it on PATH"; exit 1; }

build: deps
	swift build

release: deps
	$(RELEASE_BUILD) --product concord

demo: release
	CONCORD=$(RELEASE)/release/concord bash samples/demo.sh

# samples/embedding runs first (an app embedding ConcordKit end to end, under a second); then the
# suite, which is XCTest, as two shards at once (Tests/run-suite.sh): the test classes TEST_SHARD names,
# and every other; the last line is a plain "N passed, N failed" summary of both.
# SWIFT_TEST_FLAGS (e.g. --filter StoreTests) runs one serial run with them instead.
# The split, by the suites' times in one serial run (Kit, Sync and Sharing took 1,231 s of 1,918) and one
# sharded run (970 s and 1,073 s): about half each.
TEST_SHARD ?= ConcordServerTests|ConcordCLITests|ConcordRulesTests|ConcordModelTests|ConcordTrustTests|ConcordGitFormatsTests|ConcordGitTests|ConcordKitTests\.(Field)?ConvergenceTests|ConcordSyncTests\.RaceTests
test: deps
	swift build --build-tests
	.build/debug/concord-embedding-sample
	@bash Tests/run-suite.sh '$(TEST_SHARD)' $(SWIFT_TEST_FLAGS)

# The portable fallbacks of the Linux-only calls (renameat2, malloc_trim and mallopt, /proc, MAP_POPULATE),
# compiled and tested here: CONCORD_PORTABLE defined for Swift and C (what other systems build), in a
# scratch path of its own, then the unit test targets (docs/platforms.md).
PORTABLE := .build-portable
PORTABLE_FLAGS := --scratch-path $(PORTABLE) -Xswiftc -DCONCORD_PORTABLE -Xcc -DCONCORD_PORTABLE
UNIT_TESTS := ConcordModelTests|ConcordTrustTests|ConcordGitFormatsTests|ConcordGitTests|ConcordKitTests|ConcordRulesTests
test-portable: deps
	swift build --build-tests $(PORTABLE_FLAGS)
	@set -o pipefail; swift test --skip-build --disable-swift-testing $(PORTABLE_FLAGS) --filter '^($(UNIT_TESTS))\.' 2>&1 \
	  | tee $(PORTABLE)/test-output.log | grep -E 'error:|failed|Executed [0-9]+ tests' | tail -n 20

# The store, engine, sync and index suites under a sanitizer, each in a scratch path of its own (not
# part of `make test`: CI time). AddressSanitizer (`make test-asan`) for use after free and heap
# overflows, ThreadSanitizer (`make test-tsan`) for data races between the store's queues, the
# watcher, the sync engine's threads and the tasks calling the store. SANITIZE_TESTS narrows them.
SANITIZE_TESTS ?= ConcordKitTests\.(Store|Observation|ChangeFeed|RecordIndex|Index)|ConcordSyncTests\.(StoreBoundEngine|StoreEnd|SyncEngine|UnlockedTransport)|ConcordSharingTests\.Store
test-asan: deps
	swift build --build-tests --sanitize=address --scratch-path .build-asan
	@# Leak checking off: the concord binaries the tests run (ASan builds too) keep libgit2's and libssh2's
	@# process-wide state until exit, which LeakSanitizer reports as leaks and turns into exit status 1.
	@set -o pipefail; ASAN_OPTIONS=detect_leaks=0 swift test --skip-build --disable-swift-testing --sanitize=address --scratch-path .build-asan \
	  --filter '$(SANITIZE_TESTS)' 2>&1 | tee .build-asan/test-output.log | grep -E 'ERROR: AddressSanitizer|error:|Executed [0-9]+ tests' | tail -n 20
test-tsan: deps
	swift build --build-tests --sanitize=thread --scratch-path .build-tsan
	@set -o pipefail; TSAN_OPTIONS=halt_on_error=0 swift test --skip-build --disable-swift-testing --sanitize=thread --scratch-path .build-tsan \
	  --filter '$(SANITIZE_TESTS)' 2>&1 | tee .build-tsan/test-output.log | grep -E 'WARNING: ThreadSanitizer|error:|Executed [0-9]+ tests' | tail -n 20

# ConcordKit's documentation: the catalog and every public symbol's doc comment, with the types of
# the modules ConcordKit re-exports (ConcordEngine's values, Kind, Role, Identity...). The compiler
# writes ConcordKit's symbol graph while building it (in a scratch path of its own): that graph has
# the re-exported symbols, which swift-symbolgraph-extract (the DocC plugin's way) leaves out
# (swiftlang/swift#60232). A DocC warning (a broken link, an unknown symbol) fails it.
DOCS := .build-docs
docs: deps
	rm -rf $(DOCS)/all-symbols
	touch Sources/ConcordKit/Exports.swift   # ConcordKit's module is emitted again, and its graph with it
	swift build --target ConcordKit --scratch-path $(DOCS) -Xswiftc -emit-symbol-graph \
	  -Xswiftc -emit-symbol-graph-dir -Xswiftc $(CURDIR)/$(DOCS)/all-symbols
	rm -rf $(DOCS)/symbols $(DOCS)/ConcordKit.doccarchive && mkdir -p $(DOCS)/symbols
	find $(DOCS)/all-symbols -name 'ConcordKit.symbols.json' -o -name 'ConcordKit@*.symbols.json' | xargs -I{} cp {} $(DOCS)/symbols/
	docc convert Sources/ConcordKit/ConcordKit.docc --additional-symbol-graph-dir $(DOCS)/symbols \
	  --fallback-display-name ConcordKit --fallback-bundle-identifier concord.ConcordKit \
	  --output-path $(DOCS)/ConcordKit.doccarchive --warnings-as-errors
	@echo "documentation: $(DOCS)/ConcordKit.doccarchive"

# BASELINE: a revision of this repository (e.g. ff5d3de, the build before the Integrity work),
# exported with `git archive` and built the same way under .build-baseline/<revision>/.
BASELINE ?=
BASELINE_DIR := .build-baseline/$(BASELINE)
BASELINE_FLAG := $(if $(BASELINE),--baseline $(BASELINE_DIR)/build/release/concord)

bench: deps $(if $(BASELINE),baseline)
	$(RELEASE_BUILD) --product concord
	$(RELEASE_BUILD) --product concord-lookup
	$(RELEASE_BUILD) --product concord-bench
	$(RELEASE)/release/concord-bench --concord $(RELEASE)/release/concord $(BASELINE_FLAG) --output docs/benchmarks.md

# The Integrity issue's bounds, side by side with the build before it in one run: B3, B5 and B6
# only, into docs/benchmarks-baseline.md (`make bench-baseline`, BASELINE defaults to ff5d3de).
# Other rows (B1–B8 each have a baseline row) and reports: e.g. `make bench-baseline BASELINE=8593eb6 BASELINE_ONLY=B3,B6,B7,B8
# BASELINE_OUTPUT=/tmp/run.md` (issue 31's bounds; B13 runs without a baseline since data format 5:
# a build before it refuses the profile B13 makes).
# In memory when /dev/shm is there: this compares two builds' work, and file creation on a disk
# just after a test suite deleted many files varies several-fold between runs (see the report).
BASELINE_TMPDIR ?= $(if $(wildcard /dev/shm),/dev/shm,/tmp)
BASELINE_ONLY ?= B3,B5,B6
BASELINE_OUTPUT ?= docs/benchmarks-baseline.md
bench-baseline: BASELINE := $(or $(BASELINE),ff5d3de)
bench-baseline: deps
	@$(MAKE) --no-print-directory baseline BASELINE=$(BASELINE)
	$(RELEASE_BUILD) --product concord
	$(RELEASE_BUILD) --product concord-lookup
	$(RELEASE_BUILD) --product concord-bench
	$(RELEASE)/release/concord-bench --concord $(RELEASE)/release/concord --baseline .build-baseline/$(BASELINE)/build/release/concord \
	  --only $(BASELINE_ONLY) --runs 11 --tmpdir $(BASELINE_TMPDIR) --output $(BASELINE_OUTPUT)

baseline: deps
	@test -n "$(BASELINE)" || { echo "usage: make baseline BASELINE=<revision>"; exit 2; }
	@git rev-parse --verify -q "$(BASELINE)^{commit}" >/dev/null || { echo "$(BASELINE) is not a commit of this repository"; exit 2; }
	@if [ ! -x $(BASELINE_DIR)/build/release/concord ]; then \
	  rm -rf $(BASELINE_DIR)/src && mkdir -p $(BASELINE_DIR)/src && git archive "$(BASELINE)" | tar -x -C $(BASELINE_DIR)/src && \
	  (cd $(BASELINE_DIR)/src && swift build -c release --static-swift-stdlib --scratch-path ../build --product concord); \
	fi
	@# B8's concord server runs concord-lookup beside the concord binary (the same lookup as this build's).
	@if [ ! -x $(BASELINE_DIR)/build/release/concord-lookup ] && grep -q '"concord-lookup"' $(BASELINE_DIR)/src/Package.swift; then \
	  (cd $(BASELINE_DIR)/src && swift build -c release --static-swift-stdlib --scratch-path ../build --product concord-lookup); \
	fi

clean:
	rm -rf .build $(RELEASE) $(PORTABLE) .build-baseline .build-asan .build-tsan
