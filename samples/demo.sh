#!/usr/bin/env bash
# A short real scenario: two people, one AAC profile, a few records, a deletion, and the
# history read back with plain `git log --show-signature`. Run by `make demo`.
set -euo pipefail
CONCORD=${CONCORD:-concord}
CONCORD=$(cd "$(dirname "$CONCORD")" && pwd)/$(basename "$CONCORD")
work=$(mktemp -d /tmp/concord-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }
as() { local who=$1; shift; say "[$who] concord $*"; CONCORD_HOME="$work/$who" "$CONCORD" "$@"; }

as parent identity new --name parent --device phone
as therapist identity new --name therapist --device ipad
as parent init "$work/sam" --name "Sam's board" --template aac
cd "$work/sam"
therapist_key=$(CONCORD_HOME="$work/therapist" "$CONCORD" identity show --public-key)
as parent members add therapist --role editor --key "$therapist_key"
as parent put settings/voice --json '{"rate": 0.9, "voice": "en-GB"}'
as parent put vocabulary/biscuit --json '{"label": "biscuit", "position": 1}'
as therapist put vocabulary/puzzle --json '{"label": "puzzle", "position": 2}'
as therapist put vocabulary/biscuit --json '{"label": "cookie", "position": 1}'
as parent append logs --json '{"tapped": "puzzle"}'
as parent rm vocabulary/biscuit
as therapist put settings/voice --json '{"rate": 2}' || echo "(refused, as it should be: settings need an admin)"
as parent ls
as parent members
as parent log --record vocabulary/biscuit
run git log --show-signature --format='%h %an <%ae> %s%n%(trailers:key=Concord-Action,key=Concord-Record)'
run git verify-commit HEAD
run git fsck --full
echo
echo "demo finished: every commit above is signed and verified by plain git."
