"""Strict validation of agentc's Kubernetes renderings (called by scripts/k8s-validate.sh).

Usage: k8s_validate.py OUT_DIR SANDBOX_CRD VENV_BIN

OUT_DIR/rendered/*.json are `v1` Lists from `agentc render --backend k8s --format json`. Every
object is split into its own file under OUT_DIR/objects; each Sandbox is checked against the
CRD's openAPIV3Schema with every object schema closed, and its pod template is wrapped in a
v1 Pod. Then kubernetes-validate --strict and checkov run on all of them. Exits 1 on any
failure or warning, printing each.
"""

import copy
import json
import pathlib
import subprocess
import sys

import jsonschema
import yaml

KUBERNETES_VERSION = "1.33.0"

# checkov checks skipped for every object, each with the reason it does not apply to agentc.
SKIPPED_CHECKS = {
    # Liveness/readiness probes: an agent is an interactive process or a sandbox kept alive by
    # its command, with no endpoint to probe (the egress proxy has both probes).
    "CKV_K8S_8": "liveness probe",
    "CKV_K8S_9": "readiness probe",
    # CPU requests and limits: a profile without resources.cpus is unlimited on Docker too;
    # agentc renders requests = limits whenever a limit is set.
    "CKV_K8S_10": "cpu requests",
    "CKV_K8S_11": "cpu limits",
    # Image tags and digests: the presets' images are `<agent>:latest` as on Docker; pinning
    # a digest is the profile's (image.ref) and is reported by agentc's own findings.
    "CKV_K8S_14": "image tag latest",
    "CKV_K8S_43": "image digest",
    # Pull policy Always: the cluster's choice; agentc never pulls on its own either.
    "CKV_K8S_15": "image pull policy",
    # Secrets as files: agentc passes secrets as environment variables by name, as on Docker,
    # from a secretKeyRef (never a value in the objects).
    "CKV_K8S_35": "secrets as environment variables",
    # uid above 10000: the agent images' users are uid 1000 (Hermes 10000); the proxy runs as
    # nobody (65534).
    "CKV_K8S_40": "high uid",
}

# checkov checks skipped for one rendering, with the profile field that asks for it. The skip
# is an annotation on the copy under OUT_DIR only, never in agentc's output.
SKIPPED_FOR = {
    # security.read_only_root = false: a writable root, as the profile asks and as on Docker.
    "sandbox-writable-root": {"CKV_K8S_22": "security.read_only_root is false"},
    "finding-root-writable": {"CKV_K8S_22": "security.read_only_root is false"},
    # Decant's companion runs with a writable root on Docker (agent-containers' own launch).
    "decant": {"CKV_K8S_22": "Decant's image writes to its root filesystem"},
    # security.add_capabilities = ["NET_BIND_SERVICE"]: the one capability restricted allows.
    "finding-capability-added": {"CKV_K8S_25": "NET_BIND_SERVICE, which restricted allows"},
    # AGENTC_MEM_LIMIT=off: memory unlimited, as the profile's environment asks.
    "finding-memory-unlimited": {
        "CKV_K8S_12": "AGENTC_MEM_LIMIT is off",
        "CKV_K8S_13": "AGENTC_MEM_LIMIT is off",
    },
    # resources.memory = "off": memory unlimited, as the profile asks and as on Docker
    # (reported as the memory-unlimited finding).
    "sandbox-limits-off": {
        "CKV_K8S_12": "resources.memory is off",
        "CKV_K8S_13": "resources.memory is off",
    },
    # kubernetes.pod_security = "baseline" with security.add_capabilities: capabilities from
    # Docker's default set, which baseline allows and explain reports as weaker.
    "kubernetes-baseline": {"CKV_K8S_25": "kubernetes.pod_security is baseline"},
}

failures = []


def fail(text):
    failures.append(text)
    print(f"FAIL {text}")


