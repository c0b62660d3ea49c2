#!/usr/bin/env bash
# The README's walkthrough, run as written: from nothing to a verified, locked sandbox.
#
#   init -> doctor -> plan -> apply -> verify -> lock -> run --locked -> a drift refused
#
# Usage: scripts/walkthrough.sh [AGENTC]   (default: target/debug/agentc, built if missing)
# Needs a Docker daemon and the local busybox test image (built by scripts/build-test-image.sh
# when missing; no registry is contacted). Everything it creates carries the profile name
# `walkthrough-<pid>` and is removed at the end, also on failure: the sandbox container, the
# state directory and the temporary directory. It prunes nothing and touches no other container.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
agentc=${1:-$root/target/debug/agentc}
if [[ ! -x "$agentc" ]]; then
    cargo build -q -p agentc --manifest-path "$root/Cargo.toml"
fi
agentc=$(readlink -f "$agentc")

image=$(bash "$root/scripts/build-test-image.sh" --print-tag)
if ! docker image inspect "$image" >/dev/null 2>&1; then
    bash "$root/scripts/build-test-image.sh" "$image" >/dev/null
fi

name="walkthrough-$$"
work=$(mktemp -d "${TMPDIR:-/tmp}/agentc-walkthrough.XXXXXX")
export AGENTC_STATE_DIR="$work/state"
cleanup() {
    for id in $(docker ps -aq --filter "label=io.agentc.profile=$name"); do
        docker rm --force "$id" >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
step() { printf '\n$ %s\n' "$*"; "$@"; }

# 1. A starter profile: a custom long-lived sandbox of the local test image, no network.
step "$agentc" init "$name.toml" --agent custom --image "$image"
# 2. Can this machine run it? (exit 0: nothing fails; warnings print their fix)
step "$agentc" doctor "$name.toml"
# 3. What its launches would create, without contacting the engine.
step "$agentc" plan "$name.toml"
# 4. Deploy: build or check the image, copy seeds, record the deployment.
step "$agentc" apply "$name.toml"
# 5. Start the exact launch with a probe and compare what the kernel reports.
step "$agentc" verify "$name.toml"
# 6. Pin it: spec digests, image IDs, files, egress, agentc's version.
step "$agentc" lock "$name.toml"
step "$agentc" lock --check "$name.toml"
# 7. Launch only what was locked.
step "$agentc" run --locked "$name.toml"
step "$agentc" ps
sandbox=$(docker ps -a --filter "label=io.agentc.profile=$name" --format '{{.Names}}')
step "$agentc" rm "$sandbox"

# 8. A changed limit is drift: refused before anything is created (exit 65).
printf '\n$ AGENTC_MEM_LIMIT=1g %s run --locked %s.toml\n' "$agentc" "$name"
set +e
AGENTC_MEM_LIMIT=1g "$agentc" run --locked "$name.toml"
status=$?
set -e
if [[ $status -ne 65 ]]; then
    echo "walkthrough: expected exit 65 for a drifted launch, got $status" >&2
    exit 1
fi
if [[ -n $(docker ps -aq --filter "label=io.agentc.profile=$name") ]]; then
    echo "walkthrough: a refused --locked launch created a container" >&2
    exit 1
fi
echo
echo "walkthrough: ok"
