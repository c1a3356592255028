#!/usr/bin/env bash
# Builds a decision log (docs/replay.md's record format, one record a line) from a dispatch
# run: each input line's request, the outcome `luahier dispatch` gave it, and the handling
# responder's key, read from the same dispatch run again with --trace path.
#
#   tools/make-decision-log.sh RULES.lua INPUT.jsonl [LUAHIER] > LOG.ndjson
#
# The input goes to dispatch on stdin, so an error request's `where` names `stdin:LINE`:
# replay the log with `--input-name stdin`. Records carry no revision (dispatch without
# --watch names none); replay ignores it anyway.
set -euo pipefail
RULES=${1:?usage: make-decision-log.sh RULES.lua INPUT.jsonl [LUAHIER]}
INPUT=${2:?usage: make-decision-log.sh RULES.lua INPUT.jsonl [LUAHIER]}
LUAHIER=${3:-luahier}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$LUAHIER" dispatch "$RULES" - < "$INPUT" > "$WORK/outcomes.jsonl" 2>/dev/null || true
"$LUAHIER" dispatch "$RULES" - --trace path < "$INPUT" > "$WORK/traced.jsonl" 2>/dev/null || true
python3 - "$INPUT" "$WORK/outcomes.jsonl" "$WORK/traced.jsonl" <<'PY'
import json, sys, datetime

def key(traced):
    """FILE#NODEPATH#N of the step that handled the line (the outcome's by and responder)."""
    by, responder = traced.get("by"), traced.get("responder")
    if by is None or responder is None:
        return None
    for step in traced.get("trace", []):
        if step.get("node") == by and step.get("responder") == responder and step.get("result") == "handled":
            file = responder.rsplit(":", 1)[0] if responder.rsplit(":", 1)[-1].isdigit() else responder
            return "%s#%s#%d" % (file, by, step["index"])
    return None

requests = open(sys.argv[1], "rb").read().split(b"\n")
out = sys.stdout.buffer
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
with open(sys.argv[2], "rb") as outcomes, open(sys.argv[3], "rb") as traced_lines:
    for outcome, traced_line in zip(outcomes, traced_lines):
        outcome = outcome.rstrip(b"\n")
        number = json.loads(outcome)["line"]
        request = requests[number - 1].rstrip(b"\r").strip()
        try:
            json.loads(request)
            request_member = b'"request":' + request
        except ValueError:
            text = request[:4096].decode("utf-8", "replace")
            request_member = b'"request_text":' + json.dumps(text).encode()
            if len(request) > 4096:
                request_member += b',"request_truncated":true'
        found = key(json.loads(traced_line))
        record = (b'{"v":1,"time":"' + now.encode() + b'","source":"dispatch","line":' + str(number).encode()
                  + b"," + request_member + b',"outcome":' + outcome
                  + (b',"responder_key":' + json.dumps(found).encode() if found else b"")
                  + b',"evaluation_ms":0}\n')
        out.write(record)
PY
