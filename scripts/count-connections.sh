#!/bin/bash
# Counts the connections each agentc command opens to the engine's socket (issue 37):
#   scripts/count-connections.sh [AGENTC_BINARY] [LABEL]
# under `strace -f -e trace=connect`, through the Engine API backend, on a custom busybox
# sandbox with egress.mode = "deny" (the image from scripts/build-test-image.sh). Prints one
# line per command: `LABEL COMMAND rc=STATUS connects=N`. Everything it makes is removed.
set -u
BIN=$(realpath "${1:-target/debug/agentc}")
LABEL=${2:-now}
IMAGE=$(bash "$(dirname "$0")/build-test-image.sh")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export AGENTC_STATE_DIR="$WORK/state"
cd "$WORK"
profile() { # NAME COMMAND
  printf 'name = "%s"\nagent = "custom"\n\n[image]\nref = "%s"\ncommand = %s\n\n[workspace]\nmount = false\n\n[egress]\nmode = "deny"\n' "$1" "$IMAGE" "$2"
}
profile conn '["sleep", "300"]' > conn.toml
profile conn-once '["true"]' > once.toml
count() {
  local name=$1; shift
  strace -f -qq -e trace=connect -o "$WORK/strace.$name" "$BIN" "$@" > "$WORK/out.$name" 2>&1
  local status=$?
  echo "$LABEL $name rc=$status connects=$(grep -c 'docker.sock' "$WORK/strace.$name")"
}
count run-attached run --backend api once.toml
count run-detached run --backend api --detach --name "conn-$LABEL" conn.toml
count exec exec --backend api "conn-$LABEL" true
count snapshot snapshot --backend api "conn-$LABEL"
SNAP=$("$BIN" snapshot ls --backend api --format json | python3 -c "import json,sys; r=[x for x in json.load(sys.stdin) if x['source']=='conn-$LABEL']; print(r[-1]['name'] if r else '')")
count restore restore --backend api --name "conn-$LABEL-r" "$SNAP"
count fork-3 fork --backend api --count 3 "$SNAP"
count fill-1 pool fill --backend api conn.toml --size 1
count claim run --backend api --detach conn.toml
"$BIN" pool drain --backend api conn > /dev/null 2>&1
count fill-3 pool fill --backend api conn.toml --size 3
count verify verify --backend api once.toml
count ps ps --backend api
count rm rm --backend api --profile conn
"$BIN" pool drain --backend api conn > /dev/null 2>&1
"$BIN" rm --backend api --profile conn-once > /dev/null 2>&1
[ -n "$SNAP" ] && "$BIN" snapshot rm --backend api "$SNAP" > /dev/null 2>&1
exit 0
