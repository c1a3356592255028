#!/usr/bin/env bash
# By hand (not in CI): `luahier dispatch` as a stage of Apache Spark, checked against one
# dispatch run over the same input (docs/spark.md). Installs pyspark from PyPI if missing
# (Java 17 must be on the machine), packs RULES into a signed bundle (the executors get it and
# its public key with addFile), generates LINES requests with scripts/traffic.lua (one in
# 50,000 made invalid on purpose), then for 1 and 2 executors (Spark's local mode):
#   - offsets: mapPartitionsWithIndex with each partition's --line-offset: must equal the
#     single run byte for byte;
#   - pipe: RDD.pipe, one command for every partition: must equal it once `line` and the
#     line in an invalid line's `where` (which restart in each partition) are set aside.
# Prints each run's lines per second.
#
#   tools/spark-check.sh [LINES] [LUAHIER] [RULES]   (defaults: 1000000, .build/release/luahier,
#                                                   scripts/alerts.lua)
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${1:-1000000}
LUAHIER=$(realpath "${2:-.build/release/luahier}")
RULES=$(realpath "${3:-scripts/alerts.lua}")
python3 -c 'import pyspark' 2>/dev/null || pip install -q pyspark
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

"$LUAHIER" run scripts/traffic.lua "$LINES" 7 | awk 'NR % 50000 == 0 { print "not json"; next } { print }' > "$WORK/input.jsonl"
(cd "$WORK" && "$LUAHIER" bundle keygen rules >/dev/null)
"$LUAHIER" bundle build "$RULES" -o "$WORK/rules.bundle" >/dev/null
"$LUAHIER" bundle sign "$WORK/rules.bundle" --key "$WORK/rules.key" >/dev/null
start=$(date +%s.%N)
"$LUAHIER" dispatch "$WORK/rules.bundle" - --bundle-key "$WORK/rules.pub" --source input --invalid-ok \
  < "$WORK/input.jsonl" > "$WORK/single.jsonl" 2>/dev/null
end=$(date +%s.%N)
awk -v n="$LINES" -v a="$start" -v b="$end" 'BEGIN { printf "single dispatch: %d lines in %.2f s, %.0f lines/s\n", n, b - a, n / (b - a) }'

normalize() {   # `line` and the line of `where` set aside
  sed -E 's/^\{"line":[0-9]+,/{/; s/"where":"input:[0-9]+(:[0-9]+)?"/"where":"input"/' "$1"
}
status=0
for executors in 1 2; do
  for mode in offsets pipe; do
    out="$WORK/spark-$mode-$executors"
    figures=$(python3 tools/spark/dispatch_stage.py --luahier "$LUAHIER" --rules "$WORK/rules.bundle" \
      --bundle-key "$WORK/rules.pub" --input "$WORK/input.jsonl" \
      --output "$out" --executors "$executors" --mode "$mode" 2>"$WORK/spark.err" | tail -n 1) \
      || { cat "$WORK/spark.err" >&2; exit 1; }
    cat "$out"/part-* > "$out.jsonl"
    if [ "$mode" = offsets ]; then
      cmp -s "$WORK/single.jsonl" "$out.jsonl" && same="identical" || { same="DIFFERENT"; status=1; }
    else
      cmp -s <(normalize "$WORK/single.jsonl") <(normalize "$out.jsonl") && same="identical after line and where" || { same="DIFFERENT"; status=1; }
    fi
    echo "spark $mode, $executors executor(s): $figures; $(wc -l < "$out.jsonl") outcome lines, $same"
  done
done
exit $status
