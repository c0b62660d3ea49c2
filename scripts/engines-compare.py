#!/usr/bin/env python3
"""Compares what Docker and Podman make of agentc's rendered launches (the evidence behind
docs/engines.md). Not part of CI: a research harness, run by hand as root on a machine set up
by scripts/setup-engines.sh.

For every valid fixture and every launch kind it has (run, each seed target, decant; builds are
skipped) it:
  create  renders `--backend cli --format json`, runs the argv as `docker create` and as
          `podman create` (only the verb and the names change: every container, volume and
          network it makes is renamed to start with agentc-engines-), inspects both, and compares
          the security-relevant fields;
  api     renders `--backend api --format json` and POSTs the body to
          /v1.41/containers/create on the Docker socket and on Podman's compat socket, then
          compares each with the CLI-created container of the same engine;
  probe   runs the launch with a probe in place of the agent (`--entrypoint=/bin/sh -c PROBE`,
          as the agent's uid when the preset image would set one) under each engine and
          compares what the kernel reports inside (capabilities, NoNewPrivs, mounts, cgroup
          limits, rlimits, /etc/hosts, interfaces).

Usage: scripts/engines-compare.py [--only create,api,probe] [--fixture NAME]... [--out DIR]
       [--runtime RUNTIME] [--engines docker,podman]

Writes DIR/results.json (every raw inspect and probe output) and prints a summary. Cleans up
every container, volume and network it created, also when interrupted. The test image
agentc-engines-busybox:test is built (scripts/build-test-image.sh) and loaded into Podman
(`docker save | podman load`) when missing, and kept: `docker image rm` / `podman image rm` it.
"""
import argparse
import glob
import http.client
import json
import os
import re
import socket
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "agentc-engines-"
IMAGE = "agentc-engines-busybox:test"
SOCKETS = {"docker": "/var/run/docker.sock", "podman": "/run/podman/podman.sock"}
DOCKER_DEFAULT_CAPS = {
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}
ENGINE_ENV = ("container=podman", "TERM=xterm")
AGENT_UIDS = {"claude": "1000:1000", "codex": "1000:1000", "opencode": "1000:1000",
              "hermes": "10000:10000"}
# Secrets are passed by name; one is set (to a dummy) to see that both engines pass it through,
# the others stay unset to see that both omit them.
ENV = dict(os.environ, ANTHROPIC_API_KEY="agentc-engines-dummy")
for unset in ("OPENAI_API_KEY", "LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY"):
    ENV.pop(unset, None)

PROBE = r"""
echo "id=$(id -u):$(id -g)"
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
echo "pid1=$(cat /proc/1/comm)"
echo "kernel=$(uname -r)"
echo "dmesg0=$(dmesg 2>&1 | head -1 | sed 's/^\[ *[0-9.]*\] //')"
echo "nofile=$(ulimit -n) nproc=$(ulimit -u)"
cg() { for f in "$@"; do [ -r "$f" ] && { echo "$f=$(cat "$f")"; return; }; done; echo "$1=absent"; }
cg /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes
cg /sys/fs/cgroup/memory.swap.max /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes
cg /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max
cg /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us
awk '$2 !~ "^/(proc|sys|dev)/." || $2 == "/dev/shm" || $2 == "/sys/fs/cgroup" {o=$4; gsub(/,(lowerdir|upperdir|workdir)=[^,]*/, "", o); print "mount " $2 " " $3 " " o}' /proc/mounts | sort
echo "shm=$(df -k /dev/shm | awk 'NR==2 {print $2}')k"
awk '$2 == "/" {split($4, o, ","); print "rootfs=" o[1]}' /proc/mounts
grep -v '^#' /etc/hosts | grep -v '^$' | sed 's/^/hosts /'
ip -o link 2>/dev/null | awk '{print "link " $2}'
ls /dev | tr '\n' ' ' | sed 's/^/dev /'; echo
"""


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, env=ENV, **kw)


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=60)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def api(engine, method, url, body=None):
    conn = Unix(SOCKETS[engine])
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, url, body=data, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    raw = resp.read().decode(errors="replace")
    conn.close()
    return resp.status, raw


# ---------------------------------------------------------------- rendering


def agentc(*args):
    return run([os.path.join(ROOT, "target/debug/agentc"), *args], cwd=ROOT)


