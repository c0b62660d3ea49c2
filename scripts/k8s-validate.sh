#!/usr/bin/env bash
# Validates the Kubernetes rendering of every valid fixture with independent tools, strictly:
#   - kubernetes-validate --strict (Kubernetes 1.33 schemas) on every Pod, NetworkPolicy,
#     PersistentVolumeClaim and Service, and on each Sandbox's pod template wrapped in a v1 Pod
#     (the validator does not know the CRD); any failure or warning fails;
#   - each Sandbox against the pinned CRD's openAPIV3Schema (tests/k8s/crds/) with unknown
#     fields refused (python jsonschema, every object schema closed), and each warm pool's
#     SandboxTemplate, SandboxWarmPool and SandboxClaim (`--k8s-kind pool`) against theirs;
#   - checkov --framework kubernetes, with the skip list in scripts/k8s_validate.py.
# Each fixture is rendered with the environment its `# env:` lines declare, as in the tests.
# The tools live in a virtualenv (default target/k8s-venv, rebuilt when the pins change). When
# it cannot be built, the script fails if AGENTC_REQUIRE_DOCKER=1 (CI) and skips otherwise.
# Nothing here connects anywhere but PyPI (pip install); no cluster is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

PINS="kubernetes-validate==1.37.0 checkov==3.3.30 jsonschema==4.26.0"
VENV="${AGENTC_K8S_VENV:-target/k8s-venv}"

unavailable() {
  if [ "${AGENTC_REQUIRE_DOCKER:-}" = "1" ]; then
    echo "error: k8s validation: $1 (AGENTC_REQUIRE_DOCKER=1: not skipping)" >&2
    exit 1
  fi
  echo "k8s validation skipped: $1"
  exit 0
}

if [ ! -f "$VENV/.agentc-pins" ] || [ "$(cat "$VENV/.agentc-pins")" != "$PINS" ]; then
  command -v python3 >/dev/null 2>&1 || unavailable "python3 is not installed"
  echo "creating $VENV with $PINS"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || unavailable "python3 -m venv failed (install python3-venv)"
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install --quiet --disable-pip-version-check $PINS \
    || unavailable "pip install $PINS failed"
  echo "$PINS" > "$VENV/.agentc-pins"
fi

cargo build --quiet -p agentc
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
agentc="$target_dir/debug/agentc"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/rendered" "$out/workspace/project"

rendered=0
refused=0
for profile in fixtures/valid/*.toml; do
  name="$(basename "$profile" .toml)"
  launches=(run)
  if grep -A3 '^\[decant\]' "$profile" | grep -q '^enabled *= *true'; then
    launches+=(decant)
  fi
  # The environment a fixture declares in `# env: NAME=VALUE` lines, as the tests apply it.
  fixture_env=()
  while IFS= read -r assignment; do
    fixture_env+=("$assignment")
  done < <(sed -n 's/^# env: *//p' "$profile")
  for launch in "${launches[@]}"; do
    for kind in pod sandbox pool; do
      file="$out/rendered/$name--$launch--$kind.json"
      set +e
      env ${fixture_env[@]+"${fixture_env[@]}"} "$agentc" render "$profile" --kind "$launch" --backend k8s --format json \
        --k8s-kind "$kind" --namespace agents --workspace "$out/workspace/project" \
        --workspace-claim workspace --egress-proxy-image registry.example/agentc:ci \
        > "$file" 2> "$file.err"
      status=$?
      set -e
      case "$status" in
        0) rendered=$((rendered + 1)); rm -f "$file.err" ;;
        65) refused=$((refused + 1)); rm -f "$file" "$file.err" ;;
        *) echo "agentc render $profile --kind $launch --k8s-kind $kind: exit $status" >&2
           cat "$file.err" >&2; exit 1 ;;
      esac
    done
  done
done
echo "rendered $rendered launches ($refused refused by field)"
if [ "$rendered" -lt 50 ]; then
  echo "error: only $rendered renderings: the fixtures or the renderer changed" >&2
  exit 1
fi

"$VENV/bin/python" scripts/k8s_validate.py "$out" tests/k8s/crds/agents.x-k8s.io_sandboxes.yaml \
  "$VENV/bin"
