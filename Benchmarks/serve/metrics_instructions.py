#!/usr/bin/env python3
"""Instructions (callgrind, --toggle-collect) of the metrics' registration (MetricSeries' init,
made once the port is bound) and of N scrapes of /metrics (MetricSeries.text), in a fresh
`luahier serve RULES --workers 1`, each in a run of its own.

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


def instructions(toggle, scrapes):
    port = free_port()
    out = tempfile.mktemp(prefix="callgrind.")
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", f"--toggle-collect={toggle}",
         binary, "serve", rules, "--workers", "1", "--port", str(port)],
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
    err = server.communicate()[1]
    if os.path.exists(out):
        os.unlink(out)
    return int(re.search(r"refs:\s*([\d,]+)", err).group(1).replace(",", ""))


print("MetricSeries init", instructions("*12MetricSeriesC4pool7printer*tcfc", 0))
print(f"{scrapes} scrapes", instructions("*12MetricSeriesC4text5ready9shadowing*", scrapes))