def launches(fixture):
    """(kind, seed_target) pairs this fixture renders."""
    out = [("run", None)]
    p = agentc("render", fixture, "--kind", "seed", "--format", "json", "--image", IMAGE)
    m = re.search(r"one of: (.*)", p.stderr)
    if m:
        out += [("seed", t.strip()) for t in m.group(1).split(", ")]
    p = agentc("render", fixture, "--kind", "decant", "--format", "json", "--image", IMAGE)
    if p.returncode == 0:
        out.append(("decant", None))
    return out


def render(fixture, kind, target, backend):
    args = ["render", fixture, "--kind", kind, "--backend", backend, "--format", "json",
            "--image", IMAGE]
    if target:
        args += ["--seed-target", target]
    p = agentc(*args)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    return json.loads(p.stdout)


def rename_network(name):
    if name in ("none", "host", "bridge", "default", "") or name.startswith(("container:", "ns:")):
        return name
    return PREFIX + "net-" + name


class Made:
    """Everything created, for cleanup."""

    def __init__(self):
        self.containers = {"docker": set(), "podman": set()}
        self.volumes = {"docker": set(), "podman": set()}
        self.networks = {"docker": set(), "podman": set()}

    def network(self, engine, name):
        if name == rename_network(name) or name in self.networks[engine]:
            return
        run([engine, "network", "create", name])
        self.networks[engine].add(name)

    def cleanup(self, containers_only=False):
        for engine in ("docker", "podman"):
            for c in sorted(self.containers[engine]):
                run([engine, "rm", "-f", "-v", c])
            self.containers[engine].clear()
            if containers_only:
                continue
            for v in sorted(self.volumes[engine]):
                run([engine, "volume", "rm", "-f", v])
            for n in sorted(self.networks[engine]):
                run([engine, "network", "rm", n])


def gateway(engine, network):
    """The gateway address of a network (the default one for none/default/bridge)."""
    if network in (None, "none", "default", "bridge", "host"):
        network = "podman" if engine == "podman" else "bridge"
    p = run([engine, "network", "inspect", network])
    data = json.loads(p.stdout)[0]
    if engine == "podman":
        return data["subnets"][0]["gateway"]
    return data["IPAM"]["Config"][0]["Gateway"]


def non_root(user):
    return bool(user) and user.split(":")[0] not in ("0", "root")


def adapt_podman_cli(flags, user):
    """The rewrites docs/engines.md recommends for `podman` argv (agentc does not render them
    yet): each line names the difference it removes."""
    network = next((f[len("--network="):] for f in flags if f.startswith("--network=")), None)
    out = []
    for a in flags:
        if a.startswith("--add-host=") and a.endswith(":host-gateway"):
            # podman 4.3 refuses host-gateway: the network's gateway address instead
            a = a[: -len("host-gateway")] + gateway("podman", network)
        elif a.startswith("--mount=") and "type=volume" in a.split(","):
            # podman 4.3 takes `ro`, not `readonly`, on a volume mount (docker takes both)
            a = ",".join("ro" if f == "readonly" else f for f in a.split(","))
        elif a.startswith("--tmpfs=") and ":" not in a:
            # podman's tmpfs default is exec; docker's is noexec,nosuid,nodev
            a += ":rw,noexec,nosuid,nodev"
        elif a == "--read-only":
            # podman adds a writable, executable /var/tmp tmpfs to a read-only root
            out.append("--read-only-tmpfs=false")
        elif a == "--log-driver=json-file":
            # podman's json-file is k8s-file under another name; say so
            a = "--log-driver=k8s-file"
        elif a.startswith("--log-opt=max-file="):
            # k8s-file has no rotation count: max-size truncates one file
            continue
        elif a.startswith("--cap-add=") and non_root(user) and \
                "--security-opt=no-new-privileges" in flags:
            # podman makes added capabilities ambient for a non-root user; docker leaves them
            # unreachable (bounding only, no-new-privileges): drop them to get docker's result
            continue
        out.append(a)
    out.append("--ipc=private")  # podman's default is shareable
    if not any(f.startswith("--shm-size=") for f in flags):
        out.append("--shm-size=67108864")  # podman's default is 65536000
    return out


