#!/usr/bin/env bash
# Installs and configures the second engine and runtime agentc's tests use besides Docker:
# Podman (CLI and its Docker-compatible API socket) and gVisor (runsc), both from Debian.
# Idempotent; run as root (by .ci/run, or by hand). Never restarts dockerd: a runtime is
# registered by merging /etc/docker/daemon.json and sending SIGHUP (a reload). docs/engines.md
# explains every choice made here.
#
# Usage: scripts/setup-engines.sh
# Environment:
#   AGENTC_RUNSC_NETWORK  sandbox | host | none: the runsc --network mode registered as the
#                         `runsc` runtime (default: detected, see runsc_network below)
#   AGENTC_PODMAN_SOCKET  the API socket to serve (default /run/podman/podman.sock)
#
# Leaves behind (all named agentc):
#   packages    podman netavark aardvark-dns conmon catatonit slirp4netns uidmap runsc (Debian)
#   files       /etc/containers/containers.conf.d/50-agentc.conf (rlimits, runsc)
#               /etc/containers/registries.conf.d/50-agentc.conf (no pulls from public registries)
#               /usr/local/libexec/agentc/runsc (runsc with the chosen --network, for podman)
#               /etc/docker/daemon.json gains "runtimes": {"runsc": ...}; the first run keeps the
#               original as /etc/docker/daemon.json.agentc-orig
#   a process   `podman system service` on AGENTC_PODMAN_SOCKET (pid in /run/podman/agentc-service.pid,
#               log in /var/log/agentc-podman-service.log)
set -euo pipefail

socket=${AGENTC_PODMAN_SOCKET:-/run/podman/podman.sock}
conf_d=/etc/containers/containers.conf.d
conf=$conf_d/50-agentc.conf
registries=/etc/containers/registries.conf.d/50-agentc.conf
wrapper=/usr/local/libexec/agentc/runsc
daemon_json=/etc/docker/daemon.json
pidfile=/run/podman/agentc-service.pid
service_log=/var/log/agentc-podman-service.log

say() { printf 'setup-engines: %s\n' "$*"; }
die() { printf 'setup-engines: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root"

# ------------------------------------------------------------------ packages
packages=(podman netavark aardvark-dns conmon catatonit slirp4netns uidmap runsc)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    say "installing ${missing[*]}"
    apt-get update -qq
    # No recommends: they pull buildah, dbus-user-session and the rest of a desktop stack.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ------------------------------------------------------------------ runsc network mode
# Debian's runsc (0.0~20221219) decides "this is the host's network namespace" by whether
# /proc/sys/net/core/rmem_default exists (gVisor issue 10704). Kernels since about 6.8 show that
# file in every network namespace, so runsc's own netstack (--network=sandbox, the default)
# refuses every container that has a network namespace: "cannot run with network enabled in
# root network namespace". --network=host (gVisor's sentry uses the kernel's stack inside the
# container's own network namespace, still set up by the engine) works; so does none.
runsc_network() {
    if [[ -n ${AGENTC_RUNSC_NETWORK:-} ]]; then
        case $AGENTC_RUNSC_NETWORK in
            sandbox | host | none) printf '%s\n' "$AGENTC_RUNSC_NETWORK"; return ;;
            *) die "AGENTC_RUNSC_NETWORK must be sandbox, host or none, not '$AGENTC_RUNSC_NETWORK'" ;;
        esac
    fi
    local release
    release=$(runsc --version 2>/dev/null | grep -o '20[0-9]\{6\}' | head -1 || true)
    if unshare --net sh -c 'test -e /proc/sys/net/core/rmem_default' 2>/dev/null \
        && [[ -n $release && $release -lt 20240801 ]]; then
        printf 'host\n'
    else
        printf 'sandbox\n'
    fi
}
network=$(runsc_network)
runsc_args=()
[[ $network == sandbox ]] || runsc_args=("--network=$network")

# ------------------------------------------------------------------ helpers
# Writes stdin to $1 only when it differs; returns 0 when the file changed.
write_if_changed() {
    local path=$1 tmp
    tmp=$(mktemp "$path.XXXXXX")
    cat >"$tmp"
    if [[ -f $path ]] && cmp -s "$tmp" "$path"; then
        rm -f "$tmp"
        return 1
    fi
    chmod 0644 "$tmp"
    mv "$tmp" "$path"
    return 0
}

# ------------------------------------------------------------------ podman configuration
mkdir -p "$conf_d" "$(dirname "$registries")" "$(dirname "$wrapper")"
changed=0

{
    printf '#!/bin/sh\n# Written by agentc scripts/setup-engines.sh: runsc with --network=%s (docs/engines.md).\n' "$network"
    printf 'exec /usr/bin/runsc %s"$@"\n' "${runsc_args[*]:+${runsc_args[*]} }"
} | write_if_changed "$wrapper" && changed=1
chmod 0755 "$wrapper"

# rlimits: rootful podman 4.3 asks the OCI runtime for nofile=1048576 (and nproc=1048576 when
# any --ulimit is given), regardless of its own hard limits. Raising a hard limit needs
# CAP_SYS_RESOURCE; where the machine withholds it (this VM's bounding set lacks it), runc fails
# with "error setting rlimit type 7" (nofile) or "type 6" (nproc). The defaults below are the
# limits this process already has, which runc can always set. podman also lowers its own nproc
# to kernel.pid_max when it starts, hence the min().
can_raise_limits() {
    local hard
    hard=$(ulimit -Hn)
    [[ $hard == unlimited ]] && return 0
    (ulimit -Hn $((hard + 1))) 2>/dev/null
}
ulimits_line='# the machine lets the runtime raise hard limits: podman defaults kept'
if ! can_raise_limits; then
    nofile=$(ulimit -Hn)
    ((nofile > 1048576)) && nofile=1048576
    nproc=$(ulimit -Hu)
    pid_max=$(cat /proc/sys/kernel/pid_max)
    [[ $nproc == unlimited ]] && nproc=$pid_max
    ((nproc > pid_max)) && nproc=$pid_max
    ulimits_line="default_ulimits = [\"nofile=$nofile:$nofile\", \"nproc=$nproc:$nproc\"]"
