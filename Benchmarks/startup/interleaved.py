#!/usr/bin/env python3
"""Start-up of several commands measured in turn, one run of each per round, so that a
shared machine's load falls on all of them alike (hyperfine runs one command's runs after
another's). Wall time (median) and CPU time (user + system of the child, from wait4; mean),
each also as a ratio to the first command's.

    Benchmarks/startup/interleaved.py ROUNDS 'NAME=COMMAND ARGS...' ...

stdin, stdout and stderr of every command are /dev/null.
"""
import os
import shlex
import statistics
import sys
import time


def run_once(argv, null):
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=[
        (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)])
    _, _, usage = os.wait4(pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    commands = [(spec.split("=", 1)[0], shlex.split(spec.split("=", 1)[1])) for spec in sys.argv[2:]]
    null = os.open("/dev/null", os.O_RDWR)
    wall = {name: [] for name, _ in commands}
    cpu = {name: [] for name, _ in commands}
    for round_number in range(rounds + 3):
        for name, argv in commands:
            elapsed, used = run_once(argv, null)
            if round_number >= 3:  # the first rounds warm the page cache
                wall[name].append(elapsed)
                cpu[name].append(used)
    first = commands[0][0]
    wall_base, cpu_base = statistics.median(wall[first]), statistics.mean(cpu[first])
    print(f"  {'command':<44} {'wall':>9} {'vs first':>8}   {'cpu':>8} {'vs first':>8}")
    for name, _ in commands:
        median, used = statistics.median(wall[name]), statistics.mean(cpu[name])
        print(f"  {name:<44} {median * 1000:6.2f} ms {median / wall_base:7.2f}x   {used * 1000:5.2f} ms {used / cpu_base:7.2f}x")


if __name__ == "__main__":
    main()
