#!/usr/bin/env bash
# Runs the tests of python/agentc-sandbox with pytest in every venv scripts/setup-python.sh
# made (openai-agents 0.19 and 0.24), against the built agentc binary. Exits non-zero when a
# run fails, when a venv is missing, and when pytest collects no test (its exit 5).
# With AGENTC_REQUIRE_DOCKER=1 the live tests fail instead of skipping when the binary or the
# Docker daemon is missing.
#
# Usage: scripts/test-python.sh [PYTEST ARGS...]
# Environment:
#   AGENTC_VENVS  where the venvs are (default: <repo>/target/venvs)
#   AGENTC_BIN    the agentc binary (default: <repo>/target/debug/agentc; cargo build -p agentc)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venvs=${AGENTC_VENVS:-$repo/target/venvs}
export AGENTC_BIN=${AGENTC_BIN:-$repo/target/debug/agentc}
if [[ ! -x $AGENTC_BIN ]]; then
    echo "test-python: no agentc binary at $AGENTC_BIN (cargo build -p agentc, or set AGENTC_BIN)" >&2
    exit 1
fi

status=0
for name in sdk019 sdk024; do
    venv=$venvs/$name
    if [[ ! -x $venv/bin/python ]]; then
        echo "test-python: no venv $venv (run scripts/setup-python.sh)" >&2
        status=1
        continue
    fi
    echo "== pytest in $name ($("$venv/bin/python" -c 'from importlib.metadata import version; print("openai-agents", version("openai-agents"))'))"
    set +e
    (cd "$repo/python/agentc-sandbox" && "$venv/bin/python" -m pytest -p no:cacheprovider -ra "$@")
    rc=$?
    set -e
    if [[ $rc == 5 ]]; then
        echo "test-python: pytest ran no test in $name" >&2
        status=1
    elif [[ $rc != 0 ]]; then
        echo "test-python: pytest failed in $name (exit $rc)" >&2
        status=1
    fi
done
exit $status