def cli_argv(argv, engine, verb, name, made, probe_user=None, adapt=False):
    """The rendered docker argv as `ENGINE VERB`, renamed; with probe_user, the command is the
    probe and the launch is non-interactive."""
    assert argv[0] == "docker" and argv[1] == "run", argv[:2]
    flags, rest, i = [], [], 2
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-"):
            rest = argv[i:]
            break
        i += 1
        if a in ("--detach",) and verb == "create":
            continue
        if probe_user is not None and a in ("--detach", "--interactive", "--tty"):
            continue
        if a.startswith("--name="):
            continue
        if probe_user is not None and a.startswith("--entrypoint="):
            continue
        if a.startswith("--mount="):
            fields = a[len("--mount="):].split(",")
            if "type=volume" in fields:
                fields = [(f.replace("source=", "source=" + PREFIX, 1)
                           if f.startswith("source=") else f) for f in fields]
                vol = [f for f in fields if f.startswith("source=")][0][len("source="):]
                made.volumes[engine].add(vol)
            a = "--mount=" + ",".join(fields)
        if a.startswith("--network="):
            net = rename_network(a[len("--network="):])
            made.network(engine, net)
            a = "--network=" + net
        flags.append(a)
    user = next((f[len("--user="):] for f in flags if f.startswith("--user=")), None)
    if probe_user and user is None:
        user = probe_user
        flags.append("--user=" + probe_user)
    if adapt and engine == "podman":
        flags = adapt_podman_cli(flags, user)
    out = [engine, verb, "--name=" + name] + flags
    if probe_user is not None:
        out += ["--entrypoint=/bin/sh", rest[0], "-c", PROBE]
    else:
        out += rest
    return out


def api_body(body, made, engine, adapt=False):
    body = json.loads(json.dumps(body))
    hc = body.get("HostConfig", {})
    for m in hc.get("Mounts") or []:
        if m.get("Type") == "volume":
            m["Source"] = PREFIX + m["Source"]
            made.volumes[engine].add(m["Source"])
    nm = hc.get("NetworkMode")
    if nm:
        new = rename_network(nm)
        made.network(engine, new)
        hc["NetworkMode"] = new
        ec = (body.get("NetworkingConfig") or {}).get("EndpointsConfig") or {}
        if nm in ec:
            ec[new] = ec.pop(nm)
    if adapt and engine == "podman":
        adapt_podman_api(body)
    return body


def adapt_podman_api(body):
    """The rewrites docs/engines.md recommends for a body sent to podman's compat API."""
    hc = body["HostConfig"]
    nm = hc.get("NetworkMode")
    hc["ExtraHosts"] = [h[: -len("host-gateway")] + gateway("podman", nm)
                        if h.endswith(":host-gateway") else h for h in hc.get("ExtraHosts") or []]
    tmpfs = hc.get("Tmpfs") or {}
    for k, v in tmpfs.items():
        if v == "":
            tmpfs[k] = "rw,noexec,nosuid,nodev"
    if hc.get("ReadonlyRootfs") and "/var/tmp" not in tmpfs:
        # the compat API cannot turn off podman's /var/tmp tmpfs: make it noexec at least
        tmpfs["/var/tmp"] = "rw,noexec,nosuid,nodev"
    if tmpfs:
        hc["Tmpfs"] = tmpfs
    hc["IpcMode"] = "private"
    hc.setdefault("ShmSize", 67108864)
    log = hc.get("LogConfig")
    if log and log.get("Type") == "json-file":
        log["Type"] = "k8s-file"
        (log.get("Config") or {}).pop("max-file", None)
    if non_root(body.get("User")) and "no-new-privileges" in (hc.get("SecurityOpt") or []):
        hc["CapAdd"] = []


# ---------------------------------------------------------------- normalizing


def caps(names):
    return {n if n.startswith("CAP_") or n == "ALL" else "CAP_" + n for n in names or []}


