#!/usr/bin/env bash
# Benchmarks the egress proxy against a direct connection between the same two containers, on
# networks the benchmark creates (and removes) itself: no address beyond this machine.
#
# Usage: scripts/bench-egress.sh [RUNS]   (default 3; BENCH_REQUESTS=N requests per latency run)
#
# Each run builds the topology of crates/agentc/tests/egress_live.rs in release mode (the proxy
# image from the release agentc binary), then one client container on both the isolated and
# the outside network measures:
#   - latency: sequential HTTP GETs, a new connection each (Connection: close), straight to the
#     server and through the proxy (absolute-form forward, which resolves and checks every
#     time); p50/p90/p99 and the added p50;
#   - throughput: one TCP stream of 256 MiB from the server, direct and through a CONNECT
#     tunnel; the median of 5 each.
# Prints each run's figures, then the median over the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for run in $(seq 1 "$runs"); do
    echo "== run $run/$runs" >&2
    AGENTC_REQUIRE_DOCKER=1 cargo test -q --release -p agentc --test live -- \
        --ignored --exact egress_live::bench_egress --nocapture 2>/dev/null | grep '^BENCH ' | tee -a "$out"
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { grep "^BENCH $1 " "$out" | tr ' ' '\n' | sed -n "s/^$2=//p" | median; }

echo
echo "median of $runs runs:"
for key in direct_p50_ms proxy_p50_ms added_p50_ms direct_p99_ms proxy_p99_ms; do
    printf '  latency    %-14s %s\n' "$key" "$(field latency "$key")"
done
for key in direct_mib_s proxy_mib_s ratio_pct; do
    printf '  throughput %-14s %s\n' "$key" "$(field throughput "$key")"
done
