#!/usr/bin/env python3
"""`serve` from its start until its port accepts, against the floor server, interleaved:
instructions (callgrind, `serve_instructions.py`) and wall time (`accept.py`'s
`serve_until_accepting`), one run of each binary per round.

    Benchmarks/startup/serve_beside_floor.py RULES ROUNDS NAME=BINARY...

Give the binaries stripped of DWARF (`strip --strip-debug -o COPY BIN`: valgrind 3.19 cannot
read the C targets'). Prints each run's instruction count, then per binary the median of the
counts, the median of the lower group (a run whose accepted connection's pipeline is set up
before the SIGTERM lands counts about 10M more, in every binary), the median wall time, and
each median against the first binary's, then the counts sorted (a binary whose runs all fell
in the upper group has no lower one: run more rounds).
"""
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from accept import serve_until_accepting  # noqa: E402


def instructions(binary, rules):
    out = subprocess.run(
        [sys.executable, os.path.join(here, "serve_instructions.py"), "/dev/null", binary,
         "serve", rules, "--port", "PORT", "--log-level", "warning"],
        check=True, capture_output=True, text=True).stdout.strip()
    return int(out.replace(",", ""))


def lower_group(counts):
    low = min(counts)
    return [c for c in counts if c < low + 5_000_000]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rules, rounds = sys.argv[1], int(sys.argv[2])
    binaries = [arg.split("=", 1) for arg in sys.argv[3:]]
    counts = {name: [] for name, _ in binaries}
    times = {name: [] for name, _ in binaries}
    for _ in range(3):  # warm the page cache
        for _, binary in binaries:
            serve_until_accepting(binary, rules)
    for _ in range(rounds):
        for name, binary in binaries:
            counts[name].append(instructions(binary, rules))
            print(f"  {name:<16} {counts[name][-1]:>12,}", flush=True)
        for _ in range(6):
            for name, binary in binaries:
                times[name].append(serve_until_accepting(binary, rules))
    first = binaries[0][0]
    base = statistics.median(counts[first]), statistics.median(lower_group(counts[first])), statistics.median(times[first])
    print(f"  {'':<16} {'median':>12} {'×':>5} {'lower group':>12} {'×':>5} {'wall':>9} {'×':>5}")
    for name, _ in binaries:
        median, low, wall = statistics.median(counts[name]), statistics.median(lower_group(counts[name])), statistics.median(times[name])
        print(f"  {name:<16} {median / 1e6:11.2f}M {median / base[0]:5.2f} {low / 1e6:11.2f}M {low / base[1]:5.2f}"
              f" {wall * 1000:7.2f}ms {wall / base[2]:5.2f}   counts: {' '.join(f'{c / 1e6:.2f}' for c in sorted(counts[name]))}")


if __name__ == "__main__":
    main()
