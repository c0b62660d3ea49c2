#!/usr/bin/env bash
# Needs the test image (cargo test builds it). Fleet comparison on network none (deny egress): 32 sandboxes via agentc --count vs 32 concurrent docker run -d,
# and agentc rm --all --profile vs docker rm -f NAMES. Everything labelled with the bench profile and removed.
set -euo pipefail
cd "$(dirname "$0")/.." && cargo build --release -q -p agentc
agentc=${AGENTC:-$PWD/target/release/agentc}
image=$(docker images --format '{{.Repository}}:{{.Tag}}' | grep '^agentc-test/busybox' | head -1)
fleet=${FLEET:-32}; runs=${RUNS:-5}
work=$(mktemp -d); cd "$work"
prof=benchfleet$$
printf 'name = "%s"\nagent = "custom"\n\n[image]\nref = "%s"\ncommand = ["sleep", "300"]\n\n[egress]\nmode = "deny"\n' "$prof" "$image" > fleet.toml
argv=$("$agentc" render fleet.toml --backend cli --format shell)
base=$(echo "$argv" | grep -o -- '--name=[^ ]*' | cut -d= -f2)
{ echo "#!/bin/sh"; for i in $(seq "$fleet"); do echo "${argv/--name=$base /--name=$base-$i } >/dev/null &"; done; echo wait; } > docker-fleet.sh
printf '%s rm --all --profile %s >/dev/null 2>&1 || true\n' "$agentc" "$prof" > remove.sh
printf 'sh %s/remove.sh\n%s run fleet.toml --backend api --count %s >/dev/null\n' "$work" "$agentc" "$fleet" > start.sh
trap 'sh $work/remove.sh' EXIT
echo "image $image, fleet $fleet, argv: $argv" | cut -c1-300
hyperfine -N --runs "$runs" --prepare "sh $work/remove.sh" --export-markdown "$work/fleet.md" \
  "$agentc run fleet.toml --backend api --count $fleet --jobs 8" "sh $work/docker-fleet.sh"
names=$(for i in $(seq "$fleet"); do printf '%s-%s ' "$base" "$i"; done)
hyperfine -N --runs "$runs" --prepare "sh $work/start.sh" --export-markdown "$work/rm.md" \
  "$agentc rm --all --profile $prof" "docker rm -f $names"
cat "$work/fleet.md" "$work/rm.md"
