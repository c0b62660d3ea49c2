#!/usr/bin/env bash
# Times `agentc validate`, `render` and `explain` as a user runs them (hyperfine), and reports
# each one's peak memory (GNU time's maximum resident set size). The library-level costs are
# in `cargo bench -p agentc-conformance --bench render` (criterion).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p agentc
agentc=target/release/agentc
profile=fixtures/valid/claude-everything.toml
commands=(
  "$agentc validate $profile"
  "$agentc render $profile --backend cli --format shell"
  "$agentc render $profile --backend api --format json"
  "$agentc explain $profile"
)
hyperfine --warmup 10 --runs 200 --shell=none "${commands[@]}"
for command in "${commands[@]}"; do
  rss=$( { /usr/bin/time -f '%M' $command >/dev/null; } 2>&1 | tail -n 1 )
  printf '%-80s peak RSS %s KiB\n' "$command" "$rss"
done