def normalize(engine, ins):
    hc, cfg = ins["HostConfig"], ins["Config"]
    ep = cfg.get("Entrypoint")
    if engine == "docker":
        drop, add = caps(hc.get("CapDrop")), caps(hc.get("CapAdd"))
        eff = set() if "ALL" in drop else DOCKER_DEFAULT_CAPS - drop
        eff |= add
        log = {"type": hc["LogConfig"]["Type"], **(hc["LogConfig"].get("Config") or {})}
    else:
        eff = set(ins.get("EffectiveCaps") or [])
        log = {"type": hc["LogConfig"]["Type"], **(hc["LogConfig"].get("Config") or {})}
        if hc["LogConfig"].get("Size"):
            log["Size"] = hc["LogConfig"]["Size"]
    mounts = sorted(
        "%s %s -> %s %s%s" % (m.get("Type"), m.get("Name") or m.get("Source"), m.get("Destination"),
                              "rw" if m.get("RW") else "ro",
                              (" " + ",".join(m["Options"])) if m.get("Options") else "")
        for m in ins.get("Mounts") or [])
    ports = {k: sorted((b.get("HostIp", ""), b.get("HostPort", "")) for b in (v or []))
             for k, v in (hc.get("PortBindings") or {}).items()}
    # podman adds container=podman and TERM=xterm to every container (documented difference)
    env = sorted(e for e in cfg.get("Env") or []
                 if not e.startswith(("PATH=", "HOSTNAME=")) and e not in ENGINE_ENV)
    labels = {k: v for k, v in (cfg.get("Labels") or {}).items() if k != "agentc-test.image"}
    return {
        "caps_effective": sorted(eff),
        "readonly_rootfs": hc.get("ReadonlyRootfs"),
        "security_opt": sorted(hc.get("SecurityOpt") or []),
        "tmpfs": hc.get("Tmpfs") or {},
        "mounts": mounts,
        "network_mode": hc.get("NetworkMode") if hc.get("NetworkMode") in ("none", "host")
        else sorted("(default)" if n in ("bridge", "podman") else n
                    for n in (ins.get("NetworkSettings") or {}).get("Networks") or {}),
        "port_bindings": ports,
        "memory": hc.get("Memory"),
        "memory_swap": hc.get("MemorySwap"),
        "shm_size": hc.get("ShmSize"),
        "nano_cpus": hc.get("NanoCpus"),
        "pids_limit": hc.get("PidsLimit"),
        "log": log,
        "extra_hosts": sorted(hc.get("ExtraHosts") or []),
        "init": hc.get("Init"),
        "user": cfg.get("User"),
        "env": env,
        "labels": labels,
        "auto_remove": hc.get("AutoRemove"),
        "ipc_mode": hc.get("IpcMode"),
        "devices": sorted("%s:%s:%s" % (d.get("PathOnHost"), d.get("PathInContainer"),
                                        d.get("CgroupPermissions"))
                          for d in hc.get("Devices") or []),
        "ulimits": sorted("%s=%s:%s" % (u["Name"], u["Soft"], u["Hard"])
                          for u in hc.get("Ulimits") or []),
        "runtime": hc.get("Runtime"),
        "entrypoint": ep if isinstance(ep, list) else ([ep] if ep else None),
        "cmd_head": (cfg.get("Cmd") or [None])[0],
        "workdir": cfg.get("WorkingDir") or "/",
    }


def diff(a, b):
    return {k: {"docker": a[k], "podman": b[k]} for k in a if a[k] != b.get(k)}


def inspect(engine, name):
    p = run([engine, "inspect", "--type", "container", name])
    return json.loads(p.stdout)[0] if p.returncode == 0 else None


def parse_probe(text):
    out = {}
    for line in text.splitlines():
        if line.startswith(("mount ", "hosts ", "link ")):
            k = line.split(" ", 1)[0]
            out.setdefault(k, []).append(line.split(" ", 1)[1])
        elif "=" in line and not line.startswith("dev "):
            k, v = line.split("=", 1)
            out[k] = v
        elif ":" in line and not line.startswith("dev "):
            k, v = line.split(":", 1)
            out[k] = v.strip()
        elif line.startswith("dev "):
            out["dev"] = line[4:].strip()
    return out


# ---------------------------------------------------------------- main


