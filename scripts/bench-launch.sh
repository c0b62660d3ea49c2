#!/usr/bin/env bash
# The performance harness of issue 14, one command: whole-process timings of the offline
# commands in alternation with agent-containers, agentc's own time before the daemon receives
# a create request (the referee's stand-in engine), the criterion benches of the pipeline, and
# live-daemon comparisons of launches and removals against the docker CLI.
#
#   scripts/bench-launch.sh [offline|overhead|criterion|live|all]   (default: all)
#
# RUNS (default 200) sets the offline rounds, LIVE_RUNS (default 10) the hyperfine runs of each
# live comparison, FLEET (default 32) the sandboxes of the fan-out, JOBS (default 8) its
# concurrency. The agent-containers CLI is installed from PyPI (agent-containers-cli) into
# target/bench-venv when AGENT_CONTAINERS does not name one. Live comparisons use only local
# images built from the busybox test image (scripts/build-test-image.sh, never pulled) and
# remove everything they create (containers and volumes by their io.agentc.profile label, the
# agent image by its agentc-bench label), also on failure. Results go to stdout and, as
# markdown, to $OUT_DIR (default target/bench-launch).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
runs=${RUNS:-200}
live_runs=${LIVE_RUNS:-10}
fleet=${FLEET:-32}
jobs=${JOBS:-8}
out_dir=${OUT_DIR:-target/bench-launch}
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

cargo build --release -q -p agentc
agentc=$PWD/target/release/agentc
profile=fixtures/valid/claude-everything.toml
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg); $(ls -l "$agentc" | awk '{print $5}') byte binary"

offline() {
  local ac=${AGENT_CONTAINERS:-}
  if [ -z "$ac" ]; then
    ac=$PWD/target/bench-venv/bin/agent-containers
    if [ ! -x "$ac" ]; then
      python3 -m venv target/bench-venv
      # It declares Python >= 3.12; its validation runs on 3.11.
      target/bench-venv/bin/pip install -q --ignore-requires-python agent-containers-cli
    fi
  fi
  # agent-containers accepts claude-minimal; claude-everything uses agentc's own tables.
  local minimal=fixtures/valid/claude-minimal.toml
  echo "== offline commands, whole process, in alternation ($runs rounds)"
  python3 scripts/bench_alternate.py "$runs" \
    "/bin/true=/bin/true" \
    "agentc --version=$agentc --version" \
    "agentc validate claude-minimal=$agentc validate $minimal" \
    "agentc explain claude-minimal=$agentc explain $minimal" \
    "agentc validate claude-everything=$agentc validate $profile" \
    "agentc render claude-everything (cli)=$agentc render $profile --backend cli --format shell" \
    "agentc render claude-everything (api)=$agentc render $profile --backend api --format json" \
    "agentc explain claude-everything=$agentc explain $profile" \
    "agent-containers validate claude-minimal=$ac validate $minimal" \
    | tee "$out_dir/offline.txt"
}

overhead() {
  echo "== agentc's own time before the create request (stand-in engine)"
  AGENTC_BIN=$agentc cargo bench -q -p agentc-conformance --bench api_overhead 2>/dev/null \
    | tee "$out_dir/overhead.txt"
}

criterion() {
  echo "== criterion: the pipeline per fixture"
  cargo bench -q -p agentc-conformance --bench render 2>/dev/null \
    | grep -E '^(pipeline|[a-z-]+/)|time:' | paste - - | awk '{print $1, $3, $4, $5, $6, $7, $8}' \
    | tee "$out_dir/criterion.txt"
}

