#!/usr/bin/env python3
"""The Swift runtime's conformance lookups of a `serve` start, each (type, protocol) pair once
(the first, the one the runtime does not have cached: a scan of every conformance record of
every image), with the frames that asked for it: what callgrind's call graph cannot tell
apart, as every lookup goes through the same few runtime functions.

    Benchmarks/startup/conformance_lookups.py OUT BINARY RULES

Runs `BINARY serve RULES --port PORT --log-level warning` under gdb with a breakpoint on the
runtime's `swift_conformsToProtocolMaybeInstantiateSuperclasses`, connects once the port
accepts, waits a second (the accepted connection's pipeline is set up too), stops it, and
writes one line per lookup to OUT: `type : protocol <- caller | caller ...` (a type's name as
its nominal descriptor gives it, without generic arguments; `kindN` for metadata of another
kind: 0x303 an existential). Compare two binaries with `sed 's/ <- .*//' OUT | sort` and `comm`. Slow (a minute):
gdb stops at every lookup, cached ones too.
"""
import os
import socket
import subprocess
import sys
import time

try:
    import gdb
except ImportError:
    gdb = None

ENTRY = ("_ZL52swift_conformsToProtocolMaybeInstantiateSuperclassesPKN5swift14TargetMetadataINS_9InProcessEEE"
         "PKNS_24TargetProtocolDescriptorIS1_EEb")
RUNTIME_FRAME = ("swift_", "swift::", "(anonymous", "_gather", "std::", "tryCast", "?")


def install():
    """Under gdb: log each first lookup of a (type, protocol) pair."""
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    seen = set()
    out = open(os.environ["LOOKUPS_OUT"], "w")
    inferior = gdb.selected_inferior()

    def word(address, size=8, signed=False):
        return int.from_bytes(inferior.read_memory(address, size).tobytes(), "little", signed=signed)

    def text(address):
        return inferior.read_memory(address, 120).tobytes().split(b"\0")[0].decode(errors="replace")

    def relative(address):
        return address + word(address, 4, signed=True)

    def descriptor_name(descriptor):
        parts = []
        for _ in range(4):  # the type and up to three enclosing contexts
            parts.append(text(relative(descriptor + 8)))
            parent = word(descriptor + 4, 4, signed=True)
            if parent == 0 or parent & 1:
                break
            descriptor += 4 + parent
        return ".".join(reversed(parts))

    def type_name(metadata):
        kind = word(metadata)
        if kind in (0x200, 0x201, 0x202):  # struct, enum, optional
            return descriptor_name(word(metadata + 8))
        if kind == 0:  # a class (no Objective-C interop): its descriptor after the class's header
            return "class " + descriptor_name(word(metadata + 0x28))
        return f"kind{kind:x}"

    class Lookup(gdb.Breakpoint):
        def stop(self):
            # The result is returned through memory: rdi points at it, the arguments follow.
            metadata = int(gdb.parse_and_eval("$rsi"))
            protocol = int(gdb.parse_and_eval("$rdx"))
            if (metadata, protocol) in seen:
                return False
            seen.add((metadata, protocol))
            try:
                name = type_name(metadata)
            except gdb.error:
                name = f"?{metadata:x}"
            try:
                protocol_name = text(relative(protocol + 8))
            except gdb.error:
                protocol_name = "?"
            frames, frame = [], gdb.newest_frame().older()
            while frame is not None and len(frames) < 6:
                function = frame.name() or "?"
                if not function.startswith(RUNTIME_FRAME) and "__swift" not in function:
                    frames.append(function)
                frame = frame.older()
            out.write(f"{name} : {protocol_name} <- {' | '.join(frames)}\n")
            out.flush()
            return False

    Lookup(ENTRY, internal=True)
    gdb.execute("run")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out, binary, rules = sys.argv[1:]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    debugger = subprocess.Popen(
        ["gdb", "-q", "-batch", "-x", os.path.abspath(__file__), "--args",
         binary, "serve", rules, "--port", str(port), "--log-level", "warning"],
        env=dict(os.environ, LOOKUPS_OUT=out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and debugger.poll() is None:
        with socket.socket() as client:
            try:
                client.connect(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.2)
    time.sleep(1)
    # The server first (gdb's child), then gdb: a tracee whose tracer dies would run on.
    for task in os.listdir(f"/proc/{debugger.pid}/task"):
        with open(f"/proc/{debugger.pid}/task/{task}/children") as children:
            for child in children.read().split():
                os.kill(int(child), 9)
    debugger.kill()
    debugger.wait()
    with open(out) as lines:
        print(sum(1 for _ in lines), "lookups in", out)


if gdb is not None:
    install()
elif __name__ == "__main__":
    main()
