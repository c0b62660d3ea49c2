#!/usr/bin/env bash
# Creates the virtualenvs the Python package python/agentc-sandbox is tested in, one per
# openai-agents version it supports: the oldest (0.19.x, Strix 1.7.0's pin) and the newest
# (0.24.x). Each gets the SDK (with its Docker extra, for the benchmark's comparison), pytest,
# pytest-asyncio, strix-agent 1.7.0 without its dependencies (only its backend registry is used;
# it declares Python >= 3.12, which the registry does not need), and agentc-sandbox itself
# (editable). Idempotent: a venv whose stamp matches what it should hold is only refreshed with
# the package; delete the directory to start over. Only PyPI is contacted.
#
# Usage: scripts/setup-python.sh
# Environment:
#   AGENTC_VENVS  where the venvs go (default: <repo>/target/venvs): sdk019/, sdk024/
#   PYTHON        the interpreter to make them with (default: python3; 3.10 or later)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venvs=${AGENTC_VENVS:-$repo/target/venvs}
python=${PYTHON:-python3}
package=$repo/python/agentc-sandbox

# name -> the SDK requirement; the rest is common.
declare -A sdk=(
    [sdk019]="openai-agents[docker]==0.19.4"
    [sdk024]="openai-agents[docker]==0.24.0"
)
common=("pytest>=8,<10" "pytest-asyncio>=0.24,<2" "setuptools>=77")
strix="strix-agent==1.7.0"

"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || {
    echo "setup-python: $python is older than Python 3.10" >&2
    exit 1
}
mkdir -p "$venvs"

for name in sdk019 sdk024; do
    venv=$venvs/$name
    stamp="$("$python" -VV | head -1) | ${sdk[$name]} | ${common[*]} | $strix"
    if [[ ! -x $venv/bin/python || "$(cat "$venv/.agentc-stamp" 2>/dev/null)" != "$stamp" ]]; then
        echo "== $name: ${sdk[$name]}"
        rm -rf "$venv"
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip
        "$venv/bin/python" -m pip install -q "${sdk[$name]}" "${common[@]}"
        "$venv/bin/python" -m pip install -q --no-deps --ignore-requires-python "$strix"
        printf '%s\n' "$stamp" >"$venv/.agentc-stamp"
    fi
    # The package, every time (cheap): editable, without touching the pinned dependencies.
    "$venv/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$package"
    "$venv/bin/python" - <<'PY'
from importlib.metadata import version
import agentc_sandbox, strix.runtime.backends  # noqa: F401
print(f"   openai-agents {version('openai-agents')}, agentc-sandbox {version('agentc-sandbox')}, strix-agent {version('strix-agent')}")
PY
done