def ensure_image():
    if run(["docker", "image", "inspect", IMAGE]).returncode != 0:
        p = run([os.path.join(ROOT, "scripts/build-test-image.sh"), IMAGE])
        if p.returncode != 0:
            sys.exit("cannot build %s: %s" % (IMAGE, p.stderr.strip()))
    if run(["podman", "image", "exists", IMAGE]).returncode != 0:
        subprocess.run("docker save %s | podman load -q" % IMAGE, shell=True, check=True,
                       stdout=subprocess.DEVNULL)



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="create,api,probe")
    ap.add_argument("--fixture", action="append")
    ap.add_argument("--out", default="/tmp/agentc-engines-compare")
    ap.add_argument("--engines", default="docker,podman",
                    help="two of docker, podman, ENGINE@RUNTIME (--runtime=RUNTIME added to the "
                    "probe launches), such as docker,docker@runsc")
    ap.add_argument("--adapt", action="store_true",
                    help="apply the podman rewrites docs/engines.md recommends")
    args = ap.parse_args()
    modes = set(args.only.split(","))
    engines = args.engines.split(",")
    plain = sorted({e.partition("@")[0] for e in engines})
    os.makedirs(args.out, exist_ok=True)
    fixtures = sorted(glob.glob(os.path.join(ROOT, "fixtures/valid/*.toml")))
    if args.fixture:
        fixtures = [f for f in fixtures if os.path.basename(f)[:-5] in args.fixture]
    ensure_image()
    made = Made()
    results = []
    try:
        for fx in fixtures:
            stem = os.path.basename(fx)[:-5]
            agent = re.search(r'^agent\s*=\s*"([^"]+)"', open(fx).read(), re.M).group(1)
            for kind, target in launches(fx):
                label = stem + ":" + kind + (":" + target if target else "")
                r = {"launch": label}
                results.append(r)
                try:
                    argv = render(fx, kind, target, "cli")
                    body = render(fx, kind, target, "api")
                except RuntimeError as e:
                    r["render_error"] = str(e)
                    print("%-60s render error: %s" % (label, str(e).splitlines()[0]))
                    continue
                name = PREFIX + re.sub(r"[^a-zA-Z0-9_.-]", "-", label)[:100]
                norm = {}
                if "create" in modes:
                    for engine in plain:
                        cmd = cli_argv(argv, engine, "create", name, made, adapt=args.adapt)
                        p = run(cmd)
                        made.containers[engine].add(name)
                        r["cli_" + engine] = {"rc": p.returncode, "stderr": p.stderr.strip()}
                        if p.returncode == 0:
                            ins = inspect(engine, name)
                            r["cli_" + engine]["inspect"] = ins
                            norm[engine] = normalize(engine, ins)
                            r["cli_" + engine]["normalized"] = norm[engine]
                    if len(norm) == 2:
                        r["cli_diff"] = diff(norm["docker"], norm["podman"])
                    made.cleanup(containers_only=True)
                if "api" in modes:
                    for engine in plain:
                        b = api_body(body["body"], made, engine, adapt=args.adapt)
                        st, raw = api(engine, "POST", "/v1.41/containers/create?name=" + name, b)
                        made.containers[engine].add(name)
                        r["api_" + engine] = {"status": st, "response": raw.strip()}
                        if st == 201:
                            ins = inspect(engine, name)
                            n = normalize(engine, ins)
                            r["api_" + engine]["normalized"] = n
                            if engine in norm:
                                r["api_" + engine]["diff_vs_cli"] = {
                                    k: {"cli": norm[engine][k], "api": n[k]}
                                    for k in n if n[k] != norm[engine][k]}
                    made.cleanup(containers_only=True)
                if "probe" in modes and kind != "decant":
                    probes = {}
                    user = AGENT_UIDS.get(agent, "") if kind == "run" else ""
                    for spec in engines:
                        engine, _, runtime = spec.partition("@")
                        cmd = cli_argv(argv, engine, "run", name, made, probe_user=user,
                                       adapt=args.adapt)
                        if runtime:
                            cmd.insert(2, "--runtime=" + runtime)
                        try:
                            p = run(cmd, timeout=120)
                        except subprocess.TimeoutExpired:
                            p = subprocess.CompletedProcess(cmd, 124, "", "timed out")
                        made.containers[engine].add(name)
                        probes[spec] = parse_probe(p.stdout)
                        r["probe_" + spec] = {"rc": p.returncode, "stdout": p.stdout,
                                              "stderr": p.stderr.strip()[-2000:]}
                        r["probe_" + spec]["left_behind"] = inspect(engine, name) is not None
                        made.cleanup(containers_only=True)
                    if len(probes) == 2:
                        a, b = probes[engines[0]], probes[engines[1]]
                        r["probe_diff"] = {k: {engines[0]: a.get(k), engines[1]: b.get(k)}
                                           for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}
                    made.cleanup(containers_only=True)
                summary = []
                for engine in engines:
                    c = r.get("cli_" + engine)
                    if c:
                        summary.append("%s-cli:%s" % (engine, "ok" if c["rc"] == 0 else "REFUSED"))
                    a = r.get("api_" + engine)
                    if a:
                        summary.append("%s-api:%s" % (engine, "ok" if a["status"] == 201 else a["status"]))
                    pr = r.get("probe_" + engine)
                    if pr:
                        summary.append("%s-probe:rc=%s" % (engine, pr["rc"]))
                if "cli_diff" in r:
                    summary.append("diff:" + ",".join(sorted(r["cli_diff"])))
                if "probe_diff" in r:
                    summary.append("probediff:" + ",".join(sorted(r["probe_diff"])))
                print("%-60s %s" % (label, " ".join(summary)), flush=True)
    finally:
        made.cleanup()
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
