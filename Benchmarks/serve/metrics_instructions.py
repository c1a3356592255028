#!/usr/bin/env python3
"""Instructions (callgrind, inclusive) of the metrics' registration (MetricSeries' init, made
once the port is bound, or at the first scrape) and of N scrapes of /metrics
(MetricSeries.text, all N), in a fresh `luahier serve RULES --workers 1`.

    Benchmarks/serve/metrics_instructions.py LUAHIER RULES N

LUAHIER: a copy stripped of its DWARF (`strip --strip-debug -o COPY BIN`): valgrind 3.19
cannot read the C targets'. Prints the two counts.
"""
import os, re, signal, socket, subprocess, sys, tempfile, urllib.request

binary, rules, scrapes = sys.argv[1], sys.argv[2], int(sys.argv[3])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inclusive(scrapes):
    """Each function's inclusive instructions in one run: start, `scrapes` scrapes, SIGTERM."""
    port = free_port()
    out = tempfile.mktemp(prefix="callgrind.")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "serve", rules, "--workers", "1",
         "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # The "serving ... on" line comes after the registration.
    while True:
        line = server.stderr.readline()
        if "serving" in line:
            break
        if not line and server.poll() is not None:
            sys.exit("serve exited")
    for _ in range(scrapes):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read()
    server.send_signal(signal.SIGTERM)
    server.communicate()
    report = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                            capture_output=True, text=True).stdout
    os.unlink(out)
    costs = {}
    for line in report.splitlines():
        match = re.match(r"\s*([\d,]+)\s.*?(\$s\S+)", line)
        if match:
            costs[match.group(2)] = max(costs.get(match.group(2), 0), int(match.group(1).replace(",", "")))
    return costs


def largest(costs, part):
    """The largest inclusive cost among the functions whose mangled name holds `part` (an
    initializer may be inlined into its allocating entry, or specialized)."""
    return max((cost for name, cost in costs.items() if part in name), default=0)


costs = inclusive(scrapes)
print("MetricSeries init", largest(costs, "12MetricSeriesC4pool7printer"))
print(f"{scrapes} scrapes", largest(costs, "12MetricSeriesC4text5ready9shadowing"))
