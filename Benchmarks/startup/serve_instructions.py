#!/usr/bin/env python3
"""Instructions (callgrind) of a `luahier serve` from its start until its port accepts a
connection, and its stop (SIGTERM) after that.

    Benchmarks/startup/serve_instructions.py OUT LUAHIER serve RULES --port PORT [WORDS...]

The word PORT is replaced by a free port; OUT is callgrind's output file (/dev/null: none).
Prints the instruction count.
"""
import signal, socket, subprocess, sys, time, re
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]
out, binary, args = sys.argv[1], sys.argv[2], sys.argv[3:]
port = free_port()
args = [str(port) if a == "PORT" else a for a in args]
p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary] + args,
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
while True:
    with socket.socket() as c:
        try:
            c.connect(("127.0.0.1", port)); break
        except OSError:
            if p.poll() is not None: sys.exit("exited: " + p.stderr.read()[-2000:])
            time.sleep(0.01)
p.send_signal(signal.SIGTERM)
err = p.communicate()[1]
m = re.search(r"refs:\s*([\d,]+)", err)
print(m.group(1) if m else err[-2000:])