def closed(schema):
    """The schema with every object that declares properties refusing any other field."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node \
                    and not node.get("x-kubernetes-preserve-unknown-fields"):
                node["additionalProperties"] = False
            if node.get("x-kubernetes-int-or-string"):
                node.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


# The keys of SKIPPED_FOR that matched a rendering: a key matching none is stale.
used_skips = set()


def skips_for(stem):
    skips = {}
    for key, checks in SKIPPED_FOR.items():
        if key in stem.split("--"):
            skips.update(checks)
            used_skips.add(key)
    return skips


def main():
    out = pathlib.Path(sys.argv[1])
    crd = yaml.safe_load(pathlib.Path(sys.argv[2]).read_text())
    venv_bin = pathlib.Path(sys.argv[3])
    def validator_of(crd):
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
        return jsonschema.Draft7Validator(closed(version["schema"]["openAPIV3Schema"]))

    validator = validator_of(crd)
    # The warm pool's objects (issue 22), from the CRDs beside the Sandbox's.
    crds = pathlib.Path(sys.argv[2]).parent
    validators = {"Sandbox": validator}
    for kind, file in (
        ("SandboxTemplate", "extensions.agents.x-k8s.io_sandboxtemplates.yaml"),
        ("SandboxWarmPool", "extensions.agents.x-k8s.io_sandboxwarmpools.yaml"),
        ("SandboxClaim", "extensions.agents.x-k8s.io_sandboxclaims.yaml"),
    ):
        validators[kind] = validator_of(yaml.safe_load((crds / file).read_text()))

    objects = out / "objects"
    objects.mkdir()
    counts = {}
    for rendered in sorted((out / "rendered").glob("*.json")):
        listing = json.loads(rendered.read_text())
        if listing.get("apiVersion") != "v1" or listing.get("kind") != "List":
            fail(f"{rendered.name}: not a v1 List")
            continue
        for index, item in enumerate(listing["items"]):
            kind = item.get("kind")
            counts[kind] = counts.get(kind, 0) + 1
            stem = f"{rendered.stem}--{index}-{kind}"
            if kind in ("SandboxWarmPool", "SandboxClaim"):
                for error in validators[kind].iter_errors(item):
                    path = "/".join(str(part) for part in error.absolute_path)
                    fail(f"{stem}: CRD schema at /{path}: {error.message}")
                continue
            if kind in ("Sandbox", "SandboxTemplate"):
                for error in validators[kind].iter_errors(item):
                    path = "/".join(str(part) for part in error.absolute_path)
                    fail(f"{stem}: CRD schema at /{path}: {error.message}")
                template = item["spec"]["podTemplate"]
                item = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": item["metadata"]["name"],
                        "namespace": item["metadata"].get("namespace", "default"),
                        **template.get("metadata", {}),
                    },
                    "spec": template["spec"],
                }
                stem += "-template"
            skips = skips_for(rendered.stem) if item["kind"] == "Pod" else {}
            if skips:
                annotations = item["metadata"].setdefault("annotations", {})
                for number, (check, reason) in enumerate(sorted(skips.items()), 1):
                    # checkov splits the annotation at its one '='.
                    annotations[f"checkov.io/skip{number}"] = f"{check}={reason.replace('=', ':')}"
            (objects / f"{stem}.yaml").write_text(yaml.safe_dump(item, sort_keys=True))
    print("objects:", ", ".join(f"{count} {kind}" for kind, count in sorted(counts.items())))
    for key in sorted(set(SKIPPED_FOR) - used_skips):
        fail(f"SKIPPED_FOR[{key!r}] matches no rendering: remove it or fix the fixture's name")

    files = sorted(str(path) for path in objects.glob("*.yaml"))
    result = subprocess.run(
        [str(venv_bin / "kubernetes-validate"), "--strict", "-k", KUBERNETES_VERSION, *files],
        capture_output=True,
        text=True,
    )
    output = result.stdout + result.stderr
    passed = 0
    for line in output.splitlines():
        if line.startswith("INFO") and "passed" in line:
            passed += 1
        elif line.strip():
            fail(f"kubernetes-validate: {line}")
    if result.returncode != 0:
        fail(f"kubernetes-validate exited {result.returncode}")
    if passed != len(files):
        fail(f"kubernetes-validate passed {passed} of {len(files)} files")
    print(f"kubernetes-validate --strict -k {KUBERNETES_VERSION}: {passed} of {len(files)} passed")

    result = subprocess.run(
        [
            str(venv_bin / "checkov"),
            "--framework", "kubernetes",
            "-d", str(objects),
            "--skip-download",
            "--quiet",
            "--compact",
            "-o", "json",
            "--skip-check", ",".join(sorted(SKIPPED_CHECKS)),
        ],
        capture_output=True,
        text=True,
    )
    try:
        report = json.loads(result.stdout)
    except json.JSONDecodeError:
        fail(f"checkov printed no JSON (exit {result.returncode}): {result.stderr[-2000:]}")
        report = {}
    reports = report if isinstance(report, list) else [report]
    checkov_passed = checkov_failed = checkov_skipped = 0
    for part in reports:
        summary = part.get("summary", {})
        checkov_passed += summary.get("passed", 0)
        checkov_failed += summary.get("failed", 0)
        checkov_skipped += summary.get("skipped", 0)
        for check in part.get("results", {}).get("failed_checks", []):
            fail(f"checkov {check['check_id']} ({check['check_name']}) on {check['file_path']}")
    if checkov_passed == 0:
        fail("checkov ran no check")
    print(f"checkov: {checkov_passed} passed, {checkov_failed} failed, {checkov_skipped} skipped")

    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("k8s validation passed")


if __name__ == "__main__":
    main()
