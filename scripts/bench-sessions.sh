#!/usr/bin/env bash
# Times the session commands against the docker CLI doing the same by hand (hyperfine):
#   - exec round trip of a trivial command: `agentc exec --backend api|cli NAME -- true`
#     versus `docker exec NAME true`;
#   - cp of a 100 MB tree (100 files of 1 MB and 1,000 small ones) into the sandbox's tmpfs and
#     back out: `agentc cp --backend api|cli` versus a tar pipe through `docker exec`
#     (`tar -c | docker exec -i NAME tar -x`, and the reverse).
# The sandbox is a hardened custom profile (read-only root, tmpfs /tmp) running the busybox
# test image of scripts/build-test-image.sh (built when missing, never pulled); it is removed
# at the end, also on failure. Results go to stdout and, as markdown, to $OUT_DIR (default
# target/bench-sessions).
#
#   scripts/bench-sessions.sh [EXEC_RUNS] [CP_RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
exec_runs=${1:-50}
cp_runs=${2:-10}
out_dir=${OUT_DIR:-target/bench-sessions}
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release -q -p agentc
agentc=$PWD/target/release/agentc
image=$(bash scripts/build-test-image.sh --print-tag)
docker image inspect "$image" >/dev/null 2>&1 || bash scripts/build-test-image.sh "$image" >/dev/null

work=$(mktemp -d)
profile=bench-sessions-$$
cleanup() {
  docker ps -aq --filter "label=io.agentc.profile=$profile" | xargs -r docker rm --force >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/$profile.toml" <<PROFILE
name = "$profile"
agent = "custom"

[image]
ref = "$image"
user = "1000:1000"
command = ["tail", "-f", "/dev/null"]
PROFILE
(cd "$work" && "$agentc" run "$profile.toml" >/dev/null)
name=$(docker ps --filter "label=io.agentc.profile=$profile" --format '{{.Names}}')

# The 100 MB tree.
mkdir -p "$work/tree/big" "$work/tree/small"
for i in $(seq 1 100); do head -c 1048576 /dev/urandom > "$work/tree/big/$i.bin"; done
for i in $(seq 1 1000); do head -c 512 /dev/urandom > "$work/tree/small/$i.txt"; done
docker exec "$name" mkdir -p /tmp/in
(cd "$work" && "$agentc" cp --backend api tree "$name:/tmp/out" 2>/dev/null)

cd "$work"
hyperfine --warmup 5 --runs "$exec_runs" --shell=none \
  --export-markdown "$out_dir/exec.md" \
  -n "agentc exec --backend api" "$agentc exec --backend api $name -- true" \
  -n "agentc exec --backend cli" "$agentc exec --backend cli $name -- true" \
  -n "docker exec" "docker exec $name true"

hyperfine --warmup 1 --runs "$cp_runs" \
  --export-markdown "$out_dir/cp-in.md" \
  --prepare "docker exec $name rm -rf /tmp/in/tree" \
  -n "agentc cp --backend api (in)" "$agentc cp --backend api tree $name:/tmp/in 2>/dev/null" \
  -n "agentc cp --backend cli (in)" "$agentc cp --backend cli tree $name:/tmp/in 2>/dev/null" \
  -n "tar | docker exec -i tar -x (in)" "tar -c -f - tree | docker exec -i $name tar -x -f - -C /tmp/in"

hyperfine --warmup 1 --runs "$cp_runs" \
  --export-markdown "$out_dir/cp-out.md" \
  --prepare "rm -rf $work/back && mkdir $work/back" \
  -n "agentc cp --backend api (out)" "$agentc cp --backend api $name:/tmp/out $work/back 2>/dev/null" \
  -n "agentc cp --backend cli (out)" "$agentc cp --backend cli $name:/tmp/out $work/back 2>/dev/null" \
  -n "docker exec tar -c | tar -x (out)" "docker exec $name tar -c -f - -C /tmp out | tar -x -f - -C $work/back"
echo "markdown tables in $out_dir"
