#!/usr/bin/env bash
# Two luahier binaries answer the same generated request lines (tools/request-lines.py: valid,
# refused and broken requests of every kind, against tools/request-lines-rules.lua), with and
# without traces and a memory cap; any answer that differs is printed. The check that a change
# to the line protocol changed no answer. Run by hand:
#   tools/compare-dispatch.sh NEW_BINARY OLD_BINARY [SEEDS] [LINES]
set -euo pipefail
cd "$(dirname "$0")/.."
new=$1 old=$2 seeds=${3:-4} lines=${4:-4000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
differ=0
for seed in $(seq 1 "$seeds"); do
  python3 tools/request-lines.py "$seed" "$lines" > "$work/in.jsonl"
  for options in "" "--trace path" "--trace full" "--max-memory 8M --jobs 2"; do
    # Tables print as their addresses, which differ from run to run.
    "$new" dispatch $options tools/request-lines-rules.lua "$work/in.jsonl" 2>/dev/null | sed -E 's/0x[0-9a-f]+/ADDR/g' > "$work/new" || true
    "$old" dispatch $options tools/request-lines-rules.lua "$work/in.jsonl" 2>/dev/null | sed -E 's/0x[0-9a-f]+/ADDR/g' > "$work/old" || true
    count=$(diff "$work/old" "$work/new" | grep -c '^<' || true)
    echo "seed $seed ${options:-(defaults)}: $(wc -l < "$work/new") answers, $count differ"
    [ "$count" -eq 0 ] || { diff "$work/old" "$work/new" | head -6; differ=1; }
  done
done
exit $differ
