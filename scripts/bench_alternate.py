#!/usr/bin/env python3
"""Whole-process timings in alternation: each round runs every command once, in a rotated
order, so that no command gets the caches warmed by its own previous run while another one
gets them cold. Prints median, 10th and 90th percentile (ms) per command and the ratios of
the medians to the first command (the floor).

    scripts/bench_alternate.py RUNS 'LABEL=COMMAND ARGS...' ...

Each COMMAND is split with shlex and spawned directly (no shell); stdout and stderr go to
/dev/null; a failing command aborts the run.
"""

import shlex
import statistics
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    runs = int(sys.argv[1])
    commands = []
    for item in sys.argv[2:]:
        label, _, command = item.partition("=")
        commands.append((label, shlex.split(command)))
    samples = {label: [] for label, _ in commands}
    warmup = 5
    for round_index in range(runs + warmup):
        shift = round_index % len(commands)
        for label, argv in commands[shift:] + commands[:shift]:
            start = time.perf_counter_ns()
            status = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ).returncode
            elapsed = (time.perf_counter_ns() - start) / 1e6
            if status != 0:
                print(f"{label}: {argv} exited {status}", file=sys.stderr)
                return 1
            if round_index >= warmup:
                samples[label].append(elapsed)
    floor = statistics.median(samples[commands[0][0]])
    print(f"{'command':<40} {'median':>9} {'p10':>9} {'p90':>9} {'x floor':>8}")
    for label, _ in commands:
        values = sorted(samples[label])
        median = statistics.median(values)
        p10 = values[int(0.1 * (len(values) - 1))]
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"{label:<40} {median:9.3f} {p10:9.3f} {p90:9.3f} {median / floor:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
