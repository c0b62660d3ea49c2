#!/usr/bin/env bash
# Pause/resume time, and snapshot/restore time against the size of the captured data
# (issue 23). Usage: scripts/bench-snapshots.sh [AGENTC] [ROUNDS]
#
# One custom sandbox of the busybox test image behind the egress proxy, its outside an
# --internal network of this script's own (nothing leaves the machine), root writable. For
# each size, that many MiB of random data is written into its tmpfs /tmp (archived through
# exec) or its root (the writable layer, committed); then `agentc snapshot` and
# `agentc restore` are timed ROUNDS times each (the restored sandbox removed after each).
# Prints a markdown table; medians in seconds. SPECS="tmpfs:64 layer:256" picks the cases.
set -euo pipefail

AGENTC=${1:-target/release/agentc}
ROUNDS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
IMAGE=$(bash "$ROOT/scripts/build-test-image.sh" --print-tag)
docker image inspect "$IMAGE" >/dev/null 2>&1 || bash "$ROOT/scripts/build-test-image.sh" "$IMAGE" >/dev/null
WORK=$(mktemp -d)
ID="agentc-bench-snap-$$"
export AGENTC_STATE_DIR="$WORK/state"
docker network create --internal "$ID-out" >/dev/null
cleanup() {
    for c in $(docker ps -aq --filter "label=io.agentc.profile=$ID"); do docker rm -f "$c" >/dev/null 2>&1 || true; done
    for n in $(docker network ls -q --filter "label=io.agentc.profile=$ID"); do docker network rm "$n" >/dev/null 2>&1 || true; done
    for i in $(docker image ls -q "agentc-snapshot/$ID" | sort -u); do docker image rm -f "$i" >/dev/null 2>&1 || true; done
    docker network rm "$ID-out" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
cat >"$WORK/box.toml" <<EOF
name = "$ID"
agent = "custom"

[image]
ref = "$IMAGE"
command = ["tail", "-f", "/dev/null"]

[security]
read_only_root = false

[egress]
hosts = ["allowed.test"]
outside_network = "$ID-out"
EOF
"$AGENTC" run "$WORK/box.toml" --backend api >/dev/null
NAME=$(docker ps --filter "label=io.agentc.profile=$ID" --filter label=io.agentc.kind=sandbox --format '{{.Names}}')

now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { local t0 t1; t0=$(now); "$@" >/dev/null; t1=$(now); echo "$t1 - $t0" | bc -l; }

pause_times=""; resume_times=""
for _ in $(seq 1 10); do
    pause_times+="$(timed "$AGENTC" pause --backend api "$NAME")"$'\n'
    resume_times+="$(timed "$AGENTC" resume --backend api "$NAME")"$'\n'
done
printf '| operation | backend | captured | median s |\n|:---|:---|---:|---:|\n'
printf '| pause | api | - | %.3f |\n' "$(printf '%s' "$pause_times" | median)"
printf '| resume | api | - | %.3f |\n' "$(printf '%s' "$resume_times" | median)"

n=0
for spec in ${SPECS:-tmpfs:1 tmpfs:64 tmpfs:256 layer:256}; do
    where=${spec%%:*}; mib=${spec##*:}
    dir=/tmp; [ "$where" = layer ] && dir=/data
    "$AGENTC" exec --backend api "$NAME" sh -c "rm -rf /tmp/data /data; mkdir -p $dir/data && head -c $((mib << 20)) /dev/urandom > $dir/data/blob" >/dev/null
    snaps=""; restores=""
    for _ in $(seq 1 "$ROUNDS"); do
        n=$((n + 1))
        snaps+="$(timed "$AGENTC" snapshot --backend api "$NAME" --tag "b$n")"$'\n'
        restores+="$(timed "$AGENTC" restore --backend api "$ID:b$n")"$'\n'
        restored=$(docker ps --filter "label=io.agentc.profile=$ID" --filter label=io.agentc.kind=sandbox --format '{{.Names}}' | grep -v "^$NAME\$" | head -1)
        "$AGENTC" rm "$restored" >/dev/null
        "$AGENTC" snapshot rm --backend api "$ID:b$n" >/dev/null
    done
    printf '| snapshot | api | %s MiB (%s) | %.3f |\n' "$mib" "$where" "$(printf '%s' "$snaps" | median)"
    printf '| restore | api | %s MiB (%s) | %.3f |\n' "$mib" "$where" "$(printf '%s' "$restores" | median)"
done