live() {
  command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
  docker info >/dev/null
  # Globals: the EXIT trap's cleanup reads them after this function has returned.
  image=$(bash scripts/build-test-image.sh --print-tag)
  docker image inspect "$image" >/dev/null 2>&1 || bash scripts/build-test-image.sh "$image" >/dev/null
  work=$(mktemp -d)
  run_profile=bench-run-$$
  fleet_profile=bench-fleet-$$
  agent_image=agentc-bench/claude:$$
  # shellcheck disable=SC2317
  cleanup() {
    for p in "$run_profile" "$fleet_profile"; do
      docker ps -aq --filter "label=io.agentc.profile=$p" | xargs -r docker rm -f >/dev/null
      docker volume ls -q --filter "label=io.agentc.profile=$p" | xargs -r docker volume rm -f >/dev/null
    done
    docker images -q --filter "label=agentc-bench=$$" | xargs -r docker rmi -f >/dev/null 2>&1 || true
    rm -rf "$work"
  }
  trap cleanup EXIT

  # An agent image whose `claude` is the shell, so a preset's launch runs to exit at once.
  mkdir "$work/image"
  printf '#!/bin/sh\nexec /bin/sh "$@"\n' >"$work/image/claude"
  chmod 755 "$work/image/claude"
  printf 'FROM %s\nCOPY claude /bin/claude\nLABEL agentc-bench=%s\n' "$image" "$$" >"$work/image/Dockerfile"
  docker build -q -t "$agent_image" "$work/image" >/dev/null
  printf 'name = "%s"\nagent = "claude-code"\nhome_volume = "%s-home"\n' "$run_profile" "$run_profile" >"$work/run.toml"
  printf 'name = "%s"\nagent = "custom"\n\n[image]\nref = "%s"\ncommand = ["sleep", "300"]\n' \
    "$fleet_profile" "$image" >"$work/fleet.toml"
  cd "$work"

  echo "== run to exit: API backend vs CLI backend vs the docker CLI alone on the same argv"
  local argv
  argv=$("$agentc" render run.toml --backend cli --format shell --image "$agent_image" -- -c true)
  # As agentc does when stdin is not a terminal: no --tty (docker refuses it then).
  argv=${argv/ --tty/}
  # The docker CLI alone needs the home volume the launches create; the first run makes it.
  "$agentc" run run.toml --backend api --image "$agent_image" -- -c true
  hyperfine -N --warmup 2 --runs "$live_runs" --export-markdown "$out_dir/run.md" \
    "$agentc run run.toml --backend api --image $agent_image -- -c true" \
    "$agentc run run.toml --backend cli --image $agent_image -- -c true" \
    "$argv"

  # Docker 20.10's libnetwork can deadlock when many containers on one network stop at once
  # (moby/moby#42545, fixed in 23.0; the 20.10 backport came after 20.10.24): the daemon then
  # hangs for every client until it is restarted. The fan-out comparisons stop and remove
  # $fleet sandboxes at once, so they run only on a daemon with the fix, or with FORCE_FLEET=1
  # on a machine nobody else uses.
  local server_major
  server_major=$(docker version --format '{{.Server.Version}}' | cut -d. -f1)
  if [ "$server_major" -lt 23 ] && [ "${FORCE_FLEET:-0}" != 1 ]; then
    echo "== skipping the $fleet-sandbox comparisons: docker $server_major.x can deadlock under them (moby/moby#42545); FORCE_FLEET=1 runs them anyway"
    cd - >/dev/null
    return
  fi
  echo "== $fleet sandboxes: agentc run --count vs $fleet concurrent docker run -d"
  local base fleet_argv
  base=$("$agentc" render fleet.toml --backend cli --format shell | grep -o -- '--name=[^ ]*' | cut -d= -f2)
  fleet_argv=$("$agentc" render fleet.toml --backend cli --format shell)
  {
    echo "#!/bin/sh"
    for i in $(seq "$fleet"); do
      echo "${fleet_argv/--name=$base /--name=$base-$i } >/dev/null &"
    done
    echo "wait"
  } >"$work/docker-fleet.sh"
  printf 'docker ps -aq --filter label=io.agentc.profile=%s | xargs -r docker rm -f >/dev/null\n' \
    "$fleet_profile" >"$work/remove-fleet.sh"
  printf 'sh %s\n%s run %s --backend api --count %s >/dev/null\n' \
    "$work/remove-fleet.sh" "$agentc" "$work/fleet.toml" "$fleet" >"$work/start-fleet.sh"
  hyperfine -N --runs "$live_runs" --prepare "sh $work/remove-fleet.sh" --export-markdown "$out_dir/fleet.md" \
    "$agentc run fleet.toml --backend api --count $fleet --jobs $jobs" \
    "sh $work/docker-fleet.sh"

  echo "== removing $fleet sandboxes: agentc rm --all --profile vs docker rm -f NAMES"
  local names
  names=$(for i in $(seq "$fleet"); do printf '%s-%s ' "$base" "$i"; done)
  hyperfine -N --runs "$live_runs" \
    --prepare "sh $work/start-fleet.sh" \
    --export-markdown "$out_dir/rm.md" \
    "$agentc rm --all --profile $fleet_profile" \
    "docker rm -f $names"
  cd - >/dev/null
}

case "$what" in
  offline) offline ;;
  overhead) overhead ;;
  criterion) criterion ;;
  live) live ;;
  all) offline; overhead; criterion; live ;;
  *) echo "usage: $0 [offline|overhead|criterion|live|all]" >&2; exit 2 ;;
esac
