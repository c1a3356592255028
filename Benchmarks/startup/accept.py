#!/usr/bin/env python3
"""Time from starting `luahier serve` to its port accepting a connection, side by side with
the whole of `lua5.4 empty.lua`, the runs interleaved so all see the same load.

    Benchmarks/startup/accept.py LUAHIER RULES EMPTY_LUA [RUNS]

Each run picks a free port, starts `LUAHIER serve RULES --port PORT --log-level warning`
(read without the argument parser), and the same with a `--` at the end (which only the
parser reads), polls connect() every 0.1 ms until the port accepts, then stops the server
(SIGTERM) and waits for it. Prints the median and mean of each and their ratio.
"""
import signal
import socket
import statistics
import subprocess
import sys
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepts(port):
    with socket.socket() as client:
        try:
            client.connect(("127.0.0.1", port))
            return True
        except OSError:
            return False


def serve_until_accepting(luahier, rules, tail=()):
    port = free_port()
    start = time.perf_counter()
    server = subprocess.Popen(
        [luahier, "serve", rules, "--port", str(port), "--log-level", "warning", *tail],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not accepts(port):
        if server.poll() is not None:
            sys.exit(f"serve exited with {server.returncode} before accepting on {port}")
        time.sleep(0.0001)
    elapsed = time.perf_counter() - start
    server.send_signal(signal.SIGTERM)
    server.wait()
    return elapsed


def lua_run(empty):
    start = time.perf_counter()
    subprocess.run(["lua5.4", empty], check=True)
    return time.perf_counter() - start


def report(name, times, reference):
    median, mean = statistics.median(times), statistics.mean(times)
    print(f"  {name:<44} median {median * 1000:6.2f} ms  mean {mean * 1000:6.2f} ms"
          f"  {median / statistics.median(reference):5.2f}x lua5.4 (median)")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    luahier, rules, empty = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    for _ in range(3):  # warm the page cache of both binaries
        lua_run(empty)
        serve_until_accepting(luahier, rules)
    lua, serve, parsed = [], [], []
    for _ in range(runs):
        lua.append(lua_run(empty))
        serve.append(serve_until_accepting(luahier, rules))
        parsed.append(serve_until_accepting(luahier, rules, ("--",)))
    report("lua5.4 empty.lua (start to exit)", lua, lua)
    report("luahier serve (start to accepting)", serve, lua)
    report("luahier serve ... -- (the parser)", parsed, lua)


if __name__ == "__main__":
    main()
