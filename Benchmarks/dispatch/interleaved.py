#!/usr/bin/env python3
"""The peer and luahier binaries on one input, interleaved, `dispatch --jobs 1` to a file:
the median and the best of ROUNDS wall times each, and each binary's ratio to the peer.

    Benchmarks/dispatch/interleaved.py INPUT ROUNDS BINARY...

INPUT from `lua5.4 Benchmarks/dispatch/make-input.lua 200000 alerts` (or `deep`). On a
shared machine a best-of (compare.sh) moves with the load; the medians of many interleaved
rounds move less.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

# A regular file, as compare.sh writes: a pipe or /dev/null is written in PIPE_BUF pieces.
OUTPUT = os.path.join(tempfile.gettempdir(), "interleaved.jsonl")

def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    source, rounds, binaries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    commands = {"peer": ["lua5.4", "Benchmarks/dispatch/peer.lua"]}
    for binary in binaries:
        commands[binary] = [binary, "dispatch", "scripts/alerts.lua", "--jobs", "1"]
    times = {name: [] for name in commands}
    for _ in range(rounds):
        for name, command in commands.items():
            with open(source) as given, open(OUTPUT, "w") as out:
                start = time.perf_counter()
                subprocess.run(command, stdin=given, stdout=out, stderr=subprocess.DEVNULL, check=True)
                times[name].append(time.perf_counter() - start)
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    peer_median, peer_best = statistics.median(times["peer"]), min(times["peer"])
    print(f"{rounds} rounds, load {load}; peer: median {peer_median:.3f} s, best {peer_best:.3f} s")
    for binary in binaries:
        median, best = statistics.median(times[binary]), min(times[binary])
        print(f"{binary}: median {median:.3f} s ({peer_median / median:.2f}x the peer), "
              f"best {best:.3f} s ({peer_best / best:.2f}x)")

if __name__ == "__main__":
    main()
