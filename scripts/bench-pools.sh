#!/usr/bin/env bash
# Warm pools (issue 22): time from invoking a claim to the first output of its command
# (`echo ok`) through the CLI, warm (`--pool require`, one member filled before each claim,
# untimed) and cold (`--pool off`), alternated, 20 of each; prints p50 and p90 in ms.
#
#   scripts/bench-pools.sh [AGENTC_BINARY] [BACKEND]
#
# Uses the test images (scripts/build-test-image.sh and the `claude` shim of
# crates/agentc/tests/pools.rs, built when missing), an --internal outside network of its own,
# and removes everything it made.
set -euo pipefail
cd "$(dirname "$0")/.."
AGENTC=${1:-target/release/agentc}
BACKEND=${2:-cli}
ROUNDS=${ROUNDS:-20}
base=$(bash scripts/build-test-image.sh --print-tag)
docker image inspect "$base" >/dev/null 2>&1 || bash scripts/build-test-image.sh "$base"
image="agentc-test/faults-agent:${base##*:}"
if ! docker image inspect "$image" >/dev/null 2>&1; then
  ctx=$(mktemp -d)
  printf 'FROM %s\nCOPY claude /bin/claude\n' "$base" >"$ctx/Dockerfile"
  printf '#!/bin/sh\nexec /bin/sh "$@"\n' >"$ctx/claude"
  chmod 755 "$ctx/claude"
  docker build -q -t "$image" "$ctx" >/dev/null
  rm -rf "$ctx"
fi
id="agentc-bench-pools-$$"
dir=$(mktemp -d)
docker network create --internal "$id-out" >/dev/null
docker volume create "$id-home" >/dev/null
cleanup() {
  for c in $(docker ps -aq --filter "label=io.agentc.profile=$id"); do docker rm -f "$c" >/dev/null; done
  for n in $(docker network ls -q --filter "label=io.agentc.profile=$id"); do docker network rm "$n" >/dev/null; done
  docker network rm "$id-out" >/dev/null 2>&1 || true
  docker volume rm -f "$id-home" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
cat >"$dir/p.toml" <<TOML
name = "$id"
agent = "claude-code"
home_volume = "$id-home"

[workspace]
mount = false

[egress]
hosts = ["allowed.test"]
outside_network = "$id-out"
TOML
python3 - "$AGENTC" "$BACKEND" "$dir/p.toml" "$image" "$ROUNDS" <<'PY'
import subprocess, sys, time
agentc, backend, profile, image, rounds = sys.argv[1:6]
common = ["--backend", backend, "--image", image, "--no-warnings"]
def first_output(mode):
    start = time.monotonic()
    p = subprocess.Popen([agentc, "run", profile, *common, "--pool", mode, "--", "-c", "echo ok"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    elapsed = (time.monotonic() - start) * 1000
    _, err = p.communicate()
    assert line.strip() == b"ok" and p.returncode == 0, (mode, line, err)
    if mode == "require":
        assert b"warm start" in err, err
    return elapsed
def fill():
    subprocess.run([agentc, "pool", "fill", profile, "--size", "1", "--backend", backend,
                    "--image", image], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
fill(); first_output("require"); first_output("off")  # warm-up
warm, cold = [], []
for _ in range(int(rounds)):
    fill()
    warm.append(first_output("require"))
    cold.append(first_output("off"))
def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]
for name, values in (("warm", warm), ("cold", cold)):
    print(f"{name} ({backend}): p50 {pct(values, .5):.0f} ms, p90 {pct(values, .9):.0f} ms over {len(values)}")
print(f"cold/warm p50: {pct(cold, .5) / pct(warm, .5):.1f}x")
PY
