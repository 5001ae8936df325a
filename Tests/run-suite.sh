#!/usr/bin/env bash
# Runs the built XCTest suite (`swift build --build-tests` first) as `make test` does, and ends with a
# plain "N passed, N failed" line summing it.
#
#   Tests/run-suite.sh SHARD            two shards at once: the test classes SHARD names (a regex
#                                       matched against `Target.Class`: a target or a class, e.g.
#                                       'ConcordCLITests|ConcordSyncTests\.RaceTests'), and every other
#                                       class (so a new test is never left out)
#   Tests/run-suite.sh SHARD FLAGS...   one serial run with the given `swift test` flags (a --filter)
#
# Each shard is a serial XCTest run of the test bundle in a process of its own (the tests spend most of their time
# waiting for the concord, git and sshd processes they start, so two keep both cores busy, and no
# process-wide state is shared between them). Their lines go to the terminal as they come, each
# whole, and to .build/test-output-1.log and -2.log; a shard that ends without XCTest's summary line
# (a crash) counts as failed.
set -uo pipefail
shard=$1
shift

# The run's own summary in log $1 (the "Executed N tests, with F failures" line after the last
# suite, "All tests" or "Selected tests", ended), as "N F"; nothing when the run did not get there
# (a crash: the last "Executed" line is then one class's).
executed() {
    grep -A1 -E "^Test Suite '(All|Selected) tests' (passed|failed) at" "$1" \
        | grep -E 'Executed [0-9]+ tests?, with [0-9]+ failures?' | tail -n 1 \
        | sed -E 's/.*Executed ([0-9]+) tests?, with ([0-9]+) failures?.*/\1 \2/'
}

if [ $# -gt 0 ]; then
    logs=(.build/test-output.log)
    swift test --skip-build --disable-swift-testing "$@" 2>&1 | tee "${logs[0]}"
    status=$?
else
    # The XCTest bundle itself, twice (two `swift test` would wait for each other's lock on .build),
    # each given its test classes as `swift test --filter` gives them, comma-separated.
    bundle=$(ls -d "$(swift build --show-bin-path)"/*PackageTests.xctest | head -n 1)
    classes=$("$bundle" --list-tests | sed -n -E 's#^([A-Za-z0-9_]+\.[A-Za-z0-9_]+)/.*#\1#p' | sort -u)
    first=$(grep -E "^($shard)(\.|$)" <<<"$classes" | paste -sd, -)
    second=$(grep -v -E "^($shard)(\.|$)" <<<"$classes" | paste -sd, -)
    if [ -z "$classes" ] || [ -z "$first" ] || [ -z "$second" ]; then
        echo "Tests/run-suite.sh: no tests to split (listed $(wc -l <<<"$classes") classes) by '$shard'"
        exit 1
    fi
    logs=(.build/test-output-1.log .build/test-output-2.log)
    ("$bundle" "$first" 2>&1 | tee "${logs[0]}") &
    one=$!
    ("$bundle" "$second" 2>&1 | tee "${logs[1]}") &
    two=$!
    trap 'kill -- $one $two 2>/dev/null; exit 130' INT TERM
    status=0
    wait $one || status=$?
    wait $two || status=$?
fi

passed=0 failed=0
for log in "${logs[@]}"; do
    counts=$(executed "$log")
    if [ -z "$counts" ]; then
        echo "$log: the run ended without XCTest's summary (a crash?): see its last lines"
        failed=$((failed + 1))
        status=1
        continue
    fi
    read -r total failures <<<"$counts"
    passed=$((passed + total - failures))
    failed=$((failed + failures))
done
echo "$passed passed, $failed failed"
exit $status