fi

cat <<EOF | write_if_changed "$conf" && changed=1
# Written by agentc scripts/setup-engines.sh (docs/engines.md). Only what this machine needs:
# agentc renders every security-relevant setting itself, so none is set here.
[containers]
# this machine withholds CAP_SYS_RESOURCE: podman's default rlimits cannot be set by runc.
# Note: any --ulimit on the command line replaces this whole list.
$ulimits_line

[engine.runtimes]
# gVisor, with the network mode this machine supports (--network=$network)
runsc = ["$wrapper"]
EOF

cat <<'EOF' | write_if_changed "$registries" && changed=1
# Written by agentc scripts/setup-engines.sh: tests never pull; no short name expands to a
# public registry, and the registries short-name aliases point at are blocked.
unqualified-search-registries = []

[[registry]]
location = "docker.io"
blocked = true

[[registry]]
location = "quay.io"
blocked = true
EOF

# ------------------------------------------------------------------ docker: register runsc
register_docker_runtime() {
    [[ -f $daemon_json ]] || echo '{}' >"$daemon_json"
    [[ -f $daemon_json.agentc-orig ]] || cp -p "$daemon_json" "$daemon_json.agentc-orig"
    local merged
    merged=$(mktemp "$daemon_json.XXXXXX")
    python3 - "$daemon_json" "$merged" "${runsc_args[@]}" <<'PY'
import json, sys
src, dst, args = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(src) as f:
    config = json.load(f)
entry = {"path": "/usr/bin/runsc"}
if args:
    entry["runtimeArgs"] = args
config.setdefault("runtimes", {})["runsc"] = entry
with open(dst, "w") as f:
    json.dump(config, f, indent=2)
    f.write("\n")
PY
    if cmp -s "$merged" "$daemon_json"; then
        rm -f "$merged"
        return 1
    fi
    chmod --reference="$daemon_json" "$merged"
    mv "$merged" "$daemon_json"
    return 0
}

docker_has_runsc() {
    docker info --format '{{json .Runtimes}}' 2>/dev/null | python3 -c '
import json, sys
runtimes = json.load(sys.stdin) or {}
want = sys.argv[1:]
entry = runtimes.get("runsc") or {}
sys.exit(0 if entry.get("path") == "/usr/bin/runsc" and (entry.get("runtimeArgs") or []) == want else 1)
' "${runsc_args[@]}"
}

if register_docker_runtime; then
    say "registered runsc (--network=$network) in $daemon_json"
fi
if pid=$(pidof dockerd); then
    if ! docker_has_runsc; then
        say "reloading dockerd (SIGHUP, pid $pid)"
        kill -HUP "$pid"
        for _ in $(seq 1 30); do
            docker_has_runsc && break
            sleep 1
        done
        docker_has_runsc || die "dockerd does not list the runsc runtime after a reload; see $daemon_json"
    fi
    docker info --format '{{.ServerVersion}}' >/dev/null || die "docker info fails after the reload"
else
    say "dockerd is not running: runsc is registered for its next start"
fi

# ------------------------------------------------------------------ podman API socket
ping() { curl -sf --max-time 5 --unix-socket "$socket" http://d/_ping >/dev/null 2>&1; }
ours_running() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

if ((changed)) && ours_running; then
    # The service reads containers.conf once, at start: restart the one this script started.
    say "configuration changed: restarting the podman service (pid $(cat "$pidfile"))"
    kill "$(cat "$pidfile")"
    for _ in $(seq 1 20); do ours_running || break; sleep 0.5; done
    rm -f "$pidfile"
fi
if ! ping; then
    mkdir -p "$(dirname "$socket")"
    rm -f "$socket"
    setsid podman system service --time=0 "unix://$socket" </dev/null >>"$service_log" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 30); do ping && break; sleep 0.5; done
    ping || die "podman system service did not answer on $socket (log: $service_log)"
    say "podman API on unix://$socket (pid $(cat "$pidfile"))"
fi

# ------------------------------------------------------------------ versions
say "versions:"
printf '  podman   %s\n' "$(podman version --format '{{.Client.Version}}')"
printf '  api      %s\n' "$(curl -s --unix-socket "$socket" http://d/version | python3 -c 'import json,sys; d=json.load(sys.stdin); print("Podman %s, Docker API %s (min %s)" % (d["Version"], d["ApiVersion"], d["MinAPIVersion"]))')"
printf '  runc     %s\n' "$(runc --version | head -1)"
printf '  runsc    %s (registered with --network=%s)\n' "$(runsc --version | head -1)" "$network"
printf '  conmon   %s\n' "$(conmon --version | head -1)"
printf '  docker   %s, runtimes: %s\n' "$(docker info --format '{{.ServerVersion}}' 2>/dev/null || echo 'not running')" \
    "$(docker info --format '{{range $name, $_ := .Runtimes}}{{$name}} {{end}}' 2>/dev/null)"
printf '  rlimits  %s\n' "${ulimits_line#default_ulimits = }"
